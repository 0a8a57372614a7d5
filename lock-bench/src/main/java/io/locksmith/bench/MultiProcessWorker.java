package io.locksmith.bench;

import java.io.BufferedReader;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;

/**
 * One worker process of a {@link MultiProcess} run: opens one contender of the subject, runs its threads on the
 * shared lock from the coordinator's start time for the given seconds, and writes what it measured to its result
 * file.
 *
 * <p>It talks to the coordinator over its standard streams: it prints {@code READY} once its contender is open and
 * has taken and released the lock once, waits for {@code GO <epoch millis>} on standard input, prints {@code DONE}
 * after writing its results, and {@code FAILED <reason>} (with the stack trace on standard error) when anything
 * throws. It never outlives its coordinator: it exits when its standard input closes, and on its own when it has
 * run well past its time.
 *
 * <p>Arguments: {@code SUBJECT PROCESS THREADS SECONDS HOLD_MS LOCK_NAME OCCUPANCY_FILE RESULT_FILE}, with the
 * servers' {@code -Dbench.*} properties set as for a JMH fork.
 */
final class MultiProcessWorker {

    /** How long the coordinator may take to say GO once the worker is started. */
    static final long READY_LIMIT_SECONDS = 120;

    /** How long past its seconds a worker may take to finish, write its results and close its contender. */
    static final long FINISH_MARGIN_SECONDS = 60;

    /**
     * The exclusion check's word: a {@code long} at offset 0 of a file every worker maps. Inside the critical
     * section each thread compare-and-sets it from 0 to its own id, and back after its hold. The file is mapped
     * shared, so the compare-and-set is one atomic instruction on memory all the workers see: a thread whose
     * compare-and-set fails found another thread, of this process or another, between that thread's
     * {@code lock()} returning and its {@code unlock()} call, which is a breach of mutual exclusion (no false
     * alarms). Every overlap of two such holds is caught: whichever thread entered second finds the word taken.
     * It costs two uncontended atomic operations per acquisition and never touches the lock's store.
     */
    private static final VarHandle OCCUPANT =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private MultiProcessWorker() {
    }

    /** Runs the worker; the exit status is 0 when its results are written and its contender closed. */
    public static void main(String[] args) {
        Watchdog watchdog = new Watchdog(System.nanoTime() + TimeUnit.SECONDS.toNanos(READY_LIMIT_SECONDS));
        try {
            run(args, watchdog);
        } catch (Throwable failure) {
            fail(failure);
        }
        System.exit(0);
    }

