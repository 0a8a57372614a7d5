package io.locksmith.tests;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockHandle;
import io.locksmith.LockProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The contract with thousands of virtual threads as owners and waiters of one lock: every way of taking the lock
 * from a virtual thread, interrupts and waits that end while the lock is held, checked for exclusion and
 * growing fencing tokens, with every thread accounted for. It needs a JDK with virtual threads (21 or newer)
 * and fails at once, naming the JDK, on an older one.
 *
 * <p>It runs around a backend's {@link LockProviderContract}: that contract's providers, namespaces and leak
 * check after every test, so a backend adds a subclass of a few lines:
 *
 * <pre>{@code
 * class MyStoreVirtualThreadContractTest extends VirtualThreadContract {
 *     MyStoreVirtualThreadContractTest() { super(new MyStoreContractTest()); }
 * }
 * }</pre>
 *
 * <p>Its tests carry the tag {@code virtual-threads}, so a build on Java 17 can leave them out by its test
 * runner's configuration (Surefire's {@code excludedGroups}) rather than report them skipped.
 *
 * <p>Nothing here is timed: the outcomes are forced (a waiter that gives up or is interrupted does so while
 * another thread is known to hold the lock) and counted; the bounds on waits only turn a hang into a failure.
 */
@Tag("virtual-threads")
public abstract class VirtualThreadContract {

    private final LockProviderContract backend;

    /** The virtual-thread contract on the store {@code backend} tests. */
    protected VirtualThreadContract(LockProviderContract backend) {
        this.backend = backend;
    }

    /**
     * How many virtual threads each test starts on its one lock; default 2000. Each of them is a separate owner,
     * so each costs the store at least one acquisition and one release.
     */
    protected int threads() {
        return 2000;
    }

    /** How many providers the threads are spread over; default 4. */
    protected int providers() {
        return 4;
    }

    /** How long a test may take before it is reported as hanging; default 3 minutes. */
    protected Duration hangBound() {
        return Duration.ofMinutes(3);
    }

    @BeforeEach
    final void openBackendScope() throws Exception {
        TestThreads.requireVirtualThreads();
        backend.openScope();
    }

    @AfterEach
    final void closeBackendScope() throws Throwable {
        backend.closeScopeAndCheckForLeaks();
    }

    @Test
    @DisplayName("thousands of virtual threads take one lock by lock(), lockInterruptibly(), tryLock(wait), "
            + "acquire() and tryAcquire(wait): never two at once, every update kept, tokens grow")
    void everyWayOfTakingTheLockExcludes() throws Exception {
        String name = "vt-counter";
        int n = threads();
        List<DistributedLock> locks = locks(name);
        ExclusionChecker checker = new ExclusionChecker();
        FencedResource<Integer> resource = new FencedResource<>();
        AtomicInteger counter = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        Workers workers = new Workers("vt-owner");
        for (int i = 0; i < n; i++) {
            int index = i;
            DistributedLock lock = locks.get(i % locks.size());
            String owner = "provider" + (i % locks.size()) + "#vt" + i;
            workers.start(() -> {
                start.await();
                LockHandle handle = null;
                switch (index % 5) {
                    case 0 -> lock.lock();
                    case 1 -> lock.lockInterruptibly();
                    case 2 -> assertThat(lock.tryLock(1, TimeUnit.HOURS)).as("tryLock(1 h) of " + owner).isTrue();
                    case 3 -> handle = lock.acquire();
                    default -> handle = lock.tryAcquire(Duration.ofHours(1))
                            .orElseThrow(() -> new AssertionError("tryAcquire(1 h) of " + owner + " gave up"));
                }
                long token = handle != null ? handle.fencingToken() : lock.fencingToken();
                checker.acquired(name, owner, token);
                // Deliberately not atomic: read, let other virtual threads run, write. Only exclusion keeps it.
                int seen = counter.get();
                Thread.yield();
                counter.set(seen + 1);
                resource.writeOrThrow(token, seen + 1);
                checker.releasing(name, owner);
                if (handle != null) {
                    handle.close();
                } else {
                    lock.unlock();
                }
                assertThat(lock.isHeldByCurrentThread()).as("isHeldByCurrentThread() of " + owner + " after release")
                        .isFalse();
            });
        }
        start.countDown();
        workers.awaitAll(hangBound());

        workers.assertNoFailures();
        checker.assertClean();
        assertThat(checker.report().acquisitions()).as("recorded acquisitions").isEqualTo(n);
        assertThat(counter.get()).as("unguarded read-yield-write counter after %d holds", n).isEqualTo(n);
        assertThat(resource.acceptedWrites()).as("fenced writes accepted").isEqualTo(n);
        assertThat(locks.get(0).isLocked()).as("isLocked() after every thread released").isFalse();
    }

