package io.locksmith.tests.torture;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedReadWriteLock;
import io.locksmith.DistributedSemaphore;
import io.locksmith.Leadership;
import io.locksmith.LeadershipListener;
import io.locksmith.LockBackendException;
import io.locksmith.LockLostException;
import io.locksmith.LockProvider;
import io.locksmith.Permit;
import io.locksmith.spi.LockProviderFactory;
import java.lang.reflect.Constructor;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One client process of a torture run, started by {@link TortureRun} in a JVM of its own:
 * {@code java -cp … io.locksmith.tests.torture.TortureWorker worker-N.properties}.
 *
 * <p>It opens one {@link LockProvider} and runs its threads, each looping over: pick a lock name at random,
 * {@code tryLock(wait)} (or {@code lock()}); inside the hold submit the fencing token to the name's fenced resource,
 * read the name's unguarded counter, sleep for the critical section, write the counter plus one, submit the token
 * again, then unlock. Every step is appended to the worker's history file as it happens (see {@link HistoryFile}), so
 * a worker killed with SIGKILL leaves a faithful record up to its death.
 *
 * <p>A watchdog thread ends the process with exit code 3, after recording {@code HANG} and printing every thread's
 * stack, if one operation takes longer than its bound. A pause of the whole process (SIGSTOP) does not count: when
 * the watchdog itself was held up for over a second, the operations in flight start their bound afresh.
 *
 * <p>Exit codes: 0 done, 1 a thread died of an unexpected error, 2 bad arguments or the provider could not be
 * opened, 3 an operation hung, 4 the runner's JVM died.
 */
public final class TortureWorker {

    private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long FROZEN_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long ERROR_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final WorkerSpec spec;
    private final HistoryFile history;
    private final AtomicLongArray operationStart;
    private final AtomicIntegerArray operationName;
    private volatile boolean scheduleDone;

    private TortureWorker(WorkerSpec spec, HistoryFile history) {
        this.spec = spec;
        this.history = history;
        this.operationStart = new AtomicLongArray(spec.threads());
        this.operationName = new AtomicIntegerArray(spec.threads());
    }

