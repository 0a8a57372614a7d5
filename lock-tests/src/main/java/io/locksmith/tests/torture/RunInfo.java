package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * What the checker needs to know about a run besides its histories, kept in {@code run.properties} in the run
 * directory.
 *
 * @param backend the backend label for reports, such as {@code redis}
 * @param fault the fault label for reports, such as {@code none} or {@code client kill -9}
 * @param profile the torture profile the run was made in
 * @param processes how many worker processes were started at first (replacements come on top)
 * @param threads threads per worker process
 * @param names the lock names, indexed as in the histories
 * @param lease the lease of the workers' providers
 * @param renewInterval the renewal interval of the workers' providers
 */
record RunInfo(String backend, String fault, TortureProfile profile, int processes, int threads, List<String> names,
               Duration lease, Duration renewInterval) {

    static final String FILE = "run.properties";

    RunInfo {
        names = List.copyOf(names);
    }

    void store(Path directory) {
        Properties p = new Properties();
        p.setProperty("backend", backend);
        p.setProperty("fault", fault);
        p.setProperty("profile", profile.name());
        p.setProperty("processes", Integer.toString(processes));
        p.setProperty("threads", Integer.toString(threads));
        p.setProperty("names", Integer.toString(names.size()));
        for (int i = 0; i < names.size(); i++) {
            p.setProperty("name." + i, names.get(i));
        }
        p.setProperty("lease", lease.toString());
        p.setProperty("renewInterval", renewInterval.toString());
        try (Writer out = Files.newBufferedWriter(directory.resolve(FILE), StandardCharsets.UTF_8)) {
            p.store(out, "locksmith torture run");
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write " + directory.resolve(FILE), e);
        }
    }

    static RunInfo load(Path directory) {
        Path file = directory.resolve(FILE);
        Properties p = new Properties();
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + file + "; is " + directory + " a torture run directory?",
                    e);
        }
        List<String> names = new ArrayList<>();
        int count = Integer.parseInt(p.getProperty("names", "0"));
        for (int i = 0; i < count; i++) {
            names.add(p.getProperty("name." + i));
        }
        return new RunInfo(p.getProperty("backend", "?"), p.getProperty("fault", "?"),
                TortureProfile.valueOf(p.getProperty("profile", "SHORT")),
                Integer.parseInt(p.getProperty("processes", "0")), Integer.parseInt(p.getProperty("threads", "0")),
                names, Duration.parse(p.getProperty("lease", "PT0S")),
                Duration.parse(p.getProperty("renewInterval", "PT0S")));
    }
}
