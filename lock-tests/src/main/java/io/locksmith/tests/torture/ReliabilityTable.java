package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns {@code results.jsonl} files of long torture runs into the table of {@code docs/reliability.md}: one row per
 * backend and fault, summed over runs (the recovery column is the maximum).
 *
 * <pre>
 * java -cp … io.locksmith.tests.torture.ReliabilityTable [--write docs/reliability.md] results.jsonl…
 * </pre>
 * Without {@code --write} the table goes to standard output; with it, the table replaces what stands between the
 * lines {@value #BEGIN} and {@value #END} of the given file.
 */
public final class ReliabilityTable {

    /** The line after which {@code --write} puts the table. */
    public static final String BEGIN = "<!-- reliability-table:begin -->";
    /** The line before which {@code --write} ends the table. */
    public static final String END = "<!-- reliability-table:end -->";
    /** The table's header and separator lines. */
    public static final String HEADER = "| Backend | Fault | Runs | Operations | Guarded increments | Overlaps "
            + "| Overlaps after loss | Lost updates | Non-monotonic tokens | Stale writes accepted "
            + "| Stale writes rejected | Unfinished ops | Faults (unrecovered) | Max time to recover |\n"
            + "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|";

    private ReliabilityTable() {
    }

    /**
     * Prints or writes the table.
     *
     * @param args {@code [--write FILE] RESULTS.jsonl…}
     */
    public static void main(String[] args) {
        Path target = null;
        List<Path> inputs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--write") && i + 1 < args.length) {
                target = Path.of(args[++i]);
            } else {
                inputs.add(Path.of(args[i]));
            }
        }
        if (inputs.isEmpty()) {
            System.err.println("usage: ReliabilityTable [--write docs/reliability.md] results.jsonl...");
            System.exit(2);
        }
        String table = table(inputs);
        if (target == null) {
            System.out.println(table);
        } else {
            write(target, table);
            System.out.println("Wrote the reliability table into " + target);
        }
    }

    /** The markdown table (header included) of every result line in {@code files}. */
    public static String table(List<Path> files) {
        Map<String, Aggregate> rows = new LinkedHashMap<>();
        for (Path file : files) {
            List<String> lines;
            try {
                lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException("Cannot read " + file, e);
            }
            for (String line : lines) {
                if (line.isBlank()) {
                    continue;
                }
                Map<String, Object> r = Json.parse(line);
                String backend = String.valueOf(r.get("backend"));
                String fault = String.valueOf(r.get("fault"));
                rows.computeIfAbsent(backend + "\u0000" + fault, k -> new Aggregate(backend, fault)).add(r);
            }
        }
        StringBuilder b = new StringBuilder(HEADER);
        rows.values().forEach(a -> b.append('\n').append(row(a)));
        return b.toString();
    }

    static String row(Aggregate a) {
        return "| " + a.backend + " | " + a.fault + " | " + a.runs + " | " + a.n("operations") + " | "
                + a.n("guardedIncrements") + " | " + a.n("overlaps") + " | " + a.n("overlapsAfterLoss") + " | "
                + a.n("lostUpdates") + " | " + a.n("nonMonotonicTokens") + " | " + a.n("staleWritesAccepted") + " | "
                + a.n("staleWritesRejected") + " | " + a.n("unfinishedOperations") + " | " + a.n("faults") + " ("
                + a.n("unrecoveredFaults") + ") | " + (a.maxRecoveryMillis < 0 ? "–" : a.maxRecoveryMillis + " ms")
                + " |";
    }

    private static void write(Path target, String table) {
        String text;
        try {
            text = Files.readString(target, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + target, e);
        }
        int begin = text.indexOf(BEGIN);
        int end = text.indexOf(END);
        if (begin < 0 || end < begin) {
            throw new IllegalArgumentException(target + " has no " + BEGIN + " … " + END + " section for the table");
        }
        String updated = text.substring(0, begin + BEGIN.length()) + "\n" + table + "\n" + text.substring(end);
        try {
            Files.writeString(target, updated, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write " + target, e);
        }
    }

    /** The sums over the runs of one backend and fault. */
    static final class Aggregate {
        final String backend;
        final String fault;
        final Map<String, Long> sums = new LinkedHashMap<>();
        int runs;
        long maxRecoveryMillis = -1;

        Aggregate(String backend, String fault) {
            this.backend = backend;
            this.fault = fault;
        }

        static Aggregate of(TortureReport report) {
            Aggregate a = new Aggregate(report.backend(), report.fault());
            a.add(Json.parse(report.toJson()));
            return a;
        }

        void add(Map<String, Object> result) {
            runs++;
            for (Map.Entry<String, Object> e : result.entrySet()) {
                if (e.getValue() instanceof Long v) {
                    if (e.getKey().equals("maxRecoveryMillis")) {
                        maxRecoveryMillis = Math.max(maxRecoveryMillis, v);
                    } else {
                        sums.merge(e.getKey(), v, Long::sum);
                    }
                }
            }
        }

        long n(String key) {
            return sums.getOrDefault(key, 0L);
        }
    }
}
