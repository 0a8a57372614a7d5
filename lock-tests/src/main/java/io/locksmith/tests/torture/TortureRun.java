package io.locksmith.tests.torture;

import io.locksmith.internal.SlotSemaphore;
import io.locksmith.spi.LockProviderFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A many-process torture run: K worker JVMs ({@link TortureWorker}), each with its own provider and T threads, hammer
 * a few lock names while a fault schedule runs; then {@link TortureChecker} reads their histories and the result is a
 * {@link TortureReport}.
 *
 * <pre>{@code
 * TortureReport report = TortureRun.builder("redis", redis.uri())
 *         .processes(3).threads(4).lockNames(3)
 *         .operationsPerThread(TortureProfile.current().pick(150, 28_000))
 *         .leaseTime(Duration.ofSeconds(2))
 *         .fault(Duration.ofSeconds(1), Fault.killClientHolding())
 *         .build()
 *         .run();
 * report.assertSafeUnderFaults();
 * }</pre>
 *
 * <p>How a run goes: the workers are started with the parent's class path ({@code java.class.path}, which under
 * Surefire may be a manifest-only jar; it works as a class path too) and each logs to {@code worker-N.log} in the run
 * directory. Once every worker is operating (has finished a first lock attempt: starting a JVM and opening a
 * provider can take a second or more), the faults run one after the other on a schedule thread, each at its offset
 * from that moment or as soon as the previous one is over; after each, the run waits (up to the recovery
 * timeout) until the workers acquire locks again: for a client fault, until another process acquired every name the
 * victim held. Workers keep going past their operation count while the schedule runs, so no fault finds them
 * finished. When the schedule is over and the workers have exited (or the run timeout struck, in which case
 * stragglers are resumed and killed and count as unfinished), the checker runs.
 *
 * <p>The run directory ({@code target/torture/<backend>-<fault>-<time>} unless set) keeps every history, log and
 * resource file for inspection. In the {@link TortureProfile#LONG long profile} the report is also appended as a JSON
 * line to {@code target/torture/results.jsonl}, from which {@link ReliabilityTable} makes the table of
 * {@code docs/reliability.md}.
 */
public final class TortureRun {

    private static final Logger LOG = LoggerFactory.getLogger(TortureRun.class);
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final Duration START_LIMIT = Duration.ofSeconds(60);
    private static final Duration EXIT_LIMIT = Duration.ofSeconds(15);

    private final Builder config;

    private TortureRun(Builder config) {
        this.config = config;
    }

    /**
     * A builder for a run against the store at {@code uri}, opened in each worker with
     * {@code LockProvider.open(uri, options)}.
     *
     * @param backend the backend label in reports, such as {@code redis} or {@code jdbc-postgres-lease}
     */
    public static Builder builder(String backend, String uri) {
        Objects.requireNonNull(uri, "uri");
        return builder(backend, () -> uri);
    }

    /**
     * A builder for a run whose workers each get the URI {@code uri} supplies when they start (a replacement worker
     * may get a different one, for instance after a store moved).
     */
    public static Builder builder(String backend, Supplier<String> uri) {
        return new Builder(backend, uri);
    }

    /**
     * Runs the workers and the fault schedule, checks the histories and returns the report. Does not assert
     * anything: see {@link TortureReport#assertClean()} and {@link TortureReport#assertSafeUnderFaults()}.
     *
     * @throws IllegalStateException if the run directory cannot be prepared or the thread is interrupted
     */
    public TortureReport run() {
        return new Execution(config).run();
    }

    /** Configures a {@link TortureRun}; every setting has a default fit for a short run. */
    public static final class Builder {
        private final String backend;
        private final Supplier<String> uri;
        private String factory = "";
        private String faultLabel;
        private int processes = 3;
        private double callFaultRate;
        private int threads = 4;
        private List<String> names = defaultNames(3);
        private String primitive = WorkerSpec.LOCK;
        private int termOperations = 20;
        private int operations = 100;
        private boolean useLock;
        private Duration wait = Duration.ofMillis(250);
        private Duration criticalSection = Duration.ofNanos(500_000);
        private Duration lease = Duration.ofSeconds(2);
        private Duration renewInterval;
        private Duration operationTimeout = Duration.ofSeconds(1);
        private String namespace = "torture-" + UUID.randomUUID().toString().substring(0, 8);
        private Duration hangAfter;
        private final List<Scheduled> faults = new ArrayList<>();
        private Duration recoveryTimeout;
        private Duration timeout = Duration.ofMinutes(10);
        private final List<String> jvmArgs = new ArrayList<>(List.of("-XX:+UseSerialGC", "-Xmx256m", "-Xss512k"));
        private Path directory;
        private Boolean keepFiles;
        private Path resultsFile;
        private TortureProfile profile = TortureProfile.current();

        private Builder(String backend, Supplier<String> uri) {
            this.backend = requireText(backend, "backend");
            this.uri = Objects.requireNonNull(uri, "uri");
        }

        /**
         * Opens the URI in the workers with this factory instead of {@code LockProvider.open}, for a backend that is
         * not registered as a service; it needs a no-argument constructor.
         */
        public Builder providerFactory(Class<? extends LockProviderFactory> factory) {
            this.factory = factory.getName();
            return this;
        }

        /** The fault label in reports; by default the names of the scheduled faults, or {@code none}. */
        public Builder faultLabel(String label) {
            this.faultLabel = requireText(label, "faultLabel");
            return this;
        }

        /**
         * Makes worker 0 a faulty client: this share of its store calls (acquire, release, renew) is applied by the
         * store and then answered by a timeout, at random; default 0. Its threads see {@code LockBackendException}
         * and go on like an application; the run must stay free of violations.
         */
        public Builder callsAppliedThenTimedOut(double rate) {
            if (!(rate >= 0 && rate < 1)) {
                throw new IllegalArgumentException("rate must be at least 0 and below 1, got " + rate);
            }
            this.callFaultRate = rate;
            return this;
        }

        /** How many worker processes to start; default 3. */
        public Builder processes(int processes) {
            this.processes = requireAtLeast(processes, 1, "processes");
            return this;
        }

        /** How many threads each worker runs; default 4. */
        public Builder threads(int threads) {
            this.threads = requireAtLeast(threads, 1, "threads");
            return this;
        }

        /** Use {@code count} lock names, {@code torture-0} … ; default 3. */
        public Builder lockNames(int count) {
            this.names = defaultNames(requireAtLeast(count, 1, "lockNames"));
            this.primitive = WorkerSpec.LOCK;
            return this;
        }

        /** Use these lock names. */
        public Builder lockNames(List<String> names) {
            if (names.isEmpty()) {
                throw new IllegalArgumentException("lockNames must not be empty");
            }
            this.names = List.copyOf(names);
            this.primitive = WorkerSpec.LOCK;
            return this;
        }

        /**
         * Take permits of the semaphore {@code name} with {@code permits} permits instead of locks: each thread's
         * operation is one permit ({@code tryAcquire(wait)}, or {@code acquire()} with {@link #useLock()}), and the
         * history records it under its permit lock, so every check of a lock run (no overlap, growing tokens, no lost
         * update, fenced writes) holds per permit, and no more than {@code permits} holds overlap.
         */
        public Builder semaphore(String name, int permits) {
            requireText(name, "semaphore");
            List<String> permitLocks = new ArrayList<>();
            for (int i = 0; i < requireAtLeast(permits, 1, "permits"); i++) {
                permitLocks.add(name + SlotSemaphore.PERMIT_SEPARATOR + i);
            }
            this.names = List.copyOf(permitLocks);
            this.primitive = WorkerSpec.SEMAPHORE;
            return this;
        }

        /**
         * Take the read-write locks of the names set so far ({@link #lockNames(int)}) instead of plain locks: two
         * operations in three (all but every third of each thread) take the read lock (read the counter, sleep for the critical section, read it again),
         * the others the write lock (the guarded operation of a lock run). The history records read holds apart, so
         * the checks allow read holds to overlap each other but nothing else, and require every read's fencing token
         * to be at least the last write's before it and every write's to exceed every hold's before it.
         */
        public Builder readWrite() {
            this.primitive = WorkerSpec.READ_WRITE;
            return this;
        }

        /**
         * Run leader election on {@code name} instead of taking locks: each worker keeps one candidacy
         * ({@code LockProvider.leadership}), and while it leads its thread 0 does the guarded operations with the
         * epoch as the fencing token, relinquishing after every {@code termOperations} of them so that leadership
         * moves between the workers. The history records each term as a hold of {@code name} from
         * {@code elected(epoch)} to {@code revoked(epoch, reason)} (a loss as a lost hold), so the checks of a lock
         * run hold per term: no two leaders at once, epochs growing, no lost update, no stale write accepted. Set
         * {@link #threads(int)} to 1.
         */
        public Builder leadership(String name, int termOperations) {
            this.names = List.of(requireText(name, "leadership"));
            this.primitive = WorkerSpec.LEADERSHIP;
            this.termOperations = requireAtLeast(termOperations, 1, "termOperations");
            return this;
        }

        /**
         * How many operations each thread does at least; default 100. Threads go on while the fault schedule runs.
         */
        public Builder operationsPerThread(int operations) {
            this.operations = requireAtLeast(operations, 1, "operationsPerThread");
            return this;
        }

        /** Acquire with {@code lock()} instead of {@code tryLock(wait)}; set {@link #hangAfter} to match. */
        public Builder useLock() {
            this.useLock = true;
            return this;
        }

        /** The wait of each {@code tryLock}; default 250 ms. */
        public Builder acquireWait(Duration wait) {
            this.wait = requirePositive(wait, "acquireWait");
            return this;
        }

        /** How long a thread sleeps between reading and writing the counter inside its hold; default 0.5 ms. */
        public Builder criticalSection(Duration criticalSection) {
            Objects.requireNonNull(criticalSection, "criticalSection");
            if (criticalSection.isNegative()) {
                throw new IllegalArgumentException("criticalSection must not be negative, got " + criticalSection);
            }
            this.criticalSection = criticalSection;
            return this;
        }

        /** The lease of the workers' providers; default 2 s. */
        public Builder leaseTime(Duration lease) {
            this.lease = requirePositive(lease, "leaseTime");
            return this;
        }

        /** The renewal interval of the workers' providers; default a third of the lease. */
        public Builder renewInterval(Duration renewInterval) {
            this.renewInterval = requirePositive(renewInterval, "renewInterval");
            return this;
        }

        /** The operation timeout of the workers' providers; default 1 s. */
        public Builder operationTimeout(Duration operationTimeout) {
            this.operationTimeout = requirePositive(operationTimeout, "operationTimeout");
            return this;
        }

        /** The namespace of the workers' providers; default {@code torture-} and 8 random hex digits. */
        public Builder namespace(String namespace) {
            this.namespace = requireText(namespace, "namespace");
            return this;
        }

        /**
         * How long one operation (acquire, critical section, unlock) may take before the worker's watchdog calls it
         * hung; default wait + critical section + lease + 3 × operation timeout + 5 s.
         */
        public Builder hangAfter(Duration hangAfter) {
            this.hangAfter = requirePositive(hangAfter, "hangAfter");
            return this;
        }

        /**
         * Injects {@code fault} {@code at} after every worker is operating (or when the previous fault is over, if
         * that is later).
         */
        public Builder fault(Duration at, Fault fault) {
            Objects.requireNonNull(at, "at");
            Objects.requireNonNull(fault, "fault");
            faults.add(new Scheduled(at, fault));
            return this;
        }

        /** Injects {@code fault} {@code times} times: first at {@code first}, then every {@code period}. */
        public Builder faults(Duration first, Duration period, int times, Fault fault) {
            requireAtLeast(times, 1, "times");
            for (int i = 0; i < times; i++) {
                fault(first.plus(period.multipliedBy(i)), fault);
            }
            return this;
        }

        /**
         * How long to wait after each fault for the workers to acquire again before going on; default 3 × lease +
         * 3 × operation timeout + 10 s. A fault not recovered from within it is reported as such.
         */
        public Builder recoveryTimeout(Duration recoveryTimeout) {
            this.recoveryTimeout = requirePositive(recoveryTimeout, "recoveryTimeout");
            return this;
        }

        /** The bound on the whole run; stragglers are killed and reported as unfinished; default 10 min. */
        public Builder timeout(Duration timeout) {
            this.timeout = requirePositive(timeout, "timeout");
            return this;
        }

        /** Adds JVM options for the workers (after the defaults {@code -XX:+UseSerialGC -Xmx256m -Xss512k}). */
        public Builder jvmArgs(String... args) {
            jvmArgs.addAll(List.of(args));
            return this;
        }

        /** Where the run's files go; by default a new directory under {@code target/torture}. */
        public Builder directory(Path directory) {
            this.directory = Objects.requireNonNull(directory, "directory");
            return this;
        }

        /**
         * Whether to keep the run directory after the check; by default kept in the short profile, and in the long
         * one only if the report lists violations (long histories are large).
         */
        public Builder keepFiles(boolean keep) {
            this.keepFiles = keep;
            return this;
        }

        /**
         * Appends the report as one JSON line to {@code file}; by default {@code target/torture/results.jsonl} in the
         * long profile and nothing in the short one.
         */
        public Builder resultsFile(Path file) {
            this.resultsFile = Objects.requireNonNull(file, "file");
            return this;
        }

        /** The profile to label the run with; default {@link TortureProfile#current()}. */
        public Builder profile(TortureProfile profile) {
            this.profile = Objects.requireNonNull(profile, "profile");
            return this;
        }

        /**
         * Checks the settings and makes the run.
         *
         * @throws IllegalArgumentException if the worker options are inconsistent (for instance a renewal interval
         *     not shorter than the lease), naming the bad value
         */
        public TortureRun build() {
            spec(0, Path.of(".")).options(); // validates the lock options as the workers will build them
            return new TortureRun(this);
        }

        WorkerSpec spec(int worker, Path runDirectory) {
            Duration hang = hangAfter != null ? hangAfter
                    : TortureWorker.defaultHangAfter(wait, criticalSection, lease, operationTimeout);
            return new WorkerSpec("", factory, worker, threads, names, operations, useLock, wait, criticalSection,
                    lease, renewInterval, operationTimeout, namespace, hang, runDirectory, callFaultRate, primitive, termOperations);
        }

        String faultLabel() {
            if (faultLabel != null) {
                return faultLabel;
            }
            Set<String> distinct = new LinkedHashSet<>();
            if (callFaultRate > 0) {
                distinct.add(Math.round(callFaultRate * 100) + " % of one client's calls applied, then timed out");
            }
            faults.forEach(s -> distinct.add(s.fault.name()));
            return distinct.isEmpty() ? "none" : String.join(" + ", distinct);
        }

        Duration effectiveRenewInterval() {
            return renewInterval != null ? renewInterval : lease.dividedBy(3);
        }

        Duration effectiveRecoveryTimeout() {
            return recoveryTimeout != null ? recoveryTimeout
                    : lease.multipliedBy(3).plus(operationTimeout.multipliedBy(3)).plusSeconds(10);
        }

        private static List<String> defaultNames(int count) {
            List<String> names = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                names.add("torture-" + i);
            }
            return names;
        }

        private static String requireText(String value, String what) {
            Objects.requireNonNull(value, what);
            if (value.isBlank()) {
                throw new IllegalArgumentException(what + " must not be blank");
            }
            return value;
        }

        private static int requireAtLeast(int value, int min, String what) {
            if (value < min) {
                throw new IllegalArgumentException(what + " must be at least " + min + ", got " + value);
            }
            return value;
        }

        private static Duration requirePositive(Duration value, String what) {
            Objects.requireNonNull(value, what);
            if (value.isZero() || value.isNegative()) {
                throw new IllegalArgumentException(what + " must be positive, got " + value);
            }
            return value;
        }
    }

    private record Scheduled(Duration at, Fault fault) {
    }

    /** A client-side event of a fault: a worker frozen or killed while it held {@code names}. */
    private record ClientEvent(Worker worker, long nanos, Set<Integer> names) {
    }

    /** One run in progress: owns the worker processes and is the {@link RunContext} the faults get. */
    private static final class Execution implements RunContext {
        private final Builder config;
        private final Path directory;
        private final List<Worker> workers = new CopyOnWriteArrayList<>();
        private final List<ClientEvent> clientEvents = new CopyOnWriteArrayList<>();
        private final String classPath = System.getProperty("java.class.path");
        private final Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        private HistoryFile runner;
        private int nextWorker;
        /** When the current fault began ({@link System#nanoTime()}). */
        private volatile long faultBegan;

        Execution(Builder config) {
            this.config = config;
            this.directory = config.directory != null ? config.directory : defaultDirectory(config);
        }

        TortureReport run() {
            try {
                Files.createDirectories(directory);
                try (Stream<Path> existing = Files.list(directory)) {
                    if (existing.findAny().isPresent()) {
                        throw new IllegalStateException("Torture run directory " + directory + " is not empty");
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("Cannot prepare the torture run directory " + directory, e);
            }
            new RunInfo(config.backend, config.faultLabel(), config.profile, config.processes, config.threads,
                    config.names, config.lease, config.effectiveRenewInterval()).store(directory);
            runner = HistoryFile.append(directory.resolve("runner.history"));
            Thread cleanup = new Thread(this::killAll, "torture-run-cleanup");
            Runtime.getRuntime().addShutdownHook(cleanup);
            long deadline = System.nanoTime() + config.timeout.toNanos();
            LOG.info("Torture run {} / {}: {} processes x {} threads on {} names, {} ops per thread, lease {}, "
                    + "{} faults; files in {}", config.backend, config.faultLabel(), config.processes,
                    config.threads, config.names.size(), config.operations, config.lease, config.faults.size(),
                    directory);
            try {
                for (int i = 0; i < config.processes; i++) {
                    spawn();
                }
                awaitStarted(Math.min(deadline, System.nanoTime() + START_LIMIT.toNanos()));
                Thread schedule = new Thread(() -> runSchedule(System.nanoTime()), "torture-fault-schedule");
                schedule.start();
                join(schedule, deadline);
                awaitWorkers(deadline);
                reapStragglers();
            } finally {
                Runtime.getRuntime().removeShutdownHook(cleanup);
                killAll();
                runner.close();
            }
            TortureReport report = TortureChecker.check(directory);
            LOG.info("Torture run {} / {} done: {}", config.backend, config.faultLabel(), report.summary());
            Path results = config.resultsFile != null ? config.resultsFile
                    : config.profile == TortureProfile.LONG ? defaultResultsFile() : null;
            if (results != null) {
                appendResult(results, report);
            }
            boolean keep = config.keepFiles != null ? config.keepFiles
                    : config.profile == TortureProfile.SHORT || !report.violations().isEmpty();
            if (!keep) {
                deleteDirectory();
            }
            return report;
        }

        private Worker spawn() {
            int id;
            synchronized (this) {
                id = nextWorker++;
            }
            WorkerSpec spec = config.spec(id, directory).withUri(config.uri.get());
            Path specFile = directory.resolve("worker-" + id + ".properties");
            spec.store(specFile);
            List<String> command = new ArrayList<>();
            command.add(java.toString());
            command.addAll(config.jvmArgs);
            command.add("-cp");
            command.add(classPath);
            command.add(TortureWorker.class.getName());
            command.add(specFile.toString());
            Process process;
            try {
                process = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("worker-" + id + ".log")
                                .toFile()))
                        .start();
            } catch (IOException e) {
                throw new UncheckedIOException("Cannot start torture worker " + id + " with " + java, e);
            }
            runner.spawned(System.nanoTime(), id, process.pid());
            Worker worker = new Worker(id, process, new HistoryTail(spec.history(), config.names.size()),
                    config.names);
            worker.exited = process.onExit().thenAccept(p -> runner.exited(System.nanoTime(), id, p.exitValue()));
            workers.add(worker);
            return worker;
        }

        private void awaitStarted(long deadline) {
            while (true) {
                boolean all = true;
                for (Worker w : workers) {
                    w.tail.update();
                    all &= w.tail.operating() || !w.process.isAlive();
                }
                if (all) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    LOG.warn("Torture run: not every worker was operating within {}; see the worker logs in {}",
                            START_LIMIT, directory);
                    return;
                }
                LockSupport.parkNanos(POLL_NANOS);
            }
        }

        private void runSchedule(long origin) {
            List<Scheduled> schedule = new ArrayList<>(config.faults);
            schedule.sort(Comparator.comparing(Scheduled::at));
            int seq = 0;
            try {
                for (Scheduled s : schedule) {
                    long due = origin + s.at.toNanos();
                    while (System.nanoTime() - due < 0) {
                        LockSupport.parkNanos(Math.min(due - System.nanoTime(), POLL_NANOS * 10));
                        if (Thread.interrupted()) {
                            return;
                        }
                    }
                    seq++;
                    String name = s.fault.name();
                    if (workers.stream().noneMatch(w -> w.process.isAlive())) {
                        runner.faultBegins(System.nanoTime(), seq, name);
                        runner.faultEnds(System.nanoTime(), seq, "skipped: no worker was running");
                        continue;
                    }
                    int firstEvent = clientEvents.size();
                    faultBegan = System.nanoTime();
                    runner.faultBegins(faultBegan, seq, name);
                    String outcome = "ok";
                    try {
                        s.fault.inject(this);
                    } catch (RuntimeException | AssertionError e) {
                        outcome = "failed: " + e;
                        LOG.warn("Torture run: fault '{}' failed", name, e);
                    }
                    long end = System.nanoTime();
                    runner.faultEnds(end, seq, outcome);
                    if (Thread.currentThread().isInterrupted()) {
                        return;
                    }
                    awaitRecovery(clientEvents.subList(firstEvent, clientEvents.size()), end);
                }
            } finally {
                for (Worker w : workers) {
                    if (w.stopped && w.process.isAlive()) {
                        LOG.warn("Torture run: a fault left {} stopped; resuming it", w);
                        try {
                            resume(w);
                        } catch (RuntimeException e) {
                            LOG.warn("Torture run: could not resume {}", w, e);
                        }
                    }
                }
                runner.scheduleDone(System.nanoTime());
                try {
                    Files.writeString(WorkerSpec.scheduleDone(directory), "done\n");
                } catch (IOException e) {
                    LOG.error("Torture run: cannot tell the workers that the schedule is over", e);
                }
            }
        }

        /** Waits until the workers acquired again after a fault; the checker measures how long it took. */
        private void awaitRecovery(List<ClientEvent> events, long end) {
            List<ClientEvent> holding = events.stream().filter(e -> !e.names.isEmpty()).toList();
            long deadline = System.nanoTime() + config.effectiveRecoveryTimeout().toNanos();
            while (System.nanoTime() - deadline < 0) {
                workers.forEach(w -> w.tail.update());
                boolean recovered = holding.isEmpty()
                        ? workers.stream().anyMatch(w -> w.tail.acquiredAnyAfter(end))
                        : holding.stream().allMatch(this::takenOver);
                if (recovered) {
                    return;
                }
                LockSupport.parkNanos(POLL_NANOS);
                if (Thread.currentThread().isInterrupted()) {
                    return;
                }
            }
            LOG.warn("Torture run: no recovery within {} after a fault", config.effectiveRecoveryTimeout());
        }

        /** Whether other workers acquired every name {@code e}'s worker held, after {@code e}; tails up to date. */
        private boolean takenOver(ClientEvent e) {
            return e.names.stream().allMatch(n -> workers.stream()
                    .anyMatch(w -> w != e.worker && w.tail.acquiredAfter(n, e.nanos)));
        }

        private void join(Thread thread, long deadline) {
            try {
                thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                if (thread.isAlive()) {
                    LOG.warn("Torture run: the fault schedule was still running at the run timeout {}", config.timeout);
                    thread.interrupt();
                    thread.join(EXIT_LIMIT.toMillis());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                thread.interrupt();
                throw new IllegalStateException("Interrupted while the torture run was going on", e);
            }
        }

        private void awaitWorkers(long deadline) {
            for (Worker w : workers) {
                long remaining = deadline - System.nanoTime();
                try {
                    if (remaining <= 0 || !w.process.waitFor(remaining, TimeUnit.NANOSECONDS)) {
                        return;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("Interrupted while waiting for the torture workers", e);
                }
            }
        }

        private void reapStragglers() {
            for (Worker w : workers) {
                if (w.process.isAlive()) {
                    LOG.warn("Torture run: worker {} (pid {}) was still running at the run timeout {}; killing it",
                            w.id, w.pid(), config.timeout);
                    runner.reaped(System.nanoTime(), w.id);
                    w.process.destroyForcibly();
                }
            }
            for (Worker w : workers) {
                try {
                    w.exited.get(EXIT_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    LOG.warn("Torture run: worker {} (pid {}) did not report its exit", w.id, w.pid());
                }
            }
        }

        private void killAll() {
            for (Worker w : workers) {
                w.process.destroyForcibly();
            }
        }

        // ---------------------------------------------------------------- RunContext

        @Override
        public List<WorkerProcess> workers() {
            return Collections.unmodifiableList(new ArrayList<>(workers));
        }

        @Override
        public WorkerProcess freezeHolder(Duration limit) {
            long deadline = System.nanoTime() + limit.toNanos();
            while (System.nanoTime() - deadline < 0) {
                List<Worker> candidates = new ArrayList<>(workers);
                Collections.shuffle(candidates, ThreadLocalRandom.current());
                for (Worker w : candidates) {
                    if (!w.process.isAlive() || w.stopped) {
                        continue;
                    }
                    w.tail.update();
                    if (w.tail.held().isEmpty()) {
                        continue;
                    }
                    Signals.stop(w.pid());
                    w.tail.update();
                    Set<Integer> held = w.tail.held();
                    // certainly frozen inside a critical section: a thread past its write may have taken its release
                    // time already, and its record would end the hold before the freeze
                    if (!w.tail.heldBeforeWrite().isEmpty()) {
                        w.stopped = true;
                        long now = System.nanoTime();
                        runner.stopped(now, w.id, indexes(held));
                        clientEvents.add(new ClientEvent(w, now, held));
                        return w;
                    }
                    // it released, or is about to, while we looked: let it go on, unrecorded (a stop of microseconds)
                    Signals.resume(w.pid());
                }
                LockSupport.parkNanos(POLL_NANOS / 2);
                if (Thread.currentThread().isInterrupted()) {
                    throw new IllegalStateException("Interrupted while looking for a worker that holds a lock");
                }
            }
            throw new IllegalStateException("No worker held a lock within " + limit);
        }

        @Override
        public void awaitTakeover(WorkerProcess worker) {
            Worker w = own(worker);
            ClientEvent freeze = null;
            for (ClientEvent e : clientEvents) {
                if (e.worker == w) {
                    freeze = e;
                }
            }
            if (!w.stopped || freeze == null || freeze.names.isEmpty()) {
                throw new IllegalStateException(w + " is not frozen while holding locks");
            }
            Duration limit = config.effectiveRecoveryTimeout();
            long deadline = System.nanoTime() + limit.toNanos();
            while (true) {
                workers.forEach(x -> x.tail.update());
                if (takenOver(freeze)) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("No other worker acquired the names " + indexes(freeze.names)
                            + " that " + w + " held within " + limit + " of its freeze");
                }
                LockSupport.parkNanos(POLL_NANOS);
                if (Thread.currentThread().isInterrupted()) {
                    throw new IllegalStateException("Interrupted while waiting for another worker to take over the"
                            + " locks of " + w);
                }
            }
        }

        @Override
        public void awaitFailedCall() {
            long since = faultBegan;
            Duration limit = config.effectiveRecoveryTimeout();
            long deadline = System.nanoTime() + limit.toNanos();
            while (true) {
                boolean failed = false;
                for (Worker w : workers) {
                    w.tail.update();
                    failed |= w.tail.failedAfter(since);
                }
                if (failed) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("No worker's call failed within " + limit + " of the fault");
                }
                LockSupport.parkNanos(POLL_NANOS);
                if (Thread.currentThread().isInterrupted()) {
                    throw new IllegalStateException("Interrupted while waiting for a worker's call to fail");
                }
            }
        }

        @Override
        public void stop(WorkerProcess worker) {
            Worker w = own(worker);
            Signals.stop(w.pid());
            w.stopped = true;
            w.tail.update();
            long now = System.nanoTime();
            Set<Integer> held = w.tail.held();
            runner.stopped(now, w.id, indexes(held));
            clientEvents.add(new ClientEvent(w, now, held));
        }

        @Override
        public void resume(WorkerProcess worker) {
            Worker w = own(worker);
            if (w.process.isAlive()) {
                Signals.resume(w.pid());
            }
            w.stopped = false;
            runner.continued(System.nanoTime(), w.id);
        }

        @Override
        public void kill(WorkerProcess worker) {
            Worker w = own(worker);
            w.tail.update();
            Set<Integer> held = w.tail.held();
            long now = System.nanoTime();
            runner.killed(now, w.id, indexes(held));
            clientEvents.add(new ClientEvent(w, now, held));
            w.process.destroyForcibly();
            try {
                if (!w.process.waitFor(EXIT_LIMIT.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("Worker " + w.id + " (pid " + w.pid() + ") did not die of SIGKILL"
                            + " within " + EXIT_LIMIT);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while killing worker " + w.id, e);
            }
            w.stopped = false;
        }

        @Override
        public WorkerProcess startWorker() {
            Worker w = spawn();
            awaitStarted(System.nanoTime() + START_LIMIT.toNanos());
            return w;
        }

        @Override
        public void sleep(Duration duration) {
            try {
                TimeUnit.NANOSECONDS.sleep(duration.toNanos());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while a fault slept", e);
            }
        }

        @Override
        public Duration leaseTime() {
            return config.lease;
        }

        @Override
        public Duration renewInterval() {
            return config.effectiveRenewInterval();
        }

        @Override
        public Duration operationTimeout() {
            return config.operationTimeout;
        }

        private Worker own(WorkerProcess worker) {
            if (worker instanceof Worker w && workers.contains(w)) {
                return w;
            }
            throw new IllegalArgumentException(worker + " is not a worker of this run");
        }

        private static String indexes(Set<Integer> names) {
            if (names.isEmpty()) {
                return "-";
            }
            StringBuilder b = new StringBuilder();
            for (int n : names) {
                b.append(b.length() == 0 ? "" : ",").append(n);
            }
            return b.toString();
        }

        private void appendResult(Path results, TortureReport report) {
            try {
                Path parent = results.toAbsolutePath().getParent();
                if (parent != null) {
                    Files.createDirectories(parent);
                }
                Files.writeString(results, report.toJson() + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
                LOG.info("Torture run result appended to {}", results);
            } catch (IOException e) {
                throw new UncheckedIOException("Cannot append the torture result to " + results, e);
            }
        }

        private void deleteDirectory() {
            try (Stream<Path> paths = Files.walk(directory)) {
                paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException | UncheckedIOException e) {
                LOG.warn("Torture run: could not delete {}", directory, e);
            }
        }

        private static Path moduleTarget() {
            return Path.of(System.getProperty("basedir", System.getProperty("user.dir")), "target", "torture");
        }

        private static Path defaultResultsFile() {
            return moduleTarget().resolve("results.jsonl");
        }

        private static Path defaultDirectory(Builder config) {
            String slug = (config.backend + "-" + config.faultLabel()).toLowerCase(Locale.ROOT)
                    .replaceAll("[^a-z0-9.]+", "-").replaceAll("(^-|-$)", "");
            String time = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss-SSS"));
            return moduleTarget().resolve(slug + "-" + time + "-" + UUID.randomUUID().toString().substring(0, 4));
        }
    }

    /** A worker process of a run. */
    private static final class Worker implements WorkerProcess {
        final int id;
        final Process process;
        final HistoryTail tail;
        final List<String> names;
        volatile boolean stopped;
        CompletableFuture<Void> exited;

        Worker(int id, Process process, HistoryTail tail, List<String> names) {
            this.id = id;
            this.process = process;
            this.tail = tail;
            this.names = names;
        }

        @Override
        public int id() {
            return id;
        }

        @Override
        public long pid() {
            return process.pid();
        }

        @Override
        public boolean isAlive() {
            return process.isAlive();
        }

        @Override
        public boolean isStopped() {
            return stopped;
        }

        @Override
        public Set<String> heldNames() {
            tail.update();
            Set<String> held = new TreeSet<>();
            tail.held().forEach(n -> held.add(names.get(n)));
            return held;
        }

        @Override
        public String toString() {
            return "torture worker " + id + " (pid " + process.pid() + (stopped ? ", stopped" : "") + ")";
        }
    }
}
