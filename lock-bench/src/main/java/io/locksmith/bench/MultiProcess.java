package io.locksmith.bench;

import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Several processes on one lock: for each subject, K worker JVMs ({@link MultiProcessWorker}) each open one
 * contender of it, as K deployed instances of an application would, and run T threads that loop {@code lock()},
 * hold H ms, {@code unlock()} on one shared name for S seconds from a common start. The coordinator gathers every
 * acquisition's wait ({@code System.nanoTime()} before {@code lock()} to after it returns) and each process's count
 * of acquisitions, and prints one Markdown table row per subject: handoffs per second, Jain's fairness index over
 * the processes, the wait percentiles, each process's share, and the breaches of mutual exclusion the workers'
 * shared check saw (see {@link MultiProcessWorker}).
 *
 * <p>The start is common to the processes: once every worker has opened its contender and taken the lock once, the
 * coordinator sends each a wall-clock start time 200 ms ahead, which every worker on the machine reads from the
 * same clock. Each worker then times its S seconds with its own {@code System.nanoTime()}.
 *
 * <p>Failures: a worker that throws prints its stack trace; the coordinator reports the subject as failed, stops
 * its other workers and exits non-zero once the remaining subjects have run. No worker outlives the coordinator:
 * it destroys them when a subject ends and in a shutdown hook, and a worker exits when its standard input closes
 * (the coordinator died) or when it runs far past its time.
 */
final class MultiProcess {

    /** Every subject whose clients can contend for one lock from several processes, in report order. */
    static final List<String> SUBJECTS = List.of(
            "redis-locksmith", "redis-locksmith-fifo", "redis-redisson", "redis-redisson-fenced", "redis-redisson-fair",
            "redis-spring-pubsub", "redis-spring-spin", "redlock-locksmith", "redlock-redisson",
            "zookeeper-locksmith", "zookeeper-curator",
            "mariadb-locksmith", "mariadb-locksmith-session", "mariadb-spring",
            "postgres-locksmith", "postgres-locksmith-session", "postgres-spring");

    /** How long the workers may take to start and open their contenders. */
    private static final long READY_LIMIT_SECONDS = 90;

    /** How far ahead of sending it the common start lies, so every worker has read it before. */
    private static final long START_DELAY_MILLIS = 200;

