package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a torture run directory by hand, in the formats the worker and runner write, so checker tests can feed the
 * checker exactly the history they mean. By default every hold is well-behaved (counter incremented, both fenced
 * writes accepted); a test then adds the one defect it checks for.
 */
final class SyntheticRun implements AutoCloseable {

    static final Duration LEASE = Duration.ofSeconds(1);

    private final Path directory;
    private final int threads;
    private final HistoryFile runner;
    private final Map<Integer, HistoryFile> workers = new HashMap<>();
    private final long[] counters;
    private final long[] highest;
    private final boolean[] written;

    SyntheticRun(Path directory, int threads, String... names) {
        this.directory = directory;
        this.threads = threads;
        new RunInfo("synthetic", "none", TortureProfile.SHORT, 2, threads, List.of(names), LEASE,
                LEASE.dividedBy(3)).store(directory);
        this.runner = HistoryFile.append(directory.resolve("runner.history"));
        this.counters = new long[names.length];
        this.highest = new long[names.length];
        this.written = new boolean[names.length];
    }

    /** The history of worker {@code id}, spawned (and started) at time {@code t} on first use. */
    HistoryFile worker(int id, long t) {
        return workers.computeIfAbsent(id, w -> {
            runner.spawned(t, w, 1000 + w);
            HistoryFile h = HistoryFile.append(WorkerSpec.historyOf(directory, w));
            h.start(t, 1000 + w, threads);
            return h;
        });
    }

    HistoryFile runner() {
        return runner;
    }

    /**
     * A hold that does everything right: acquired at {@code t1} (its call began 5 ns earlier), fenced write,
     * counter increment, fenced write, release at {@code released}, confirmed unlock.
     */
    void hold(int worker, int thread, int name, long t1, long released, long token) {
        openHold(worker, thread, name, t1, token);
        HistoryFile w = worker(worker, 0);
        w.releasing(thread, name, released);
        w.unlocked(thread, name, released + 1);
    }

    /** A hold that acquired, wrote and is still inside its critical section (no release recorded). */
    void openHold(int worker, int thread, int name, long t1, long token) {
        HistoryFile w = worker(worker, 0);
        w.acquired(thread, name, t1 - 5, t1, token);
        fence(name, t1 + 1, worker, thread, token);
        w.wrote(thread, name, t1 + 2, counters[name], counters[name] + 1);
        counters[name]++;
        fence(name, t1 + 3, worker, thread, token);
    }

    /** Submits {@code token} to the fenced resource of {@code name} the way the real one decides. */
    void fence(int name, long t, int worker, int thread, long token) {
        boolean accept = !written[name] || token >= highest[name];
        fenceLine(name, t, worker, thread, token, accept, written[name] ? Long.toString(highest[name]) : "-");
        if (accept) {
            written[name] = true;
            highest[name] = token;
        }
    }

    /** Appends a fenced resource log line as given, right or wrong. */
    void fenceLine(int name, long t, int worker, int thread, long token, boolean accepted, String loggedHighest) {
        String line = t + "\t" + worker + "\t" + thread + "\t" + token + "\t" + (accepted ? "A" : "R") + "\t"
                + loggedHighest + "\n";
        append(FencedFile.logOf(directory, name), line);
    }

    /** Overrides the counter of {@code name} as the next writer will read it. */
    void setCounter(int name, long value) {
        counters[name] = value;
    }

    /** Records DONE for every thread of {@code worker} and its normal exit. */
    void finish(int worker, long t) {
        HistoryFile w = worker(worker, 0);
        for (int thread = 0; thread < threads; thread++) {
            w.done(thread, t, 1);
        }
        w.end(t);
        runner.exited(t + 1, worker, 0);
    }

    /** Appends raw text to a worker's history, for torn lines. */
    void appendRaw(int worker, String text) {
        append(WorkerSpec.historyOf(directory, worker), text);
    }

    TortureReport check() {
        close();
        return TortureChecker.check(directory);
    }

    @Override
    public void close() {
        for (int n = 0; n < counters.length; n++) {
            try {
                Files.writeString(CounterFile.of(directory, n), String.format("%20d", counters[n]),
                        StandardCharsets.US_ASCII);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        List<HistoryFile> open = new ArrayList<>(workers.values());
        open.add(runner);
        open.forEach(HistoryFile::close);
        workers.clear();
    }

    private static void append(Path file, String text) {
        try {
            Files.writeString(file, text, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