    /**
     * Runs one worker.
     *
     * @param args the path of the worker's properties file, written by {@link TortureRun}
     */
    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: java " + TortureWorker.class.getName() + " <worker.properties>");
            System.exit(2);
        }
        WorkerSpec spec = WorkerSpec.load(Path.of(args[0]));
        int code;
        try (HistoryFile history = HistoryFile.append(spec.history())) {
            code = new TortureWorker(spec, history).run();
        }
        System.exit(code);
    }

    private int run() {
        history.start(System.nanoTime(), ProcessHandle.current().pid(), spec.threads());
        LockProvider provider;
        try {
            provider = open(spec);
        } catch (RuntimeException | ReflectiveOperationException e) {
            history.error(-1, -1, System.nanoTime(), "open", e);
            e.printStackTrace();
            return 2;
        }
        int names = spec.names().size();
        DistributedLock[] locks = new DistributedLock[names];
        CounterFile[] counters = new CounterFile[names];
        FencedFile[] fences = new FencedFile[names];
        DistributedSemaphore semaphore = spec.primitive().equals(WorkerSpec.SEMAPHORE)
                ? provider.getSemaphore(spec.semaphoreName(), names) : null;
        boolean leadership = spec.primitive().equals(WorkerSpec.LEADERSHIP);
        DistributedLock[] readLocks = spec.primitive().equals(WorkerSpec.READ_WRITE) ? new DistributedLock[names]
                : null;
        for (int n = 0; n < names; n++) {
            if (readLocks != null) {
                DistributedReadWriteLock rw = provider.getReadWriteLock(spec.names().get(n));
                readLocks[n] = rw.readLock();
                locks[n] = rw.writeLock();
            } else {
                locks[n] = provider.getLock(spec.names().get(n));
            }
            counters[n] = CounterFile.open(spec.directory(), n);
            fences[n] = FencedFile.open(spec.directory(), n);
        }
        Thread watchdog = new Thread(this::watch, "torture-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        boolean[] failed = new boolean[1];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < spec.threads(); t++) {
            int thread = t;
            Thread worker = new Thread(() -> {
                try {
                    if (leadership) {
                        if (thread == 0) {
                            leaderLoop(thread, provider, counters[0], fences[0]);
                        } else {
                            history.done(thread, System.nanoTime(), 0); // one thread leads; the others idle
                        }
                    } else if (semaphore == null) {
                        loop(thread, locks, readLocks, counters, fences);
                    } else {
                        permitLoop(thread, semaphore, counters, fences);
                    }
                } catch (RuntimeException | Error e) {
                    failed[0] = true;
                    history.error(thread, -1, System.nanoTime(), "thread", e);
                    e.printStackTrace();
                }
            }, "torture-w" + spec.worker() + "-t" + t);
            threads.add(worker);
            worker.start();
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 1;
            }
        }
        provider.close();
        history.end(System.nanoTime());
        return failed[0] ? 1 : 0;
    }

    static LockProvider open(WorkerSpec spec) throws ReflectiveOperationException {
        if (spec.factory().isEmpty()) {
            return LockProvider.open(spec.uri(), spec.options());
        }
        Constructor<?> constructor = Class.forName(spec.factory()).getDeclaredConstructor();
        constructor.setAccessible(true);
        LockProviderFactory factory = (LockProviderFactory) constructor.newInstance();
        return factory.create(URI.create(spec.uri()), spec.options());
    }

    /**
     * The loop of a lock run, and of a read-write run ({@code readLocks} not null), where two operations in three (all
     * but every third) take the read lock of the name instead.
     */
    private void loop(int thread, DistributedLock[] locks, DistributedLock[] readLocks, CounterFile[] counters,
            FencedFile[] fences) {
        long waitNanos = spec.acquireWait().toNanos();
        long operations = 0;
        while (operations < spec.operations() || !scheduleDone) {
            operations++;
            int name = ThreadLocalRandom.current().nextInt(locks.length);
            boolean reads = readLocks != null && operations % 3 != 0;
            DistributedLock lock = reads ? readLocks[name] : locks[name];
            long t0 = System.nanoTime();
            operationName.set(thread, name);
            operationStart.set(thread, t0);
            boolean acquired;
            try {
                if (spec.useLock()) {
                    lock.lock();
                    acquired = true;
                } else {
                    acquired = lock.tryLock(waitNanos, TimeUnit.NANOSECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            } catch (RuntimeException e) {
                history.error(thread, name, System.nanoTime(), "acquire", e);
                operationStart.set(thread, 0);
                LockSupport.parkNanos(ERROR_BACKOFF_NANOS);
                continue;
            }
            long t1 = System.nanoTime();
            if (!acquired) {
                history.busy(thread, name, t0, t1);
                operationStart.set(thread, 0);
                continue;
            }
            int held = name;
            if (reads) {
                reading(thread, name, t0, t1, lock, counters[name]);
            } else {
                guarded(thread, name, t0, t1, lock::fencingToken, () -> unlock(thread, held, lock), counters[name],
                        fences[name]);
            }
        }
        history.done(thread, System.nanoTime(), operations);
    }

    /**
     * One read hold, from its grant: record it as shared, read the counter before and after the critical section's
     * sleep (a writer inside the hold would change it), release. Readers do not write the fenced resource.
     */
    private void reading(int thread, int name, long t0, long t1, DistributedLock lock, CounterFile counter) {
        long fencing;
        try {
            fencing = lock.fencingToken();
        } catch (LockLostException e) {
            history.lost(thread, name, System.nanoTime(), "token", e);
            unlock(thread, name, lock);
            operationStart.set(thread, 0);
            return;
        }
        history.acquiredShared(thread, name, t0, t1, fencing);
        try {
            long first = counter.read();
            long sleepNanos = spec.criticalSection().toNanos();
            if (sleepNanos > 0) {
                LockSupport.parkNanos(sleepNanos);
            }
            history.read(thread, name, System.nanoTime(), first, counter.read());
        } catch (RuntimeException e) {
            history.error(thread, name, System.nanoTime(), "critical-section", e);
        } finally {
            history.releasing(thread, name, System.nanoTime());
            unlock(thread, name, lock);
            operationStart.set(thread, 0);
        }
    }

    /** One hold, from its grant: record it, do the guarded operation ({@link #critical}), release. */
    private void guarded(int thread, int name, long t0, long t1, java.util.function.LongSupplier token,
            Runnable release, CounterFile counter, FencedFile fence) {
        long fencing;
        try {
            fencing = token.getAsLong();
        } catch (LockLostException e) {
            history.lost(thread, name, System.nanoTime(), "token", e);
            release.run();
            operationStart.set(thread, 0);
            return;
        }
        history.acquired(thread, name, t0, t1, fencing);
        try {
            critical(thread, name, fencing, counter, fence);
        } catch (RuntimeException e) {
            history.error(thread, name, System.nanoTime(), "critical-section", e);
        } finally {
            history.releasing(thread, name, System.nanoTime());
            release.run();
            operationStart.set(thread, 0);
        }
    }

    /**
     * The loop of a semaphore run: each operation takes one permit, and records it under its permit lock's name, so
     * the history reads as a lock run's over the permit locks.
     */
    private void permitLoop(int thread, DistributedSemaphore semaphore, CounterFile[] counters, FencedFile[] fences) {
        Duration wait = spec.acquireWait();
        long operations = 0;
        while (operations < spec.operations() || !scheduleDone) {
            operations++;
            // until a permit is granted, the operation is named after a permit lock picked at random
            int name = ThreadLocalRandom.current().nextInt(spec.names().size());
            long t0 = System.nanoTime();
            operationName.set(thread, name);
            operationStart.set(thread, t0);
            Permit permit;
            try {
                permit = spec.useLock() ? semaphore.acquire() : semaphore.tryAcquire(wait).orElse(null);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            } catch (RuntimeException e) {
                history.error(thread, name, System.nanoTime(), "acquire", e);
                operationStart.set(thread, 0);
                LockSupport.parkNanos(ERROR_BACKOFF_NANOS);
                continue;
            }
            long t1 = System.nanoTime();
            if (permit == null) {
                history.busy(thread, name, t0, t1);
                operationStart.set(thread, 0);
                continue;
            }
            name = spec.names().indexOf(permit.lockName());
            if (name < 0) {
                throw new IllegalStateException("permit of an unknown permit lock: " + permit);
            }
            operationName.set(thread, name);
            int held = name;
            guarded(thread, name, t0, t1, permit::fencingToken, () -> giveBack(thread, held, permit), counters[name],
                    fences[name]);
        }
        history.done(thread, System.nanoTime(), operations);
    }

    /**
     * The loop of a leadership run: this process's candidacy records each term as a hold of name 0, from
     * {@code elected(epoch)} to {@code revoked(epoch, reason)}; while it leads, this thread does guarded operations
     * with the epoch as the fencing token, and relinquishes after every {@code termOperations} of them. Like an
     * application that stops its leader's work before {@code revoked} returns, the listener waits for an operation
     * in flight.
     */
    private void leaderLoop(int thread, LockProvider provider, CounterFile counter, FencedFile fence) {
        AtomicLong leading = new AtomicLong(); // the epoch while this process leads, else 0
        ReentrantLock work = new ReentrantLock();
        // set by a step-down's revoked(): the caller of relinquish()/close() records how the give-back went
        AtomicBoolean givingBack = new AtomicBoolean();
        LeadershipListener listener = new LeadershipListener() {
            @Override
            public void elected(long epoch) {
                long t = System.nanoTime();
                history.acquired(thread, 0, t, t, epoch);
                leading.set(epoch);
            }

            @Override
            public void revoked(long epoch, Reason reason) {
                work.lock();
                try {
                    leading.set(0);
                    long t = System.nanoTime();
                    history.releasing(thread, 0, t);
                    if (reason == Reason.LOST) {
                        history.lost(thread, 0, t, "revoked",
                                new LockLostException("leadership of epoch " + epoch + " was lost"));
                    } else {
                        givingBack.set(true);
                    }
                } finally {
                    work.unlock();
                }
            }
        };
        long operations = 0;
        long inTerm = 0;
        Leadership leadership = provider.leadership(spec.names().get(0), listener);
        try {
            while (operations < spec.operations() || !scheduleDone) {
                long epoch = leading.get();
                if (epoch == 0) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                    continue;
                }
                work.lock();
                try {
                    if (leading.get() != epoch) {
                        continue;
                    }
                    long t0 = System.nanoTime();
                    operationName.set(thread, 0);
                    operationStart.set(thread, t0);
                    // under the work lock, which revoked() needs to take its release time: from this record to the
                    // write's, a stopped process is certainly inside the term (what freezeHolder looks for)
                    history.critical(thread, 0, t0);
                    critical(thread, 0, epoch, counter, fence);
                    operations++;
                    inTerm++;
                } catch (RuntimeException e) {
                    history.error(thread, 0, System.nanoTime(), "critical-section", e);
                } finally {
                    operationStart.set(thread, 0);
                    work.unlock();
                }
                if (inTerm >= spec.termOperations()) {
                    inTerm = 0;
                    stepDown(thread, leadership::relinquish, givingBack);
                }
            }
        } finally {
            stepDown(thread, leadership::close, givingBack);
        }
        history.done(thread, System.nanoTime(), operations);
    }

    /**
     * Relinquishes or closes a leadership and records, for a term it ended, whether the store confirmed the term to
     * its end: the give-back may find the hold lost (a pause past the lease the watchdog did not notice in time).
     */
    private void stepDown(int thread, Runnable stepDown, AtomicBoolean givingBack) {
        try {
            stepDown.run();
            if (givingBack.getAndSet(false)) {
                history.unlocked(thread, 0, System.nanoTime());
            }
        } catch (LockLostException e) {
            givingBack.set(false);
            history.lost(thread, 0, System.nanoTime(), "unlock", e);
        } catch (LockBackendException e) {
            givingBack.set(false);
            history.error(thread, 0, System.nanoTime(), "unlock", e);
        }
    }

    /**
     * The guarded operation: submit the fencing token, read the unguarded counter, sleep for the critical section,
     * write the counter plus one, submit the token again.
     */
    private void critical(int thread, int name, long token, CounterFile counter, FencedFile fence) {
        fence.submit(token, spec.worker(), thread);
        long read = counter.read();
        long sleepNanos = spec.criticalSection().toNanos();
        if (sleepNanos > 0) {
            LockSupport.parkNanos(sleepNanos);
        }
        counter.write(read + 1);
        history.wrote(thread, name, System.nanoTime(), read, read + 1);
        fence.submit(token, spec.worker(), thread);
    }

    /** {@link #unlock} for a permit: closing again retries a release the store could not be told of. */
    private void giveBack(int thread, int name, Permit permit) {
        release(thread, name, permit::close);
    }

    /**
     * Unlocks like a careful application: a release that failed for the store's sake keeps the hold, so it is
     * retried until it goes through or the hold is reported lost (which happens within the lease, since the renewer
     * cannot renew either); the watchdog bounds the whole.
     */
    private void unlock(int thread, int name, DistributedLock lock) {
        release(thread, name, lock::unlock);
    }

    private void release(int thread, int name, Runnable release) {
        while (true) {
            try {
                release.run();
                history.unlocked(thread, name, System.nanoTime());
                return;
            } catch (LockLostException e) {
                // legitimate under faults: the hold ended in the store before this owner could release it
                history.lost(thread, name, System.nanoTime(), "unlock", e);
                return;
            } catch (LockBackendException e) {
                history.error(thread, name, System.nanoTime(), "unlock", e);
                LockSupport.parkNanos(ERROR_BACKOFF_NANOS);
            } catch (RuntimeException e) {
                history.error(thread, name, System.nanoTime(), "unlock", e);
                return;
            }
        }
    }

    private void watch() {
        long bound = spec.hangAfter().toNanos();
        Path done = WorkerSpec.scheduleDone(spec.directory());
        ProcessHandle parent = ProcessHandle.current().parent().orElse(null);
        long last = System.nanoTime();
        while (true) {
            LockSupport.parkNanos(TICK_NANOS);
            long now = System.nanoTime();
            if (now - last > FROZEN_NANOS) {
                // the whole process was stopped (SIGSTOP) or starved: restart the clocks of running operations
                for (int t = 0; t < operationStart.length(); t++) {
                    long start = operationStart.get(t);
                    if (start != 0) {
                        operationStart.compareAndSet(t, start, now);
                    }
                }
            }
            last = now;
            if (!scheduleDone && Files.exists(done)) {
                scheduleDone = true;
            }
            if (parent != null && !parent.isAlive()) {
                // the run is gone (its JVM was killed): nobody will end the schedule or read the history
                System.err.println("torture worker " + spec.worker() + ": the runner (pid " + parent.pid()
                        + ") is gone; exiting");
                Runtime.getRuntime().halt(4);
            }
            boolean hung = false;
            for (int t = 0; t < operationStart.length(); t++) {
                long start = operationStart.get(t);
                if (start != 0 && now - start > bound) {
                    hung = true;
                    history.hang(t, now, "operation on '" + spec.names().get(operationName.get(t)) + "' running for "
                            + TimeUnit.NANOSECONDS.toMillis(now - start) + " ms, bound " + spec.hangAfter().toMillis()
                            + " ms");
                }
            }
            if (hung) {
                dumpThreads();
                Runtime.getRuntime().halt(3);
            }
        }
    }

    private void dumpThreads() {
        StringBuilder b = new StringBuilder("torture worker ").append(spec.worker())
                .append(": an operation exceeded ").append(spec.hangAfter()).append("; threads:\n");
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            b.append('"').append(e.getKey().getName()).append("\" ").append(e.getKey().getState()).append('\n');
            for (StackTraceElement frame : e.getValue()) {
                b.append("    at ").append(frame).append('\n');
            }
        }
        System.err.print(b);
        System.err.flush();
    }

    /**
     * The default bound of one operation: the waits the contract allows (the acquire wait plus a backend timeout,
     * the critical section, an unlock retried until it succeeds or the hold is lost within its lease) plus a grace
     * for a loaded machine.
     */
    static Duration defaultHangAfter(Duration wait, Duration criticalSection, Duration lease,
                                     Duration operationTimeout) {
        return wait.plus(criticalSection).plus(lease).plus(operationTimeout.multipliedBy(3)).plusSeconds(5);
    }
}