    /** Processes of workers still running, for the shutdown hook. */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(MultiProcess::kill),
                "multiprocess-workers-cleanup"));
    }

    private MultiProcess() {
    }

    /** What one run does: the subjects, K processes, T threads each, S seconds, a hold of H ms. */
    record Settings(List<String> subjects, int processes, int threads, int seconds, int holdMillis) {

        static final String USAGE = "--multiprocess SUBJECT[,SUBJECT...]|all [--processes K] [--threads T]"
                + " [--seconds S] [--hold-ms H]  (defaults K=4, T=2, S=15, H=1)";

        /** Parses the arguments that follow {@code --multiprocess}. */
        static Settings parse(String... args) {
            if (args.length == 0 || args[0].startsWith("--")) {
                throw new IllegalArgumentException("Expected the subjects first: " + USAGE);
            }
            List<String> subjects = args[0].equals("all") ? SUBJECTS : List.of(args[0].split(","));
            for (String subject : subjects) {
                if (!SUBJECTS.contains(subject)) {
                    throw new IllegalArgumentException(refusal(subject));
                }
            }
            Map<String, String> given = new LinkedHashMap<>();
            for (int i = 1; i < args.length; i += 2) {
                if (!args[i].startsWith("--") || i + 1 >= args.length) {
                    throw new IllegalArgumentException("Expected --option value pairs after the subjects, got '"
                            + args[i] + "': " + USAGE);
                }
                given.put(args[i].substring(2), args[i + 1]);
            }
            List<String> known = List.of("processes", "threads", "seconds", "hold-ms");
            given.keySet().stream().filter(k -> !known.contains(k)).findFirst().ifPresent(k -> {
                throw new IllegalArgumentException("Unknown option --" + k + ": " + USAGE);
            });
            return new Settings(List.copyOf(new LinkedHashSet<>(subjects)),
                    number(given, "processes", 4, 1, 64), number(given, "threads", 2, 1, 256),
                    number(given, "seconds", 15, 1, 3600), number(given, "hold-ms", 1, 0, 10_000));
        }

        private static int number(Map<String, String> given, String option, int fallback, int min, int max) {
            String text = given.get(option);
            if (text == null) {
                return fallback;
            }
            try {
                int value = Integer.parseInt(text);
                if (value >= min && value <= max) {
                    return value;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException("--" + option + " takes a whole number from " + min + " to " + max
                    + "; got '" + text + "'");
        }

        private static String refusal(String subject) {
            String why;
            if (subject.startsWith("local-")) {
                why = "the local:// store lives inside one JVM, so separate processes would not share its lock";
            } else if (subject.endsWith("-shedlock")) {
                why = "ShedLock has no blocking lock: it skips a task whose lock is taken instead of waiting";
            } else if (subject.contains("-floor")) {
                why = "the floors only time round trips and exclude nobody";
            } else {
                why = "no such subject";
            }
            return "Subject '" + subject + "' cannot run --multiprocess: " + why + ". Subjects: " + SUBJECTS
                    + " or all";
        }

        /** The stores the subjects need servers for. */
        Set<String> stores() {
            return subjects.stream().map(s -> s.substring(0, s.indexOf('-'))).collect(Collectors.toSet());
        }
    }

    /**
     * One subject's outcome: per process, its acquisitions; every counted acquisition's wait in nanoseconds,
     * sorted; the mutual-exclusion breaches seen; and the failure, if the subject did not run to the end.
     */
    record Result(String subject, Settings settings, long[] acquisitions, long[] waits, long breaches,
                  String firstBreach, String failure) {

        static Result failed(String subject, Settings settings, String failure) {
            return new Result(subject, settings, new long[0], new long[0], 0, "", failure);
        }

        /** True when every worker ran to its end and no two holders ever overlapped. */
        boolean passed() {
            return failure == null && breaches == 0;
        }

        long total() {
            return Arrays.stream(acquisitions).sum();
        }

        double handoffsPerSecond() {
            return (double) total() / settings.seconds();
        }

        /** Jain's fairness index over the processes' acquisitions: 1 when equal, 1/K when one process got all. */
        double jain() {
            return MultiProcess.jain(acquisitions);
        }

        /** The nearest-rank percentile of the waits, in nanoseconds. */
        long waitPercentile(double p) {
            if (waits.length == 0) {
                return 0;
            }
            int index = (int) Math.ceil(p / 100 * waits.length) - 1;
            return waits[Math.max(0, Math.min(waits.length - 1, index))];
        }

        double share(int process) {
            long total = total();
            return total == 0 ? 0 : 100.0 * acquisitions[process] / total;
        }
    }

    /** Jain's index of {@code x}: (Σx)² / (n·Σx²); 0 when nothing was counted. */
    static double jain(long[] x) {
        double sum = 0;
        double squares = 0;
        for (long v : x) {
            sum += v;
            squares += (double) v * v;
        }
        return squares == 0 ? 0 : sum * sum / (x.length * squares);
    }

    /** The table's header; {@link #row} writes its rows. */
    static final String HEADER = "| subject | processes × threads | hold ms | acquisitions | handoffs/s | Jain's index"
            + " | wait p50 µs | p99 µs | p99.9 µs | max µs | share per process % | exclusion breaches |\n"
            + "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|";

    /** Runs {@code BenchMain --multiprocess ARGS}; returns the exit status (0 only if every subject passed). */
    static int main(String[] args) throws Exception {
        Settings settings;
        try {
            settings = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            return 2;
        }
        List<Result> results = run(settings, System.out);
        List<Result> failed = results.stream().filter(r -> !r.passed()).toList();
        for (Result r : failed) {
            System.err.println("FAILED " + r.subject() + ": " + (r.failure() != null ? r.failure()
                    : r.breaches() + " breaches of mutual exclusion, first: " + r.firstBreach()));
        }
        return failed.isEmpty() ? 0 : 1;
    }

    /** Starts the servers the subjects need, measures each subject in turn and prints the table to {@code out}. */
    static List<Result> run(Settings settings, PrintStream out) throws Exception {
        List<Result> results = new ArrayList<>();
        try (Servers servers = Servers.start(settings.stores())) {
            out.printf(Locale.ROOT, "Several processes on one lock: %d processes x %d threads, critical section"
                            + " %d ms, %d s per subject; %s, %d cores%n%n", settings.processes(), settings.threads(),
                    settings.holdMillis(), settings.seconds(), Instant.now().truncatedTo(ChronoUnit.SECONDS),
                    Runtime.getRuntime().availableProcessors());
            out.println(HEADER);
            out.flush();
            for (String subject : settings.subjects()) {
                Result result = measure(subject, settings, servers.jvmArgs());
                results.add(result);
                out.println(row(result));
                out.flush();
            }
        }
        return results;
    }

    /** The subject's Markdown table row under {@link #HEADER}. */
    static String row(Result r) {
        Settings s = r.settings();
        String head = "| " + r.subject() + " | " + s.processes() + " × " + s.threads() + " | " + s.holdMillis()
                + " | ";
        if (r.failure() != null) {
            return head + "**failed**: " + r.failure().replace('|', '/').replace('\n', ' ')
                    + " | | | | | | | | |";
        }
        String shares = java.util.stream.IntStream.range(0, r.acquisitions().length)
                .mapToObj(i -> String.format(Locale.ROOT, "%.1f", r.share(i))).collect(Collectors.joining(" / "));
        return head + r.total() + " | " + Report.num(r.handoffsPerSecond()) + " | "
                + String.format(Locale.ROOT, "%.3f", r.jain()) + " | " + micros(r.waitPercentile(50)) + " | "
                + micros(r.waitPercentile(99)) + " | " + micros(r.waitPercentile(99.9)) + " | "
                + micros(r.waitPercentile(100)) + " | " + shares + " | "
                + (r.breaches() == 0 ? "0" : "**" + r.breaches() + "**") + " |";
    }

    private static String micros(long nanos) {
        return Report.num(nanos / 1e3);
    }

    /** Runs one subject's workers and gathers their results; never leaves a worker running. */
    static Result measure(String subject, Settings settings, List<String> serverArgs)
            throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("locksmith-multiprocess-");
        List<Worker> workers = new ArrayList<>();
        try {
            Path occupancy = dir.resolve("occupancy");
            Files.write(occupancy, new byte[Long.BYTES]);
            // a name of its own per run: a hold left by an earlier, killed run cannot skew this one
            String lockName = "bench-multiprocess-" + Long.toString(System.currentTimeMillis(), 36);
            BlockingQueue<Event> events = new LinkedBlockingQueue<>();
            for (int i = 0; i < settings.processes(); i++) {
                workers.add(Worker.start(i, subject, settings, lockName, occupancy, dir.resolve("result-" + i),
                        serverArgs, events));
            }
            String failure = await(workers, events, "READY", TimeUnit.SECONDS.toNanos(READY_LIMIT_SECONDS),
                    "open the subject and take the lock once");
            if (failure != null) {
                return Result.failed(subject, settings, failure);
            }
            long start = System.currentTimeMillis() + START_DELAY_MILLIS;
            for (Worker worker : workers) {
                worker.send("GO " + start);
            }
            failure = await(workers, events, "EXIT", TimeUnit.MILLISECONDS.toNanos(START_DELAY_MILLIS)
                    + TimeUnit.SECONDS.toNanos(settings.seconds() + MultiProcessWorker.FINISH_MARGIN_SECONDS),
                    "finish its " + settings.seconds() + " s and exit");
            if (failure != null) {
                return Result.failed(subject, settings, failure);
            }
            return read(subject, settings, workers);
        } finally {
            workers.forEach(Worker::stop);
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /**
     * Waits until every worker has sent {@code kind} (a worker's {@code EXIT} counts only with status 0); returns
     * null then, or what went wrong: a worker that failed or exited early, or the time running out.
     */
    private static String await(List<Worker> workers, BlockingQueue<Event> events, String kind, long limitNanos,
            String what) throws InterruptedException {
        Set<Integer> pending = new java.util.TreeSet<>();
        for (Worker worker : workers) {
            pending.add(worker.index);
        }
        long deadline = System.nanoTime() + limitNanos;
        while (!pending.isEmpty()) {
            Event event = events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (event == null) {
                return "worker(s) " + pending + " did not " + what + " within "
                        + TimeUnit.NANOSECONDS.toSeconds(limitNanos) + " s";
            }
            Worker worker = workers.get(event.worker());
            if (event.kind().equals("EXIT")) {
                if (event.status() != 0 || !kind.equals("EXIT")) {
                    worker.output.join(TimeUnit.SECONDS.toMillis(1)); // its last line, FAILED …, may be in flight
                    return "worker " + event.worker() + " exited with status " + event.status()
                            + (worker.lastFailure != null ? ": " + worker.lastFailure : "")
                            + " (its stack trace is above, on standard error)";
                }
            } else if (!event.kind().equals(kind)) {
                continue;
            }
            pending.remove(event.worker());
        }
        return null;
    }

    private static Result read(String subject, Settings settings, List<Worker> workers) throws IOException {
        long[] acquisitions = new long[workers.size()];
        List<long[]> waits = new ArrayList<>();
        long breaches = 0;
        String firstBreach = "";
        for (Worker worker : workers) {
            try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(
                    Files.newInputStream(worker.resultFile)))) {
                int threads = in.readInt();
                for (int t = 0; t < threads; t++) {
                    acquisitions[worker.index] += in.readLong();
                }
                long seen = in.readLong();
                String first = in.readUTF();
                if (seen > 0 && firstBreach.isEmpty()) {
                    firstBreach = first;
                }
                breaches += seen;
                long[] mine = new long[in.readInt()];
                for (int i = 0; i < mine.length; i++) {
                    mine[i] = in.readLong();
                }
                waits.add(mine);
            }
        }
        long[] all = waits.stream().flatMapToLong(Arrays::stream).sorted().toArray();
        return new Result(subject, settings, acquisitions, all, breaches, firstBreach, null);
    }

    /** What a worker said or did: a line it printed ({@code READY}, {@code DONE}) or its exit with its status. */
    private record Event(int worker, String kind, int status) {
    }

    /** One worker process, its standard streams pumped to the coordinator's. */
    private static final class Worker {
        final int index;
        final Process process;
        final Path resultFile;
        volatile String lastFailure;
        Thread output;

        private Worker(int index, Process process, Path resultFile) {
            this.index = index;
            this.process = process;
            this.resultFile = resultFile;
        }

        static Worker start(int index, String subject, Settings settings, String lockName, Path occupancy,
                Path resultFile, List<String> serverArgs, BlockingQueue<Event> events) throws IOException {
            List<String> command = new ArrayList<>();
            command.add(ProcessHandle.current().info().command()
                    .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
            command.addAll(serverArgs);
            if (Boolean.getBoolean(Subjects.SMOKE)) {
                command.add("-D" + Subjects.SMOKE + "=true");
            }
            // the workers' clients log their start-up at INFO; warnings and errors still show
            command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
            command.add("-cp");
            command.add(System.getProperty("java.class.path"));
            command.add(MultiProcessWorker.class.getName());
            command.addAll(List.of(subject, Integer.toString(index), Integer.toString(settings.threads()),
                    Integer.toString(settings.seconds()), Integer.toString(settings.holdMillis()), lockName,
                    occupancy.toString(), resultFile.toString()));
            Process process = new ProcessBuilder(command).start();
            LIVE.add(process);
            Worker worker = new Worker(index, process, resultFile);
            String prefix = "[" + subject + "#" + index + "] ";
            worker.output = pump(prefix + "stdout", process.getInputStream(), line -> {
                if (line.equals("READY") || line.equals("DONE")) {
                    events.add(new Event(index, line, 0));
                } else {
                    if (line.startsWith("FAILED ")) {
                        worker.lastFailure = line.substring("FAILED ".length());
                    }
                    System.err.println(prefix + line);
                }
            });
            pump(prefix + "stderr", process.getErrorStream(), line -> System.err.println(prefix + line));
            process.onExit().thenAccept(p -> {
                LIVE.remove(p);
                events.add(new Event(index, "EXIT", p.exitValue()));
            });
            return worker;
        }

        private static Thread pump(String name, InputStream stream, java.util.function.Consumer<String> sink) {
            Thread pump = new Thread(() -> {
                try (BufferedReader reader = new BufferedReader(new InputStreamReader(stream,
                        StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = reader.readLine()) != null) {
                        sink.accept(line);
                    }
                } catch (IOException closed) {
                    // the worker is gone
                }
            }, name);
            pump.setDaemon(true);
            pump.start();
            return pump;
        }

        void send(String line) throws IOException {
            OutputStream in = process.getOutputStream();
            in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            in.flush();
        }

        /** Ends the worker if it still runs, and waits for it. */
        void stop() {
            kill(process);
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static void kill(Process process) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
    }
}