    @Test
    @DisplayName("thousands of virtual threads wait in lockInterruptibly(); the interrupted half leave with "
            + "InterruptedException without the lock, the other half each get it once")
    void interruptedWaitersLeaveTheOthersGetTheLock() throws Exception {
        String name = "vt-interrupts";
        int n = threads();
        List<DistributedLock> locks = locks(name);
        ExclusionChecker checker = new ExclusionChecker();
        Holder holder = new Holder(locks.get(0), checker, name);

        AtomicInteger acquired = new AtomicInteger();
        AtomicInteger interruptedOut = new AtomicInteger();
        AtomicInteger entered = new AtomicInteger();
        Workers waiters = new Workers("vt-waiter");
        for (int i = 0; i < n; i++) {
            DistributedLock lock = locks.get(i % locks.size());
            String owner = "provider" + (i % locks.size()) + "#vt" + i;
            waiters.start(() -> {
                entered.incrementAndGet();
                try {
                    lock.lockInterruptibly();
                } catch (InterruptedException e) {
                    assertThat(Thread.currentThread().isInterrupted())
                            .as("interrupt flag of " + owner + " after InterruptedException").isFalse();
                    assertThat(lock.isHeldByCurrentThread()).as(owner + " holds after InterruptedException")
                            .isFalse();
                    interruptedOut.incrementAndGet();
                    return;
                }
                checker.acquired(name, owner, lock.fencingToken());
                acquired.incrementAndGet();
                checker.releasing(name, owner);
                lock.unlock();
            });
        }
        waiters.awaitParked(entered, hangBound());
        List<Thread> interrupted = new ArrayList<>();
        for (int i = 1; i < n; i += 2) {
            interrupted.add(waiters.get(i));
        }
        interrupted.forEach(Thread::interrupt);
        waiters.awaitEach(interrupted, hangBound());
        // the holder still holds: every interrupted waiter must have left without the lock
        assertThat(interruptedOut.get()).as("waiters that left with InterruptedException").isEqualTo(interrupted.size());
        assertThat(acquired.get()).as("waiters that got the lock while it was held").isZero();

        holder.release();
        waiters.awaitAll(hangBound());

        waiters.assertNoFailures();
        checker.assertClean();
        assertThat(acquired.get()).as("waiters that were not interrupted and got the lock").isEqualTo(n - interrupted.size());
        assertThat(interruptedOut.get()).as("waiters that left with InterruptedException").isEqualTo(interrupted.size());
        assertThat(checker.report().acquisitions()).as("recorded acquisitions, the holder's included")
                .isEqualTo(n - interrupted.size() + 1);
    }

    @Test
    @DisplayName("thousands of virtual threads in tryLock(wait) and tryAcquire(wait): those whose wait ends "
            + "while the lock is held give up without it, the others each get it once")
    void waitsThatEndWhileHeldGiveUp() throws Exception {
        String name = "vt-waits";
        int n = threads();
        List<DistributedLock> locks = locks(name);
        ExclusionChecker checker = new ExclusionChecker();
        Holder holder = new Holder(locks.get(0), checker, name);

        AtomicInteger gaveUp = new AtomicInteger();
        AtomicInteger acquired = new AtomicInteger();
        Workers shortWaits = new Workers("vt-short-wait");
        Workers longWaits = new Workers("vt-long-wait");
        for (int i = 0; i < n; i++) {
            DistributedLock lock = locks.get(i % locks.size());
            String owner = "provider" + (i % locks.size()) + "#vt" + i;
            boolean handle = (i / 2) % 2 == 0;
            if (i % 2 == 0) {
                // gives up while the holder holds: the holder releases only after all of these returned
                shortWaits.start(() -> {
                    boolean got = handle ? lock.tryAcquire(Duration.ofMillis(50)).isPresent()
                            : lock.tryLock(50, TimeUnit.MILLISECONDS);
                    assertThat(got).as(owner + " got the lock while another owner held it").isFalse();
                    assertThat(lock.isHeldByCurrentThread()).as(owner + " holds after giving up").isFalse();
                    gaveUp.incrementAndGet();
                });
            } else {
                longWaits.start(() -> {
                    LockHandle held = null;
                    if (handle) {
                        held = lock.tryAcquire(Duration.ofHours(1))
                                .orElseThrow(() -> new AssertionError("tryAcquire(1 h) of " + owner + " gave up"));
                    } else {
                        assertThat(lock.tryLock(1, TimeUnit.HOURS)).as("tryLock(1 h) of " + owner).isTrue();
                    }
                    checker.acquired(name, owner, held != null ? held.fencingToken() : lock.fencingToken());
                    acquired.incrementAndGet();
                    checker.releasing(name, owner);
                    if (held != null) {
                        held.close();
                    } else {
                        lock.unlock();
                    }
                });
            }
        }
        shortWaits.awaitAll(hangBound());
        assertThat(gaveUp.get()).as("short waits that gave up while the lock was held").isEqualTo(shortWaits.size());
        assertThat(acquired.get()).as("long waits that got the lock while it was held").isZero();

        holder.release();
        longWaits.awaitAll(hangBound());

        shortWaits.assertNoFailures();
        longWaits.assertNoFailures();
        checker.assertClean();
        assertThat(acquired.get()).as("long waits that got the lock").isEqualTo(longWaits.size());
        assertThat(checker.report().acquisitions()).as("recorded acquisitions, the holder's included")
                .isEqualTo(longWaits.size() + 1);
    }

