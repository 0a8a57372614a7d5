package io.locksmith.cli;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code locksmith demo}: the stock-deduction scenario. A stock of N items lives outside the lock store;
 * P simulated service instances (each its own {@link LockProvider}, as separate processes would have) run W
 * workers each, and every worker loops lock, read stock, decrement if positive, write, unlock. With the lock
 * nothing is oversold; with {@code --no-lock} concurrent read-modify-writes sell the same item twice.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Stock deduction: P service instances with W workers each sell a shared stock of N items.",
                "Prints items sold, oversold (0 with the lock), throughput, lock-acquire latency, each "
                        + "instance's share and Jain's fairness index over the instances. --no-lock shows the "
                        + "overselling the lock prevents."})
final class DemoCommand implements Callable<Integer> {

    @Mixin
    BackendOptions backend;

    @Option(names = "--stock", paramLabel = "N", description = "Items in stock (default: ${DEFAULT-VALUE})")
    int stock = 500;

    @Option(names = "--instances", paramLabel = "P",
            description = "Simulated service instances, each with its own provider (default: ${DEFAULT-VALUE})")
    int instances = 4;

    @Option(names = "--workers", paramLabel = "W", description = "Workers per instance (default: ${DEFAULT-VALUE})")
    int workers = 4;

    /** The longest {@code --work}: each of the N sales takes it inside the lock. */
    private static final Duration MAX_WORK = Duration.ofSeconds(10);

    @Option(names = "--work", paramLabel = "DURATION",
            description = "Time between reading and writing the stock, inside the lock (default: ${DEFAULT-VALUE})")
    String work = "200us";

    @Option(names = "--lock-name", paramLabel = "NAME", description = "Lock name (default: ${DEFAULT-VALUE})")
    String lockName = "stock:sku-42";

    @Option(names = "--no-lock", description = "Run the same workers without the lock")
    boolean noLock;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        requireRange("--stock", stock, 1, 10_000_000);
        requireRange("--instances", instances, 1, 64);
        requireRange("--workers", workers, 1, 256);
        long workNanos = parseWork(work);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();

