package io.locksmith.tests.torture;

import io.locksmith.LockOptions;
import io.locksmith.internal.SlotSemaphore;
import io.locksmith.tests.FaultyStore;
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
import java.util.Random;

/**
 * What one worker process does, as the runner hands it over in a properties file.
 *
 * @param uri the store URI, opened with {@code LockProvider.open} unless {@code factory} is set
 * @param factory the class name of a {@code LockProviderFactory} to open {@code uri} with, or empty
 * @param worker this process's number in the run
 * @param threads how many threads hammer the locks
 * @param names the lock names, the same list (and order) for every worker
 * @param operations how many operations each thread does at least (more while the fault schedule runs)
 * @param useLock whether to acquire with {@code lock()} instead of {@code tryLock(wait)}
 * @param acquireWait the wait of {@code tryLock}
 * @param criticalSection how long a thread sleeps between reading and writing the counter
 * @param lease the lease of {@link LockOptions}
 * @param renewInterval the renewal interval of {@link LockOptions}, or null for its default
 * @param operationTimeout the operation timeout of {@link LockOptions}
 * @param namespace the namespace of {@link LockOptions}
 * @param hangAfter how long one operation may take before the watchdog calls it hung
 * @param directory the run directory every worker shares
 * @param callFaultRate for worker 0 only: the share of its store calls (acquire, release, renew) that the store
 *     applies and whose answer is then lost, so the call fails with a timeout; 0 for none
 * @param primitive what the threads take: {@code lock} (the locks of {@code names}), {@code semaphore} (permits of
 *     the semaphore whose permit locks are {@code names}, in permit order), {@code readwrite} (the read and write
 *     locks of the read-write locks of {@code names}) or {@code leadership} (one candidacy per worker for the one
 *     name of {@code names}; thread 0 does the leader's work)
 * @param termOperations in a leadership run, after how many operations a leader relinquishes
 */
record WorkerSpec(String uri, String factory, int worker, int threads, List<String> names, int operations,
                  boolean useLock, Duration acquireWait, Duration criticalSection, Duration lease, Duration renewInterval,
                  Duration operationTimeout, String namespace, Duration hangAfter, Path directory,
                  double callFaultRate, String primitive, int termOperations) {

    static final String LOCK = "lock";
    static final String SEMAPHORE = "semaphore";
    static final String READ_WRITE = "readwrite";
    static final String LEADERSHIP = "leadership";

    WorkerSpec {
        names = List.copyOf(names);
    }

    /** The semaphore's name, from its first permit lock's. */
    String semaphoreName() {
        String first = names.get(0);
        return first.substring(0, first.lastIndexOf(SlotSemaphore.PERMIT_SEPARATOR));
    }

    Path history() {
        return historyOf(directory, worker);
    }

    static Path historyOf(Path directory, int worker) {
        return directory.resolve("worker-" + worker + ".history");
    }

    /** The file whose existence tells workers that the fault schedule is over. */
    static Path scheduleDone(Path directory) {
        return directory.resolve("schedule.done");
    }

    LockOptions options() {
        LockOptions.Builder b = LockOptions.builder().leaseTime(lease).operationTimeout(operationTimeout)
                .namespace(namespace);
        if (renewInterval != null) {
            b.renewInterval(renewInterval);
        }
        if (worker == 0 && callFaultRate > 0) {
            Random random = new Random(directory.toString().hashCode());
            b.storeWrapper(store -> new FaultyStore<>(store, operationTimeout).randomFaults(callFaultRate, random,
                    List.of(FaultyStore.Fault.APPLY_THEN_TIMEOUT), FaultyStore.Call.values()));
        }
        return b.build();
    }

    WorkerSpec forWorker(int number) {
        return new WorkerSpec(uri, factory, number, threads, names, operations, useLock, acquireWait, criticalSection, lease,
                renewInterval, operationTimeout, namespace, hangAfter, directory, callFaultRate, primitive,
                termOperations);
    }

    WorkerSpec withUri(String newUri) {
        return new WorkerSpec(newUri, factory, worker, threads, names, operations, useLock, acquireWait, criticalSection,
                lease, renewInterval, operationTimeout, namespace, hangAfter, directory, callFaultRate, primitive,
                termOperations);
    }

    void store(Path file) {
        Properties p = new Properties();
        p.setProperty("uri", uri);
        p.setProperty("factory", factory);
        p.setProperty("worker", Integer.toString(worker));
        p.setProperty("threads", Integer.toString(threads));
        p.setProperty("names", Integer.toString(names.size()));
        for (int i = 0; i < names.size(); i++) {
            p.setProperty("name." + i, names.get(i));
        }
        p.setProperty("operations", Integer.toString(operations));
        p.setProperty("useLock", Boolean.toString(useLock));
        p.setProperty("wait", acquireWait.toString());
        p.setProperty("criticalSection", criticalSection.toString());
        p.setProperty("lease", lease.toString());
        if (renewInterval != null) {
            p.setProperty("renewInterval", renewInterval.toString());
        }
        p.setProperty("operationTimeout", operationTimeout.toString());
        p.setProperty("namespace", namespace);
        p.setProperty("hangAfter", hangAfter.toString());
        p.setProperty("directory", directory.toAbsolutePath().toString());
        p.setProperty("callFaultRate", Double.toString(callFaultRate));
        p.setProperty("primitive", primitive);
        p.setProperty("termOperations", Integer.toString(termOperations));
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            p.store(out, "locksmith torture worker " + worker);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write " + file, e);
        }
    }

    static WorkerSpec load(Path file) {
        Properties p = new Properties();
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + file, e);
        }
        List<String> names = new ArrayList<>();
        int count = Integer.parseInt(required(p, "names"));
        for (int i = 0; i < count; i++) {
            names.add(required(p, "name." + i));
        }
        String renew = p.getProperty("renewInterval");
        return new WorkerSpec(required(p, "uri"), p.getProperty("factory", ""),
                Integer.parseInt(required(p, "worker")), Integer.parseInt(required(p, "threads")), names,
                Integer.parseInt(required(p, "operations")), Boolean.parseBoolean(required(p, "useLock")),
                Duration.parse(required(p, "wait")), Duration.parse(required(p, "criticalSection")),
                Duration.parse(required(p, "lease")), renew == null ? null : Duration.parse(renew),
                Duration.parse(required(p, "operationTimeout")), required(p, "namespace"),
                Duration.parse(required(p, "hangAfter")), Path.of(required(p, "directory")),
                Double.parseDouble(p.getProperty("callFaultRate", "0")), p.getProperty("primitive", LOCK),
                Integer.parseInt(p.getProperty("termOperations", "20")));
    }

    private static String required(Properties p, String key) {
        String value = p.getProperty(key);
        if (value == null) {
            throw new IllegalArgumentException("worker spec lacks '" + key + "'");
        }
        return value;
    }
}