    private static void run(String[] args, Watchdog watchdog) throws Exception {
        if (args.length != 8) {
            throw new IllegalArgumentException("Expected SUBJECT PROCESS THREADS SECONDS HOLD_MS LOCK_NAME"
                    + " OCCUPANCY_FILE RESULT_FILE, got " + Arrays.toString(args));
        }
        String subject = args[0];
        int process = Integer.parseInt(args[1]);
        int threads = Integer.parseInt(args[2]);
        int seconds = Integer.parseInt(args[3]);
        long holdNanos = TimeUnit.MILLISECONDS.toNanos(Integer.parseInt(args[4]));
        String lockName = args[5];
        Path occupancy = Path.of(args[6]);
        Path resultFile = Path.of(args[7]);

        MappedByteBuffer word;
        try (FileChannel channel = FileChannel.open(occupancy, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            word = channel.map(FileChannel.MapMode.READ_WRITE, 0, Long.BYTES);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Contender contender = Subjects.open(subject)) {
            Lock lock = contender.lock(lockName);
            // connections, scripts and classes are in place before the measured start
            lock.lock();
            lock.unlock();
            System.out.println("READY");
            System.out.flush();

            String go = in.readLine();
            if (go == null || !go.startsWith("GO ")) {
                throw new IllegalStateException("Expected 'GO <epoch millis>' from the coordinator, got "
                        + (go == null ? "the end of standard input" : "'" + go + "'"));
            }
            long startMillis = Long.parseLong(go.substring(3).strip());
            watchForCoordinatorExit(in);
            long sleepMillis;
            while ((sleepMillis = startMillis - System.currentTimeMillis()) > 0) {
                Thread.sleep(sleepMillis);
            }
            long start = System.nanoTime();
            long deadline = start + TimeUnit.SECONDS.toNanos(seconds);
            watchdog.extend(deadline + TimeUnit.SECONDS.toNanos(FINISH_MARGIN_SECONDS));

            Contention[] all = new Contention[threads];
            CountDownLatch finished = new CountDownLatch(threads);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            for (int t = 0; t < threads; t++) {
                all[t] = new Contention(lock, word, ((long) process << 32) | (t + 1), deadline, holdNanos, finished,
                        failure);
                Thread thread = new Thread(all[t], "contender-" + process + "-" + t);
                thread.setDaemon(true);
                thread.start();
            }
            while (!finished.await(100, TimeUnit.MILLISECONDS)) {
                if (failure.get() != null) {
                    break;
                }
            }
            if (failure.get() != null) {
                throw new IllegalStateException("A thread of worker " + process + " (" + subject + ") failed",
                        failure.get());
            }
            write(resultFile, all);
        }
        System.out.println("DONE");
        System.out.flush();
    }

    /** Writes the result file {@link MultiProcess} reads: per-thread counts, the check's breaches, every wait. */
    private static void write(Path file, Contention[] all) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(
                Files.newOutputStream(file)))) {
            out.writeInt(all.length);
            long breaches = 0;
            String firstBreach = "";
            int waits = 0;
            for (Contention c : all) {
                out.writeLong(c.acquisitions);
                breaches += c.breaches;
                if (firstBreach.isEmpty() && c.firstBreach != null) {
                    firstBreach = c.firstBreach;
                }
                waits += c.waitCount;
            }
            out.writeLong(breaches);
            out.writeUTF(firstBreach);
            out.writeInt(waits);
            for (Contention c : all) {
                for (int i = 0; i < c.waitCount; i++) {
                    out.writeLong(c.waits[i]);
                }
            }
        }
    }

    private static void fail(Throwable failure) {
        failure.printStackTrace();
        System.err.flush();
        System.out.println("FAILED " + String.valueOf(failure).replace('\n', ' '));
        System.out.flush();
        // a thread may still be blocked in lock(), and clients' threads must not hold the exit
        Runtime.getRuntime().halt(1);
    }

    /** Exits once standard input closes: the coordinator is gone, and nobody will read the results. */
    private static void watchForCoordinatorExit(BufferedReader in) {
        Thread watcher = new Thread(() -> {
            try {
                while (in.readLine() != null) {
                    // nothing else is sent after GO
                }
            } catch (IOException closed) {
                // the same as the end of input
            }
            System.err.println("multiprocess worker: the coordinator's end of standard input closed; exiting");
            Runtime.getRuntime().halt(3);
        }, "coordinator-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    /** One thread's loop: lock, hold, unlock until the deadline, recording each acquisition's wait. */
    private static final class Contention implements Runnable {
        private final Lock lock;
        private final MappedByteBuffer word;
        private final long id;
        private final long deadline;
        private final long holdNanos;
        private final CountDownLatch finished;
        private final AtomicReference<Throwable> failure;
        long acquisitions;
        long breaches;
        String firstBreach;
        long[] waits = new long[1024];
        int waitCount;

        Contention(Lock lock, MappedByteBuffer word, long id, long deadline, long holdNanos, CountDownLatch finished,
                AtomicReference<Throwable> failure) {
            this.lock = lock;
            this.word = word;
            this.id = id;
            this.deadline = deadline;
            this.holdNanos = holdNanos;
            this.finished = finished;
            this.failure = failure;
        }

        @Override
        public void run() {
            try {
                long before;
                while ((before = System.nanoTime()) - deadline < 0 && failure.get() == null) {
                    lock.lock();
                    long acquired = System.nanoTime();
                    try {
                        hold();
                    } finally {
                        lock.unlock();
                    }
                    // an acquisition that ends after the deadline met less contention than the others: not counted
                    if (acquired - deadline < 0) {
                        acquisitions++;
                        if (waitCount == waits.length) {
                            waits = Arrays.copyOf(waits, waitCount * 2);
                        }
                        waits[waitCount++] = acquired - before;
                    }
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            } finally {
                finished.countDown();
            }
        }

        private void hold() {
            if (!OCCUPANT.compareAndSet(word, 0, 0L, id)) {
                long other = (long) OCCUPANT.getVolatile(word, 0);
                breaches++;
                if (firstBreach == null) {
                    firstBreach = "thread " + (id >>> 32) + "/" + ((id & 0xffffffffL) - 1) + " got the lock while"
                            + " thread " + (other >>> 32) + "/" + ((other & 0xffffffffL) - 1) + " held it";
                }
            }
            long until = System.nanoTime() + holdNanos;
            long left;
            while ((left = until - System.nanoTime()) > 0) {
                LockSupport.parkNanos(left);
            }
            // fails only when the compare-and-set above did: nobody else clears another thread's id
            OCCUPANT.compareAndSet(word, 0, id, 0L);
        }
    }

    /** Ends the worker when it runs past its limit, whatever its threads are blocked in. */
    private static final class Watchdog extends Thread {
        private volatile long limit;

        Watchdog(long limit) {
            super("multiprocess-watchdog");
            this.limit = limit;
            setDaemon(true);
            start();
        }

        void extend(long newLimit) {
            limit = newLimit;
        }

        @Override
        public void run() {
            long left;
            while ((left = limit - System.nanoTime()) > 0) {
                LockSupport.parkNanos(left);
            }
            fail(new IllegalStateException("multiprocess worker ran past its time limit; exiting"));
        }
    }
}