    /** One lock object named {@code name} on each of {@link #providers()} new providers. */
    private List<DistributedLock> locks(String name) {
        List<DistributedLock> locks = new ArrayList<>();
        for (int p = 0; p < providers(); p++) {
            LockProvider provider = backend.open();
            locks.add(provider.getLock(name));
        }
        return locks;
    }

    /** A virtual thread that holds a lock from the start of a test until {@link #release()}. */
    private final class Holder {
        private final CountDownLatch releasing = new CountDownLatch(1);
        private final Workers thread = new Workers("vt-holder");

        Holder(DistributedLock lock, ExclusionChecker checker, String name) throws InterruptedException {
            CountDownLatch held = new CountDownLatch(1);
            thread.start(() -> {
                lock.lock();
                checker.acquired(name, "holder", lock.fencingToken());
                held.countDown();
                releasing.await();
                checker.releasing(name, "holder");
                lock.unlock();
            });
            if (!held.await(hangBound().toNanos(), TimeUnit.NANOSECONDS)) {
                thread.assertNoFailures();
                throw new AssertionError("the holder did not get the free lock within " + hangBound().toMillis() + " ms");
            }
        }

        void release() throws InterruptedException {
            releasing.countDown();
            thread.awaitAll(hangBound());
            thread.assertNoFailures();
        }
    }

    /** Virtual threads of one test, started at once, each running a body that may throw; failures are kept. */
    private static final class Workers {
        private final String prefix;
        private final List<Thread> threads = new ArrayList<>();
        private final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();

        Workers(String prefix) {
            this.prefix = prefix;
        }

        void start(Body body) {
            String name = prefix + "-" + threads.size();
            Thread t = TestThreads.virtual(name, () -> {
                try {
                    body.run();
                } catch (Throwable e) {
                    failures.add(new AssertionError(name + " failed", e));
                }
            });
            threads.add(t);
            t.start();
        }

        Thread get(int index) {
            return threads.get(index);
        }

        int size() {
            return threads.size();
        }

        void awaitAll(Duration bound) throws InterruptedException {
            awaitEach(threads, bound);
        }

        /** Joins each of {@code some}, all within {@code bound}; a thread still running fails with its stack. */
        void awaitEach(List<Thread> some, Duration bound) throws InterruptedException {
            long deadline = System.nanoTime() + bound.toNanos();
            for (Thread t : some) {
                long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                t.join(left);
                if (t.isAlive()) {
                    long alive = some.stream().filter(Thread::isAlive).count();
                    AssertionError hung = new AssertionError(alive + " of " + some.size() + " " + prefix
                            + " threads still run after " + bound.toMillis() + " ms, among them " + t.getName()
                            + " (its stack trace below); failures so far: " + failures.size());
                    hung.setStackTrace(t.getStackTrace());
                    failures.forEach(hung::addSuppressed);
                    throw hung;
                }
            }
        }

        /**
         * Waits until every thread has entered its body ({@code entered}) and is parked, which for a body that
         * only waits for the lock means it waits for it. The bound only turns a hang into a failure.
         */
        void awaitParked(AtomicInteger entered, Duration bound) throws InterruptedException {
            long deadline = System.nanoTime() + bound.toNanos();
            while (entered.get() < threads.size() || threads.stream().anyMatch(t -> !parked(t))) {
                if (!failures.isEmpty()) {
                    assertNoFailures();
                }
                if (System.nanoTime() - deadline >= 0) {
                    long running = threads.stream().filter(t -> !parked(t)).count();
                    throw new AssertionError(running + " of " + threads.size() + " " + prefix + " threads are "
                            + "not waiting after " + bound.toMillis() + " ms (" + entered.get() + " entered)");
                }
                Thread.sleep(10);
            }
        }

        private static boolean parked(Thread t) {
            Thread.State state = t.getState();
            return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
        }

        void assertNoFailures() {
            if (failures.isEmpty()) {
                return;
            }
            AssertionError all = new AssertionError(failures.size() + " " + prefix + " threads failed; the first:",
                    failures.peek());
            failures.stream().skip(1).limit(10).forEach(all::addSuppressed);
            throw all;
        }
    }

    /** A thread's work, which may throw anything. */
    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }
}