        LockOptions options = backend.options().namespace(backend.namespace.equals(LockOptions.DEFAULT_NAMESPACE)
                ? "locksmith-demo" : backend.namespace).build();
        List<LockProvider> providers = new ArrayList<>();
        try {
            if (!noLock) {
                for (int i = 0; i < instances; i++) {
                    providers.add(backend.open(options));
                }
            }
            return run(providers, workNanos, out, err);
        } finally {
            providers.forEach(LockProvider::close);
        }
    }

    private int run(List<LockProvider> providers, long workNanos, PrintWriter out, PrintWriter err)
            throws InterruptedException {
        Stock shelf = new Stock(stock);
        int[] sold = new int[instances];
        Worker[] all = new Worker[instances * workers];
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicInteger running = new AtomicInteger(all.length);
        for (int i = 0; i < instances; i++) {
            DistributedLock lock = noLock ? null : providers.get(i).getLock(lockName);
            for (int w = 0; w < workers; w++) {
                Worker worker = new Worker(i, lock, shelf, sold, workNanos, start, failure, running);
                all[i * workers + w] = worker;
                Thread t = new Thread(worker, "instance-" + i + "-worker-" + w);
                t.setDaemon(true);
                worker.thread = t;
                t.start();
            }
        }
        long began = System.nanoTime();
        start.countDown();
        long lastProgress = began;
        while (running.get() > 0) {
            Thread.sleep(50);
            if (System.nanoTime() - lastProgress > TimeUnit.SECONDS.toNanos(1)) {
                lastProgress = System.nanoTime();
                err.printf("\r  %d / %d items sold, %.0f s", stock - Math.max(0, shelf.peek()), stock,
                        (lastProgress - began) / 1e9);
                err.flush();
            }
        }
        long elapsed = System.nanoTime() - began;
        if (lastProgress != began) {
            err.println();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a worker failed: " + failure.get(), failure.get());
        }
        int total = Arrays.stream(sold).sum();
        int oversold = Math.max(0, total - stock);
        long[] latencies = noLock ? new long[0] : Arrays.stream(all).flatMapToLong(w -> Arrays.stream(w.latencies()))
                .sorted().toArray();

        out.printf("locksmith demo: stock deduction, %d items, %d instances x %d workers, %s%n", stock, instances,
                workers, noLock ? "NO LOCK" : "lock '" + lockName + "'");
        out.printf("backend          %s%n", noLock ? "(none)" : backend.shownUri());
        out.printf("items sold       %d%n", total);
        out.printf("oversold         %d%n", oversold);
        out.printf("stock left       %d%n", shelf.peek());
        out.printf("throughput       %.0f sales/s over %.2f s%n", total / (elapsed / 1e9), elapsed / 1e9);
        if (!noLock) {
            out.printf("acquire latency  p50 %s, p99 %s, max %s (%d acquisitions)%n", micros(percentile(latencies, 50)),
                    micros(percentile(latencies, 99)), micros(latencies.length == 0 ? 0 : latencies[latencies.length - 1]),
                    latencies.length);
        }
        StringBuilder share = new StringBuilder();
        for (int i = 0; i < instances; i++) {
            share.append(String.format(Locale.ROOT, "%s#%d %d (%.0f%%)", i == 0 ? "" : ", ", i, sold[i],
                    total == 0 ? 0.0 : 100.0 * sold[i] / total));
        }
        out.printf("per instance     %s%n", share);
        out.printf(Locale.ROOT, "fairness         Jain's index over instances %.3f (1 = equal shares, 1/%d = one"
                + " instance sold all)%n", jain(sold), instances);
        if (!noLock && oversold > 0) {
            out.printf("FAILED: the lock let %d items be oversold%n", oversold);
            return 1;
        }
        return 0;
    }

    /** Jain's fairness index of the shares: (Σx)² / (n·Σx²); 0 when nothing was sold. */
    private static double jain(int[] shares) {
        double sum = 0;
        double squares = 0;
        for (int x : shares) {
            sum += x;
            squares += (double) x * x;
        }
        return squares == 0 ? 0 : sum * sum / (shares.length * squares);
    }

    private static long percentile(long[] sorted, int p) {
        if (sorted.length == 0) {
            return 0;
        }
        int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }

    private static String micros(long nanos) {
        return nanos >= 10_000_000 ? (nanos / 1_000_000) + " ms" : (nanos / 1_000) + " us";
    }

    private static void requireRange(String option, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(option + " must be between " + min + " and " + max + "; got " + value);
        }
    }

    private static long parseWork(String text) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        if (t.endsWith("us")) {
            try {
                long micros = Long.parseLong(t.substring(0, t.length() - 2));
                if (micros >= 0 && micros <= MAX_WORK.toNanos() / 1000) {
                    return TimeUnit.MICROSECONDS.toNanos(micros);
                }
                if (micros > 0) {
                    throw new IllegalArgumentException("--work must be at most 10s; got '" + text + "'");
                }
            } catch (NumberFormatException e) {
                // falls through
            }
            throw new IllegalArgumentException("--work takes a duration such as 200us, 1ms or PT0.001S; got '" + text
                    + "'");
        }
        return BackendOptions.Durations.parse("--work", text, MAX_WORK).toNanos();
    }

    /** The shared stock, deliberately unsynchronized: only the lock keeps its read-modify-write safe. */
    private static final class Stock {
        private volatile int left;

        Stock(int left) {
            this.left = left;
        }

        int read() {
            return left;
        }

        void write(int value) {
            left = value;
        }

        int peek() {
            return left;
        }
    }

    /** One worker thread of one instance. */
    private static final class Worker implements Runnable {
        private final int instance;
        private final DistributedLock lock;
        private final Stock shelf;
        private final int[] sold;
        private final long workNanos;
        private final CountDownLatch start;
        private final AtomicReference<Throwable> failure;
        private final AtomicInteger running;
        private long[] latencies = new long[64];
        private int count;
        Thread thread;

        Worker(int instance, DistributedLock lock, Stock shelf, int[] sold, long workNanos, CountDownLatch start,
                AtomicReference<Throwable> failure, AtomicInteger running) {
            this.instance = instance;
            this.lock = lock;
            this.shelf = shelf;
            this.sold = sold;
            this.workNanos = workNanos;
            this.start = start;
            this.failure = failure;
            this.running = running;
        }

        @Override
        public void run() {
            try {
                start.await();
                while (failure.get() == null && sellOne()) {
                    // next sale
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            } finally {
                running.decrementAndGet();
            }
        }

        private boolean sellOne() {
            if (lock == null) {
                return sell();
            }
            long t0 = System.nanoTime();
            lock.lock();
            record(System.nanoTime() - t0);
            try {
                return sell();
            } finally {
                lock.unlock();
            }
        }

        private boolean sell() {
            int left = shelf.read();
            if (left <= 0) {
                return false;
            }
            if (workNanos > 0) {
                LockSupport.parkNanos(workNanos);
            }
            shelf.write(left - 1);
            synchronized (sold) {
                sold[instance]++;
            }
            return true;
        }

        private void record(long nanos) {
            if (count == latencies.length) {
                latencies = Arrays.copyOf(latencies, count * 2);
            }
            latencies[count++] = nanos;
        }

        long[] latencies() {
            return Arrays.copyOf(latencies, count);
        }
    }
}
