package io.locksmith.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedReadWriteLock;
import io.locksmith.DistributedSemaphore;
import io.locksmith.Leadership;
import io.locksmith.LeadershipListener;
import io.locksmith.LockBackendException;
import io.locksmith.LockHandle;
import io.locksmith.LockListener;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.MultiLockHandle;
import io.locksmith.Permit;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import io.locksmith.tests.StoreControl.Fault;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.function.Executable;

/**
 * The contract every Locksmith backend must meet, as an abstract JUnit 5 test class: a backend's test
 * subclasses it, tells it how to open a provider on the store under test and how to look into that store, and
 * inherits one {@link Nested} group of tests per part of the contract.
 *
 * <pre>{@code
 * class RedisContractTest extends LockProviderContract {
 *     protected LockProvider newProvider(LockOptions options) { return LockProvider.open(redisUri, options); }
 *     protected long storeOperationCount() { return redisInfo("total_commands_processed"); }
 *     protected Set<String> heldNames(String namespace) { return scanLockKeys(namespace); }
 *     protected void forceRelease(String namespace, String name) { deleteLockKey(namespace, name); }
 *     protected Optional<StoreControl> storeControl() { return Optional.of(redisProcessControl); }
 * }
 * }</pre>
 *
 * <p>Every test runs in a fresh random namespace, so runs never collide in a shared store. Every provider a
 * test opens is closed after it, and then the kit checks that the store holds no lock state in the test's
 * namespaces (Caffeine-style invariant check). The failure tests are generated only for the faults
 * {@link #storeControl()} offers, so nothing is ever skipped.
 *
 * <p>Timing assertions are deliberately loose: lower bounds where the contract promises a wait, generous
 * upper bounds (the contract's bound plus {@link #slack()}) everywhere else, and bounded polling instead of
 * fixed sleeps wherever something happens asynchronously.
 *
 * <p>The kit's worker threads are platform threads, or virtual threads with the system property
 * {@code locksmith.tests.threads=virtual} (JDK 21 or newer; every test fails on an older JDK). Thousands of
 * virtual-thread owners on one lock are {@link VirtualThreadContract}'s subject.
 */
public abstract class LockProviderContract {

    private Scope scope;

    /** Creates the contract; subclasses need a no-argument constructor like any JUnit test class. */
    protected LockProviderContract() {
    }

    // ------------------------------------------------------------------------------------------------------
    // Hooks
    // ------------------------------------------------------------------------------------------------------

    /**
     * A new client of the store under test, built with exactly these options (namespace, leases, timeouts and
     * listener included). Each call must give a separate provider, as if from another process; the kit closes
     * it after the test.
     */
    protected abstract LockProvider newProvider(LockOptions options);

    /**
     * How many operations (round trips) the store under test has served so far, counted on the store's side
     * where possible. Only differences matter: the kit checks that re-entering a held lock does not change
     * this number, and that a fresh acquisition does.
     */
    protected abstract long storeOperationCount();

    /**
     * The names of the locks held in the store right now within {@code namespace}, exactly as they were passed
     * to {@link LockProvider#getLock}, read directly from the store (not through a provider). Expired holds must
     * not be listed. Used for the leak check after every test and to check that names map to keys one to one.
     */
    protected abstract Set<String> heldNames(String namespace);

    /**
     * Deletes the lock state of {@code name} in {@code namespace} directly in the store, as an operator would,
     * so that its holder loses the hold without being told.
     */
    protected abstract void forceRelease(String namespace, String name);

    /**
     * A control to inject failures into the store, if the test fixture can; the failure tests run for each of
     * its {@link StoreControl#faults()}. Default: none, and no failure tests are generated.
     */
    protected Optional<StoreControl> storeControl() {
        return Optional.empty();
    }

    /**
     * Whether this class runs the group "faults of single store calls"; default true. A class that runs the
     * contract against a variant of a backend whose call-fault behaviour another class already covers (the same
     * store over TLS, or in a container) may return false to keep the build short.
     */
    protected boolean runsCallFaults() {
        return true;
    }

    /**
     * Whether this class runs the groups of the primitives built on the lock (semaphores, leader election, and
     * leadership under store faults); default true. They use only the public lock API, so a class that runs the
     * contract against a variant of a backend another class already covers (the same store over TLS, in a
     * container, through another driver, with FIFO fairness) may return false to keep the build short. Such a
     * class still runs the first four tests of the group "read-write locks" (sharing, the checked history under
     * contention, re-entry, the waiting writer), whose store scripts or statements its variant does run.
     */
    protected boolean runsPrimitives() {
        return true;
    }

    /**
     * Whether the backend keeps read holds, so that {@link LockProvider#getReadWriteLock} works; default true. A
     * backend that does not returns false, and the group "read-write locks" then checks that it refuses them
     * clearly.
     */
    protected boolean supportsReadWriteLocks() {
        return true;
    }

    /**
     * The options every test starts from: a 2 s lease (renewed every third of it), a 1 s operation timeout and
     * a 5 ms to 100 ms backoff. The kit then sets its own namespace and listener, and some tests change the
     * lease. Override to adapt to a slow store, keeping the lease well below {@link #slack()}.
     */
    protected LockOptions.Builder baseOptions() {
        return LockOptions.builder()
                .leaseTime(Duration.ofSeconds(2))
                .operationTimeout(Duration.ofSeconds(1))
                .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100));
    }

    /**
     * Extra time every upper bound allows on top of what the contract promises, for slow or busy machines;
     * default 5 s.
     */
    protected Duration slack() {
        return Duration.ofSeconds(5);
    }

    /**
     * How long the store may take to show a release that {@link LockProvider#close()} or {@code unlock()}
     * made, before the leak check fails; default 1 s. Keep it shorter than the lease of {@link #baseOptions()},
     * or holds that were never released would expire within it and go unnoticed.
     */
    protected Duration releaseGrace() {
        return Duration.ofSeconds(1);
    }

    // ------------------------------------------------------------------------------------------------------
    // Helpers for subclasses that add backend-specific tests
    // ------------------------------------------------------------------------------------------------------

    /** The random namespace of the running test. */
    protected final String namespace() {
        return scope().namespace;
    }

    /** Opens a provider on the store under test with the test's options; it is closed after the test. */
    protected final LockProvider open() {
        return open(UnaryOperator.identity());
    }

    /**
     * Opens a provider with the test's options changed by {@code customizer}; it is closed after the test, and
     * the namespace it uses is included in the leak check.
     */
    protected final LockProvider open(UnaryOperator<LockOptions.Builder> customizer) {
        Scope s = scope();
        LossRecorder recorder = new LossRecorder();
        LockOptions options = customizer.apply(baseOptions().namespace(s.namespace).listener(recorder)).build();
        s.namespaces.add(options.namespace());
        LockProvider provider = newProvider(options);
        assertThat(provider).as("newProvider(options)").isNotNull();
        s.providers.add(provider);
        synchronized (s.losses) {
            s.losses.put(provider, recorder);
        }
        return provider;
    }

    // ------------------------------------------------------------------------------------------------------
    // Lifecycle and the leak check
    // ------------------------------------------------------------------------------------------------------

    private static final Set<Class<?>> WARMED_UP = ConcurrentHashMap.newKeySet();

    @BeforeEach
    final void openScope() throws Exception {
        if (TestThreads.virtualByProperty()) {
            TestThreads.requireVirtualThreads();
        }
        if (WARMED_UP.add(getClass())) {
            warmUp();
        }
        scope = new Scope();
    }

    /**
     * Runs one lock cycle, with a generous operation timeout and lease, before the first test of a contract class:
     * the costs of a cold start (class loading, the first connection, a table or parent node created on the
     * server) are then not charged to the first test's one-second operation timeout on a busy machine, nor end the
     * warm-up's own hold.
     */
    private void warmUp() throws Exception {
        Duration generous = Duration.ofSeconds(30);
        // the lease too: a cold first acquisition slower than the usual 2 s lease would end its own hold
        LockOptions options = baseOptions().namespace("lt-warm-up").operationTimeout(generous).leaseTime(generous)
                .build();
        try (LockProvider provider = newProvider(options)) {
            DistributedLock lock = provider.getLock("warm-up");
            assertThat(lock.tryLock(generous.toMillis(), TimeUnit.MILLISECONDS)).as("warm-up: tryLock(30 s) on a free lock before the first test")
                    .isTrue();
            lock.unlock();
        }
    }

    @AfterEach
    final void closeScopeAndCheckForLeaks() throws Throwable {
        Scope s = scope;
        scope = null;
        if (s != null) {
            s.close();
        }
    }

    private Scope scope() {
        if (scope == null) {
            throw new IllegalStateException("no contract test is running");
        }
        return scope;
    }

    /** Runs {@code body} in a scope of its own (namespace, providers, leak check), as a dynamic test needs. */
    private void isolated(Executable body) throws Throwable {
        Scope outer = scope;
        Scope inner = new Scope();
        scope = inner;
        Throwable failure = null;
        try {
            body.execute();
        } catch (Throwable t) {
            failure = t;
        } finally {
            scope = outer;
        }
        try {
            inner.close();
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            } else {
                failure.addSuppressed(t);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** What one test opened: its namespace(s), providers, worker threads and injected faults. */
    private final class Scope {
        final String namespace = "lt" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        final Set<String> namespaces = Collections.synchronizedSet(new LinkedHashSet<>(List.of(namespace)));
        final List<LockProvider> providers = new CopyOnWriteArrayList<>();
        final Map<LockProvider, LossRecorder> losses = new IdentityHashMap<>();
        final List<Actor> actors = new CopyOnWriteArrayList<>();
        final Set<Fault> activeFaults = Collections.synchronizedSet(EnumSet.noneOf(Fault.class));
        final List<FaultyStore<?>> faultyStores = new CopyOnWriteArrayList<>();
        final List<Leadership> leaderships = new CopyOnWriteArrayList<>();

        void close() throws Throwable {
            List<Throwable> problems = new ArrayList<>();
            for (FaultyStore<?> faulty : faultyStores) {
                faulty.stop(); // providers release what they hold without injected faults
            }
            for (Fault fault : List.copyOf(activeFaults)) {
                try {
                    fault.heal(storeControl().orElseThrow());
                } catch (Throwable t) {
                    problems.add(t);
                }
            }
            activeFaults.clear();
            for (Leadership leadership : leaderships) {
                try {
                    leadership.close(); // steps down before its provider closes
                } catch (Throwable t) {
                    problems.add(new AssertionError("close() of " + leadership + " failed", t));
                }
            }
            for (LockProvider provider : providers) {
                try {
                    provider.close();
                } catch (Throwable t) {
                    problems.add(new AssertionError("close() of provider " + provider.clientId() + " failed", t));
                }
            }
            for (Actor actor : actors) {
                try {
                    actor.shutDown(opBound());
                } catch (Throwable t) {
                    problems.add(t);
                }
            }
            for (String ns : List.copyOf(namespaces)) {
                AtomicReference<Set<String>> left = new AtomicReference<>(Set.of());
                boolean clean = eventually(releaseGrace(), () -> {
                    left.set(heldNames(ns));
                    return left.get().isEmpty();
                });
                if (!clean) {
                    problems.add(new AssertionError("leak check: after every provider was closed, the store "
                            + "still holds " + left.get().stream().map(LockProviderContract::show).toList()
                            + " in namespace '" + ns + "' (waited " + releaseGrace().toMillis() + " ms)"));
                }
            }
            if (!problems.isEmpty()) {
                Throwable first = problems.get(0);
                for (Throwable other : problems.subList(1, problems.size())) {
                    first.addSuppressed(other);
                }
                throw first;
            }
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Exclusion
    // ------------------------------------------------------------------------------------------------------

    /** Mutual exclusion between owners: threads of one provider and separate providers. */
    @Nested
    @DisplayName("exclusion")
    public class Exclusion {

        @Test
        @DisplayName("3 providers x 3 threads never hold the lock at once; no update is lost; tokens grow")
        void threadsOfSeveralProvidersNeverOverlap() throws Exception {
            String name = "counter";
            int providers = 3;
            int threadsPerProvider = 3;
            int iterations = 25;
            int total = providers * threadsPerProvider * iterations;
            ExclusionChecker checker = new ExclusionChecker();
            // Deliberately not atomic as a whole: read, pause, write. Only exclusion keeps every increment.
            AtomicInteger counter = new AtomicInteger();
            List<Throwable> unlockFailures = new CopyOnWriteArrayList<>();
            CyclicBarrier start = new CyclicBarrier(providers * threadsPerProvider);
            List<Future<Void>> workers = new ArrayList<>();
            for (int p = 0; p < providers; p++) {
                LockProvider provider = open();
                DistributedLock lock = provider.getLock(name);
                for (int t = 0; t < threadsPerProvider; t++) {
                    String owner = provider.clientId() + "#" + t;
                    Actor worker = actor("worker-p" + p + "-t" + t);
                    workers.add(worker.submit(() -> {
                        start.await();
                        for (int i = 0; i < iterations; i++) {
                            incrementUnderLock(lock, i, owner, checker, counter, unlockFailures);
                        }
                        return null;
                    }));
                }
            }
            for (Future<Void> worker : workers) {
                await(worker, Duration.ofSeconds(60).plus(slack()), "worker of the exclusion run");
            }
            checker.assertClean();
            assertThat(unlockFailures).as("unlock() failures of holds that were never given up").isEmpty();
            assertThat(checker.report().acquisitions()).as("recorded acquisitions").isEqualTo(total);
            assertThat(counter.get()).as("unguarded read-pause-write counter after %d increments", total)
                    .isEqualTo(total);
        }

        private void incrementUnderLock(DistributedLock lock, int iteration, String owner, ExclusionChecker checker,
                AtomicInteger counter, List<Throwable> unlockFailures) throws InterruptedException {
            LockHandle handle = null;
            switch (iteration % 4) {
                case 0 -> lock.lock();
                case 1 -> lock.lockInterruptibly();
                case 2 -> assertThat(lock.tryLock(30, TimeUnit.SECONDS)).as("tryLock(30 s) under contention")
                        .isTrue();
                default -> handle = lock.acquire();
            }
            checker.acquired(lock.name(), owner, handle != null ? handle.fencingToken() : lock.fencingToken());
            int seen = counter.get();
            Thread.sleep(1);
            counter.set(seen + 1);
            checker.releasing(lock.name(), owner);
            // Keep going after a failed unlock, so that the checker's report shows what went wrong.
            try {
                if (handle != null) {
                    handle.close();
                } else {
                    lock.unlock();
                }
            } catch (IllegalMonitorStateException e) {
                unlockFailures.add(e);
            }
        }

        @Test
        @DisplayName("another thread of the same provider is another owner and waits")
        void anotherThreadOfTheSameProviderIsAnotherOwner() throws Exception {
            DistributedLock lock = open().getLock("shared");
            lock.lock();
            Actor sibling = actor("sibling");
            assertThat(sibling.<Boolean>call(opBound(), lock::tryLock)).as("tryLock() by a sibling thread").isFalse();
            assertThat(sibling.<Boolean>call(opBound(), lock::isHeldByCurrentThread)).as("isHeldByCurrentThread() of sibling")
                    .isFalse();
            assertThat(sibling.<Integer>call(opBound(), lock::getHoldCount)).as("getHoldCount() of sibling").isZero();
            assertThat(sibling.<Boolean>call(waitBound(Duration.ofMillis(200)), () -> lock.tryLock(200, TimeUnit.MILLISECONDS)))
                    .as("tryLock(200 ms) by a sibling thread").isFalse();
            assertThat(lock.isHeldByCurrentThread()).as("owner still holds after the sibling's attempts").isTrue();
            assertThat(lock.getHoldCount()).isEqualTo(1);

            Future<Boolean> waiting = sibling.submit(() -> {
                lock.lock();
                boolean held = lock.isHeldByCurrentThread();
                lock.unlock();
                return held;
            });
            Thread.sleep(200);
            assertThat(waiting.isDone()).as("sibling's lock() returned while the owner still held the lock")
                    .isFalse();
            lock.unlock();
            assertThat(await(waiting, waitBound(Duration.ZERO), "sibling's lock() after release")).isTrue();
            assertThat(lock.isHeldByCurrentThread()).isFalse();
        }

        @Test
        @DisplayName("two providers exclude each other, and the waiting one gets the lock once it is released")
        void twoProvidersExcludeEachOther() throws Exception {
            DistributedLock first = open().getLock("pair");
            DistributedLock second = open().getLock("pair");
            assertThat(second.isLocked()).as("isLocked() before anyone locks").isFalse();
            first.lock();
            assertThat(second.isLocked()).as("isLocked() seen by the other provider").isTrue();
            assertThat(second.tryLock()).as("tryLock() by the other provider").isFalse();
            assertThat(second.tryLock(200, TimeUnit.MILLISECONDS)).as("tryLock(200 ms) by the other provider")
                    .isFalse();
            assertThat(second.getHoldCount()).isZero();

            Actor waiter = actor("waiter");
            Future<Long> waited = waiter.submit(() -> {
                second.lock();
                long token = second.fencingToken();
                second.unlock();
                return token;
            });
            Thread.sleep(200);
            assertThat(waited.isDone()).as("the other provider's lock() returned while the lock was held").isFalse();
            long firstToken = first.fencingToken();
            first.unlock();
            assertThat(await(waited, waitBound(Duration.ZERO), "the other provider's lock() after release"))
                    .as("token of the waiter's hold").isGreaterThan(firstToken);

            assertThat(second.tryLock()).as("tryLock() on the free lock").isTrue();
            assertThat(first.tryLock()).as("first provider's tryLock() while the second holds").isFalse();
            second.unlock();
            assertThat(first.isLocked()).as("isLocked() after the last release").isFalse();
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Reentrancy
    // ------------------------------------------------------------------------------------------------------

    /** Re-acquiring a held lock: hold counts, no round trips, same token. */
    @Nested
    @DisplayName("reentrancy")
    public class Reentrancy {

        @Test
        @DisplayName("every acquisition needs its own unlock; the lock stays held until the last one")
        void everyAcquisitionNeedsItsOwnUnlock() throws Exception {
            DistributedLock lock = open().getLock("reentrant");
            DistributedLock other = open().getLock("reentrant");
            lock.lock();
            assertThat(lock.getHoldCount()).isEqualTo(1);
            assertThat(lock.tryLock()).as("re-entering tryLock()").isTrue();
            assertThat(lock.getHoldCount()).isEqualTo(2);
            assertThat(lock.tryLock(1, TimeUnit.SECONDS)).as("re-entering tryLock(1 s)").isTrue();
            assertThat(lock.getHoldCount()).isEqualTo(3);
            lock.lockInterruptibly();
            assertThat(lock.getHoldCount()).isEqualTo(4);
            assertThat(lock.tryLock(Duration.ZERO, Duration.ofSeconds(30))).as("re-entering tryLock(0, 30 s)")
                    .isTrue();
            assertThat(lock.getHoldCount()).isEqualTo(5);
            LockHandle handle = lock.acquire();
            assertThat(lock.getHoldCount()).isEqualTo(6);

            handle.close();
            for (int expected = 5; expected >= 1; expected--) {
                assertThat(lock.getHoldCount()).as("hold count after %d releases", 6 - expected).isEqualTo(expected);
                assertThat(lock.isHeldByCurrentThread()).as("still held with hold count %d", expected).isTrue();
                assertThat(other.tryLock()).as("another provider's tryLock() with hold count %d", expected)
                        .isFalse();
                lock.unlock();
            }
            assertThat(lock.getHoldCount()).isZero();
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            assertThat(other.tryLock()).as("another provider's tryLock() after the last unlock").isTrue();
            other.unlock();
        }

        @Test
        @DisplayName("re-entering and leaving a held lock costs no store operation and keeps the token")
        void reentryCostsNoStoreOperations() throws Exception {
            // A long lease keeps the renewer out of the measured window.
            DistributedLock lock = open(b -> b.leaseTime(Duration.ofSeconds(60))).getLock("reentrant-free");
            long beforeOuter = storeOperationCount();
            lock.lock();
            long afterOuter = storeOperationCount();
            assertThat(afterOuter).as("storeOperationCount() must count the outermost acquisition "
                    + "(or the hook does not measure the store)").isGreaterThan(beforeOuter);
            long token = lock.fencingToken();

            int rounds = 20;
            List<LockHandle> handles = new ArrayList<>();
            for (int i = 0; i < rounds; i++) {
                lock.lock();
                assertThat(lock.tryLock()).isTrue();
                assertThat(lock.tryLock(0, TimeUnit.SECONDS)).isTrue();
                assertThat(lock.tryLock(1, TimeUnit.SECONDS)).isTrue();
                assertThat(lock.tryLock(Duration.ZERO, Duration.ofSeconds(5))).isTrue();
                lock.lockInterruptibly();
                handles.add(lock.acquire());
                handles.add(lock.tryAcquire(Duration.ZERO).orElseThrow());
                assertThat(lock.fencingToken()).as("token after re-entry").isEqualTo(token);
                assertThat(lock.isHeldByCurrentThread()).isTrue();
            }
            int reentries = rounds * 8;
            assertThat(lock.getHoldCount()).isEqualTo(1 + reentries);
            for (LockHandle handle : handles) {
                assertThat(handle.fencingToken()).isEqualTo(token);
                handle.close();
            }
            for (int i = 0; i < rounds * 6; i++) {
                lock.unlock();
            }
            long afterInner = storeOperationCount();
            assertThat(afterInner - afterOuter).as("store operations for %d re-entries and their unlocks", reentries)
                    .isZero();
            assertThat(lock.getHoldCount()).isEqualTo(1);
            assertThat(lock.fencingToken()).isEqualTo(token);

            lock.unlock();
            assertThat(storeOperationCount()).as("the outermost unlock reaches the store").isGreaterThan(afterInner);
            assertThat(lock.getHoldCount()).isZero();
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Timeouts and interrupts
    // ------------------------------------------------------------------------------------------------------

    /** Waiting: tryLock never waits, timed waits end, lock() ignores interrupts, lockInterruptibly() does not. */
    @Nested
    @DisplayName("timeouts and interrupts")
    public class TimeoutsAndInterrupts {

        @Test
        @DisplayName("tryLock() does not wait for another owner")
        void tryLockNeverWaits() {
            DistributedLock held = open().getLock("busy");
            DistributedLock lock = open().getLock("busy");
            held.lock();
            long start = System.nanoTime();
            assertThat(lock.tryLock()).isFalse();
            assertWithin(start, opBound(), "tryLock() on a held lock");
            held.unlock();
        }

        @Test
        @DisplayName("tryLock(t) gives up after at least t, and within t plus the operation timeout")
        void timedTryLockGivesUp() throws Exception {
            DistributedLock held = open().getLock("busy");
            DistributedLock lock = open().getLock("busy");
            held.lock();
            Duration wait = Duration.ofMillis(300);
            long start = System.nanoTime();
            assertThat(lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS)).isFalse();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("time tryLock(300 ms) waited")
                    .isGreaterThanOrEqualTo(wait);
            assertWithin(start, waitBound(wait), "tryLock(300 ms) on a held lock");

            start = System.nanoTime();
            assertThat(lock.tryAcquire(wait)).as("tryAcquire(300 ms) on a held lock").isEmpty();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(wait);
            assertWithin(start, waitBound(wait), "tryAcquire(300 ms) on a held lock");
            held.unlock();
        }

        @Test
        @DisplayName("tryLock(t) gets the lock when it is released during the wait")
        void timedTryLockSucceedsWhenReleased() throws Exception {
            DistributedLock held = open().getLock("handoff");
            DistributedLock lock = open().getLock("handoff");
            held.lock();
            Future<Boolean> waiting = actor("waiter").submit(() -> {
                boolean got = lock.tryLock(30, TimeUnit.SECONDS);
                if (got) {
                    lock.unlock();
                }
                return got;
            });
            Thread.sleep(200);
            held.unlock();
            assertThat(await(waiting, waitBound(Duration.ZERO), "tryLock(30 s) after release")).isTrue();
        }

        @Test
        @DisplayName("a zero wait is one attempt: tryLock(0, unit) and tryLock(Duration.ZERO, lease)")
        void zeroWaitIsOneAttempt() throws Exception {
            DistributedLock held = open().getLock("zero");
            DistributedLock lock = open().getLock("zero");
            assertThat(lock.tryLock(0, TimeUnit.SECONDS)).as("tryLock(0 s) on a free lock").isTrue();
            lock.unlock();
            assertThat(lock.tryLock(Duration.ZERO, Duration.ofSeconds(10))).as("tryLock(0, 10 s) on a free lock")
                    .isTrue();
            lock.unlock();
            held.lock();
            long start = System.nanoTime();
            assertThat(lock.tryLock(0, TimeUnit.NANOSECONDS)).as("tryLock(0 ns) on a held lock").isFalse();
            assertThat(lock.tryLock(Duration.ZERO, Duration.ofSeconds(10))).as("tryLock(0, 10 s) on a held lock")
                    .isFalse();
            assertWithin(start, opBound().plus(opBound()), "two zero-wait attempts");
            held.unlock();
        }

        @Test
        @DisplayName("lock() is not interruptible and keeps the interrupt status")
        void lockIsNotInterruptible() throws Exception {
            DistributedLock held = open().getLock("uninterruptible");
            DistributedLock lock = open().getLock("uninterruptible");
            held.lock();
            Actor waiter = actor("waiter");
            CountDownLatch entering = new CountDownLatch(1);
            Future<Outcome> waited = waiter.submit(() -> {
                entering.countDown();
                lock.lock();
                Outcome outcome = new Outcome(true, Thread.currentThread().isInterrupted(), lock.getHoldCount());
                Thread.interrupted();
                lock.unlock();
                return outcome;
            });
            entering.await();
            waiter.awaitWaiting(Duration.ofSeconds(1));
            waiter.interrupt();
            Thread.sleep(300);
            assertThat(waited.isDone()).as("lock() returned (or threw) after an interrupt while the lock was held "
                    + "elsewhere").isFalse();
            held.unlock();
            Outcome outcome = await(waited, waitBound(Duration.ZERO), "lock() after release");
            assertThat(outcome.holdCount()).as("hold count when lock() returned").isEqualTo(1);
            assertThat(outcome.interrupted()).as("interrupt status when lock() returned").isTrue();
        }

        @Test
        @DisplayName("lock() with the interrupt status already set acquires, keeps it, and unlock() still works")
        void lockWithInterruptStatusSet() throws Exception {
            DistributedLock lock = open().getLock("flagged");
            DistributedLock other = open().getLock("flagged");
            Outcome outcome = actor("flagged").call(opBound().plus(opBound()), () -> {
                Thread.currentThread().interrupt();
                lock.lock();
                boolean interrupted = Thread.currentThread().isInterrupted();
                int holds = lock.getHoldCount();
                lock.unlock();
                boolean stillInterrupted = Thread.interrupted();
                return new Outcome(holds == 1 && lock.getHoldCount() == 0, interrupted && stillInterrupted, holds);
            });
            assertThat(outcome.holdCount()).as("hold count after lock() with interrupt status set").isEqualTo(1);
            assertThat(outcome.interrupted()).as("interrupt status kept through lock() and unlock()").isTrue();
            assertThat(outcome.acquired()).as("released by unlock() with interrupt status set").isTrue();
            assertThat(other.tryLock()).as("another provider's tryLock() afterwards").isTrue();
            other.unlock();
        }

        @Test
        @DisplayName("lockInterruptibly() with the interrupt status set throws at once and holds nothing")
        void lockInterruptiblyWithInterruptStatusSet() throws Exception {
            DistributedLock lock = open().getLock("interruptible");
            DistributedLock held = open().getLock("interruptible-held");
            DistributedLock heldHere = open().getLock("interruptible-held");
            heldHere.lock();
            Actor caller = actor("caller");
            for (DistributedLock target : List.of(lock, held)) {
                Throwable thrown = caller.failureOf(Duration.ofSeconds(2), () -> {
                    Thread.currentThread().interrupt();
                    try {
                        target.lockInterruptibly();
                    } finally {
                        Thread.interrupted();
                    }
                });
                assertThat(thrown).as("lockInterruptibly() on '%s' with interrupt status set", target.name())
                        .isInstanceOf(InterruptedException.class);
                assertThat(caller.<Integer>call(opBound(), target::getHoldCount)).isZero();
            }
            heldHere.unlock();
            assertThat(heldNames(namespace())).as("held names after the interrupted calls").isEmpty();
        }

        @Test
        @DisplayName("lockInterruptibly() and tryLock(t) react promptly to an interrupt while waiting")
        void interruptWhileWaiting() throws Exception {
            DistributedLock held = open().getLock("wait");
            LockProvider waiters = open();
            DistributedLock lock = waiters.getLock("wait");
            held.lock();
            Map<String, Executable> calls = Map.of(
                    "lockInterruptibly()", lock::lockInterruptibly,
                    "tryLock(60 s)", () -> lock.tryLock(60, TimeUnit.SECONDS),
                    "tryLock(60 s, 60 s lease)", () -> lock.tryLock(Duration.ofSeconds(60), Duration.ofSeconds(60)));
            for (Map.Entry<String, Executable> call : calls.entrySet()) {
                Actor waiter = actor("waiter " + call.getKey());
                CountDownLatch entering = new CountDownLatch(1);
                Future<Integer> waited = waiter.submit(() -> {
                    entering.countDown();
                    try {
                        call.getValue().execute();
                    } catch (InterruptedException expected) {
                        return lock.getHoldCount();
                    } catch (Throwable t) {
                        throw new AssertionError(call.getKey() + " threw " + t + " instead of InterruptedException", t);
                    }
                    throw new AssertionError(call.getKey() + " returned although the lock was held elsewhere");
                });
                entering.await();
                waiter.awaitWaiting(Duration.ofSeconds(1));
                long start = System.nanoTime();
                waiter.interrupt();
                int holds = await(waited, Duration.ofSeconds(2), call.getKey() + " after an interrupt");
                assertWithin(start, Duration.ofSeconds(2), call.getKey() + " reacting to an interrupt");
                assertThat(holds).as("hold count after the interrupted %s", call.getKey()).isZero();
            }
            assertThat(held.isHeldByCurrentThread()).isTrue();
            held.unlock();
            DistributedLock check = open().getLock("wait");
            assertThat(check.tryLock()).as("tryLock() after the interrupted waiters gave up").isTrue();
            check.unlock();
        }

        @Test
        @DisplayName("an interrupt at the moment of the grant either acquires or leaves nothing held (40 races)")
        void interruptAtTheMomentOfTheGrant() throws Exception {
            DistributedLock holder = open().getLock("race");
            // a waiter blocked in a database lock wait is RUNNABLE in a socket read, not WAITING: count it too
            AtomicInteger waitsInStore = new AtomicInteger();
            DistributedLock waiterLock = open(b -> b.storeWrapper(store -> countWaitsInStore(store, waitsInStore)))
                    .getLock("race");
            DistributedLock check = open().getLock("race");
            Actor waiter = actor("racing waiter");
            Actor interrupter = actor("interrupter");
            int acquired = 0;
            int interrupted = 0;
            for (int round = 0; round < 40; round++) {
                holder.lock();
                CountDownLatch entering = new CountDownLatch(1);
                CountDownLatch fired = new CountDownLatch(1);
                Future<Outcome> waited = waiter.submit(() -> {
                    entering.countDown();
                    try {
                        waiterLock.lockInterruptibly();
                    } catch (InterruptedException e) {
                        return new Outcome(false, true, waiterLock.getHoldCount());
                    }
                    boolean held = waiterLock.isHeldByCurrentThread();
                    int holds = waiterLock.getHoldCount();
                    // Let the racing interrupt land before clearing it, so unlock() runs without it.
                    while (fired.getCount() > 0) {
                        Thread.onSpinWait();
                    }
                    Thread.interrupted();
                    waiterLock.unlock();
                    return new Outcome(held, false, holds);
                });
                entering.await();
                waiter.awaitWaiting(Duration.ofMillis(500), () -> waitsInStore.get() > 0);
                long delayNanos = TimeUnit.MICROSECONDS.toNanos((round % 5) * 150L);
                boolean interruptFirst = round % 2 == 1;
                CyclicBarrier go = new CyclicBarrier(2);
                Future<Void> interrupting = interrupter.submit(() -> {
                    go.await();
                    if (!interruptFirst) {
                        spin(delayNanos);
                    }
                    waiter.interrupt();
                    fired.countDown();
                    return null;
                });
                go.await();
                if (interruptFirst) {
                    spin(delayNanos);
                }
                holder.unlock();
                await(interrupting, opBound(), "interrupter");
                Outcome outcome = await(waited, waitBound(Duration.ZERO), "racing lockInterruptibly() in round "
                        + round);
                if (outcome.acquired()) {
                    acquired++;
                    assertThat(outcome.holdCount()).as("hold count of a waiter that got the lock").isEqualTo(1);
                } else {
                    interrupted++;
                    assertThat(outcome.holdCount()).as("hold count after InterruptedException in round %d", round)
                            .isZero();
                    assertThat(check.tryLock()).as("another provider's tryLock() right after the waiter threw "
                            + "InterruptedException in round %d: the grant must not leak", round).isTrue();
                    check.unlock();
                }
                assertThat(heldNames(namespace())).as("held names after round %d", round).isEmpty();
            }
            assertThat(acquired + interrupted).isEqualTo(40);
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Lease expiry and renewal
    // ------------------------------------------------------------------------------------------------------

    /** Leases: explicit leases end, renewed leases do not, unrenewed providers' leases end. */
    @Nested
    @DisplayName("lease expiry and renewal")
    public class LeaseExpiryAndRenewal {

        @Test
        @DisplayName("an explicit lease ends by itself: another provider acquires, the first holder has lost it")
        void explicitLeaseExpires() throws Exception {
            LockProvider firstProvider = open();
            DistributedLock first = firstProvider.getLock("leased");
            DistributedLock second = open().getLock("leased");
            // a token from before the leased hold bounds its token from below: reading the leased hold's own
            // token would race with its 300 ms lease, which a slow acquisition may already have used up
            second.lock();
            long earlierToken = second.fencingToken();
            second.unlock();
            Duration lease = Duration.ofMillis(300);
            assertThat(first.tryLock(Duration.ZERO, lease)).isTrue();
            awaitTrue("another provider acquires after the first holder's 300 ms lease ended",
                    lease.plus(opBound()).plus(renewInterval(firstProvider)), second::tryLock);
            assertThat(first.isHeldByCurrentThread()).as("first holder's isHeldByCurrentThread() once another "
                    + "provider holds the lock").isFalse();
            awaitLoss(firstProvider, "leased");
            assertThatThrownBy(first::fencingToken).isInstanceOf(LockLostException.class);
            assertThatThrownBy(first::unlock).as("unlock() of the expired hold").isInstanceOf(LockLostException.class);
            assertThatThrownBy(first::unlock).as("second unlock() once the loss was reported")
                    .isInstanceOf(IllegalMonitorStateException.class).isNotInstanceOf(LockLostException.class);
            assertThat(second.fencingToken()).as("token of the new hold").isGreaterThan(earlierToken);
            assertThat(second.isHeldByCurrentThread()).isTrue();
            second.unlock();
            assertLostOnce(firstProvider, "leased");
        }

        @Test
        @DisplayName("lock() and tryLock(t) holds are renewed: held over 3.5 lease periods of 1 s")
        void renewedLeasesKeepTheLock() throws Exception {
            LockProvider provider = open(b -> b.leaseTime(Duration.ofSeconds(1)));
            DistributedLock byLock = provider.getLock("renewed-lock");
            DistributedLock byTryLock = provider.getLock("renewed-trylock");
            LockProvider other = open();
            byLock.lock();
            assertThat(byTryLock.tryLock(1, TimeUnit.SECONDS)).isTrue();
            Thread.sleep(3500);
            for (DistributedLock lock : List.of(byLock, byTryLock)) {
                assertThat(lock.isHeldByCurrentThread()).as("'%s' held after 3.5 leases", lock.name()).isTrue();
                assertThat(other.getLock(lock.name()).tryLock()).as("another provider's tryLock() of '%s'",
                        lock.name()).isFalse();
            }
            assertThat(losses(provider).all()).as("losses reported for renewed holds").isEmpty();
            byLock.unlock();
            byTryLock.unlock();
            for (DistributedLock lock : List.of(byLock, byTryLock)) {
                DistributedLock mine = other.getLock(lock.name());
                assertThat(mine.tryLock()).as("another provider's tryLock() of '%s' after unlock", lock.name())
                        .isTrue();
                mine.unlock();
            }
        }

        @Test
        @DisplayName("with renewLeases(false), a lock() hold ends with its lease")
        void unrenewedLeaseExpires() throws Exception {
            LockProvider provider = open(b -> b.leaseTime(Duration.ofMillis(500)).renewLeases(false));
            DistributedLock lock = provider.getLock("unrenewed");
            DistributedLock other = open().getLock("unrenewed");
            lock.lock();
            awaitTrue("another provider acquires after the unrenewed 500 ms lease ended",
                    Duration.ofMillis(500).plus(opBound()), other::tryLock);
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            assertLostOnce(provider, "unrenewed");
            assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
            other.unlock();
        }

        @Test
        @DisplayName("re-entering a renewed hold with a short explicit lease keeps the renewed hold")
        void explicitReentryKeepsTheRenewedHold() throws Exception {
            LockProvider provider = open(b -> b.leaseTime(Duration.ofSeconds(1)));
            DistributedLock lock = provider.getLock("kept");
            DistributedLock other = open().getLock("kept");
            lock.lock();
            assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(100))).isTrue();
            Thread.sleep(1500);
            assertThat(lock.isHeldByCurrentThread()).isTrue();
            assertThat(lock.getHoldCount()).isEqualTo(2);
            assertThat(other.tryLock()).as("another provider's tryLock() 1.5 s later").isFalse();
            lock.unlock();
            lock.unlock();
            assertThat(other.tryLock()).isTrue();
            other.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Loss notification
    // ------------------------------------------------------------------------------------------------------

    /** A hold that disappears from the store is reported once and cleared. */
    @Nested
    @DisplayName("loss notification")
    public class LossNotification {

        @Test
        @DisplayName("a hold deleted in the store is reported once, fails fencingToken() and unlock(), and can be "
                + "taken again")
        void deletedHoldIsReported() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("deleted");
            DistributedLock other = open().getLock("deleted");
            lock.lock();
            long token = lock.fencingToken();
            forceRelease(namespace(), "deleted");
            assertThat(other.tryLock()).as("another provider's tryLock() after the forced release").isTrue();
            long otherToken = other.fencingToken();
            assertThat(otherToken).isGreaterThan(token);
            awaitLoss(provider, "deleted");
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            assertThat(lock.getHoldCount()).isZero();
            assertThatThrownBy(lock::fencingToken).isInstanceOf(LockLostException.class);
            assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
            assertThat(other.isHeldByCurrentThread()).as("the new owner still holds after the loser's unlock()")
                    .isTrue();
            assertThat(lock.tryLock()).as("loser's tryLock() while the new owner holds").isFalse();
            other.unlock();
            lock.lock();
            assertThat(lock.fencingToken()).as("token of the loser's new hold").isGreaterThan(otherToken);
            lock.unlock();
            assertLostOnce(provider, "deleted");
        }

        @Test
        @DisplayName("losing a re-entered hold clears it entirely: one LockLostException, then plain "
                + "IllegalMonitorStateException")
        void lossClearsReentrantHold() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("deep");
            lock.lock();
            lock.lock();
            lock.lock();
            forceRelease(namespace(), "deep");
            awaitLoss(provider, "deep");
            assertThat(lock.getHoldCount()).isZero();
            assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
            assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class)
                    .isNotInstanceOf(LockLostException.class);
            lock.lock();
            assertThat(lock.getHoldCount()).isEqualTo(1);
            lock.unlock();
            assertLostOnce(provider, "deep");
        }

        @Test
        @DisplayName("only the deleted hold is reported; the provider's other holds stay")
        void onlyTheDeletedHoldIsLost() throws Exception {
            LockProvider provider = open();
            DistributedLock gone = provider.getLock("gone");
            DistributedLock kept = provider.getLock("kept");
            gone.lock();
            kept.lock();
            forceRelease(namespace(), "gone");
            awaitLoss(provider, "gone");
            Thread.sleep(renewInterval(provider).multipliedBy(2).toMillis());
            assertThat(losses(provider).count("kept")).as("losses reported for the untouched hold").isZero();
            assertThat(kept.isHeldByCurrentThread()).isTrue();
            assertThat(open().getLock("kept").tryLock()).as("another provider's tryLock() of the untouched hold")
                    .isFalse();
            kept.unlock();
            assertThatThrownBy(gone::unlock).isInstanceOf(LockLostException.class);
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Fencing
    // ------------------------------------------------------------------------------------------------------

    /** Fencing tokens grow with every fresh acquisition and let a resource reject stale holders. */
    @Nested
    @DisplayName("fencing")
    public class Fencing {

        @Test
        @DisplayName("tokens strictly increase over 30 acquisitions by 3 providers; handles report the same token")
        void tokensIncreaseAcrossProviders() throws Exception {
            List<DistributedLock> locks = List.of(open().getLock("fenced"), open().getLock("fenced"),
                    open().getLock("fenced"));
            long previous = Long.MIN_VALUE;
            for (int i = 0; i < 30; i++) {
                DistributedLock lock = locks.get(i % locks.size());
                long token;
                if (i % 2 == 0) {
                    lock.lock();
                    token = lock.fencingToken();
                    lock.unlock();
                } else {
                    try (LockHandle handle = lock.acquire()) {
                        token = handle.fencingToken();
                        assertThat(lock.fencingToken()).as("lock's token during the handle's hold").isEqualTo(token);
                        assertThat(handle.lock()).isEqualTo(lock);
                    }
                }
                assertThat(token).as("token of acquisition %d", i).isGreaterThan(previous);
                previous = token;
            }
        }

        @Test
        @DisplayName("a re-entrant acquisition keeps the token")
        void reentryKeepsTheToken() throws Exception {
            DistributedLock lock = open().getLock("fenced-reentry");
            lock.lock();
            long token = lock.fencingToken();
            try (LockHandle inner = lock.acquire()) {
                assertThat(inner.fencingToken()).isEqualTo(token);
                assertThat(lock.tryLock(1, TimeUnit.SECONDS)).isTrue();
                assertThat(lock.fencingToken()).isEqualTo(token);
                lock.unlock();
            }
            assertThat(lock.fencingToken()).isEqualTo(token);
            lock.unlock();
        }

        @Test
        @DisplayName("fencingToken() without a hold throws IllegalMonitorStateException")
        void tokenWithoutHold() {
            DistributedLock lock = open().getLock("fenced-free");
            assertThatThrownBy(lock::fencingToken).isInstanceOf(IllegalMonitorStateException.class)
                    .isNotInstanceOf(LockLostException.class);
        }

        @Test
        @DisplayName("a fenced resource rejects the late write of a holder whose lease expired")
        void fencedResourceRejectsStaleHolder() throws Exception {
            FencedResource<String> resource = new FencedResource<>();
            LockProvider aProvider = open();
            DistributedLock a = aProvider.getLock("fenced-resource");
            DistributedLock b = open().getLock("fenced-resource");
            // the acquisition returns within the operation timeout or fails, so a lease of twice that leaves A at
            // least one operation timeout to read its token and write with it before the lease ends
            Duration lease = operationTimeout().multipliedBy(2);
            assertThat(a.tryLock(Duration.ZERO, lease)).isTrue();
            long aToken = a.fencingToken();
            assertThat(resource.write(aToken, "A's first write")).isTrue();
            awaitTrue("B acquires after A's " + lease.toMillis() + " ms lease ended",
                    lease.plus(opBound()).plus(renewInterval(aProvider)), b::tryLock);
            long bToken = b.fencingToken();
            assertThat(bToken).isGreaterThan(aToken);
            resource.writeOrThrow(bToken, "B's write");
            assertThat(resource.write(aToken, "A's late write")).as("A's late write with token %d after B's %d",
                    aToken, bToken).isFalse();
            assertThatThrownBy(() -> resource.writeOrThrow(aToken, "A's late write"))
                    .isInstanceOf(FencedResource.StaleTokenException.class);
            assertThat(resource.read()).contains("B's write");
            assertThat(resource.acceptedWrites()).isEqualTo(2);
            assertThat(resource.rejectedWrites()).isEqualTo(2);
            b.unlock();
            assertThatThrownBy(a::unlock).isInstanceOf(LockLostException.class);
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Unlock rules
    // ------------------------------------------------------------------------------------------------------

    /** Who may unlock, and what unlocking twice or too late does. */
    @Nested
    @DisplayName("unlock rules")
    public class UnlockRules {

        @Test
        @DisplayName("unlock() without a hold throws IllegalMonitorStateException")
        void unlockWithoutLock() {
            DistributedLock lock = open().getLock("never-locked");
            assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class)
                    .isNotInstanceOf(LockLostException.class);
        }

        @Test
        @DisplayName("unlock() from another thread throws IllegalMonitorStateException and the owner keeps the lock")
        void unlockFromAnotherThread() throws Exception {
            DistributedLock lock = open().getLock("owned");
            DistributedLock other = open().getLock("owned");
            lock.lock();
            lock.lock();
            Throwable thrown = actor("stranger").failureOf(opBound(), lock::unlock);
            assertThat(thrown).isInstanceOf(IllegalMonitorStateException.class)
                    .isNotInstanceOf(LockLostException.class);
            assertThat(lock.getHoldCount()).as("owner's hold count after a stranger's unlock()").isEqualTo(2);
            assertThat(other.tryLock()).isFalse();
            lock.unlock();
            lock.unlock();
        }

        @Test
        @DisplayName("a second unlock() throws IllegalMonitorStateException")
        void doubleUnlock() {
            DistributedLock lock = open().getLock("twice");
            lock.lock();
            lock.unlock();
            assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class)
                    .isNotInstanceOf(LockLostException.class);
        }

        @Test
        @DisplayName("unlock() after the hold expired throws LockLostException and leaves the new owner's hold")
        void lateUnlockDoesNotFreeTheNewOwner() throws Exception {
            LockProvider firstProvider = open();
            DistributedLock first = firstProvider.getLock("late");
            DistributedLock second = open().getLock("late");
            DistributedLock third = open().getLock("late");
            assertThat(first.tryLock(Duration.ZERO, Duration.ofMillis(300))).isTrue();
            awaitTrue("another provider acquires after the 300 ms lease ended",
                    Duration.ofMillis(300).plus(opBound()).plus(renewInterval(firstProvider)), second::tryLock);
            assertThatThrownBy(first::unlock).isInstanceOf(LockLostException.class);
            assertThat(second.isHeldByCurrentThread()).isTrue();
            assertThat(third.tryLock()).as("a third provider's tryLock() after the stale unlock()").isFalse();
            assertThat(second.isLocked()).isTrue();
            second.unlock();
        }

        @Test
        @DisplayName("LockHandle.close() releases exactly once; a second close() does nothing")
        void handleClosesOnce() throws Exception {
            DistributedLock lock = open().getLock("handle");
            DistributedLock other = open().getLock("handle");
            lock.lock();
            LockHandle handle = lock.acquire();
            assertThat(handle.lock()).isEqualTo(lock);
            assertThat(lock.getHoldCount()).isEqualTo(2);
            handle.close();
            assertThat(lock.getHoldCount()).isEqualTo(1);
            handle.close();
            assertThat(lock.getHoldCount()).as("hold count after closing the handle twice").isEqualTo(1);
            assertThat(other.tryLock()).isFalse();
            Optional<LockHandle> second = lock.tryAcquire(Duration.ofSeconds(1));
            assertThat(second).isPresent();
            second.get().close();
            second.get().close();
            assertThat(lock.getHoldCount()).isEqualTo(1);
            lock.unlock();
            assertThat(other.tryAcquire(Duration.ZERO)).as("another provider's tryAcquire(0) after release")
                    .hasValueSatisfying(LockHandle::close);
        }

        @Test
        @DisplayName("LockHandle.close() from another thread throws IllegalMonitorStateException and keeps the hold")
        void handleClosedByAnotherThread() throws Exception {
            DistributedLock lock = open().getLock("handle-thread");
            LockHandle handle = lock.acquire();
            Throwable thrown = actor("stranger").failureOf(opBound(), handle::close);
            assertThat(thrown).isInstanceOf(IllegalMonitorStateException.class);
            assertThat(lock.getHoldCount()).isEqualTo(1);
            handle.close();
            assertThat(lock.getHoldCount()).isZero();
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Names and bad input
    // ------------------------------------------------------------------------------------------------------

    /** Which names are locks, which are rejected, and how bad arguments are reported. */
    @Nested
    @DisplayName("names and bad input")
    public class NamesAndBadInput {

        private static final List<String> TRICKY_NAMES = List.of("/", "../", "../../etc/passwd", "a/b", "{}", "{tag}",
                "a{b}c", "'", "\"", "'; DROP TABLE locks; --", "%", "_", "*", "?", ".", "..", "\\", ":",
                "日本語のロック", "🔒🔑", " ", "   ", "a ", "a", "A", "Straße", "STRASSE");

        @Test
        @DisplayName("a null name is a NullPointerException, an empty one an IllegalArgumentException")
        void nullAndEmptyNames() {
            LockProvider provider = open();
            assertThatThrownBy(() -> provider.getLock(null)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.getLock("")).isInstanceOf(IllegalArgumentException.class);
        }

        @Test
        @DisplayName("names of 1 and 255 characters (and 255 non-ASCII code points) are locks")
        void shortestAndLongestNames() throws Exception {
            LockProvider first = open();
            LockProvider second = open();
            for (String name : List.of("x", "x".repeat(255), "é".repeat(255), "🔒".repeat(255))) {
                DistributedLock lock = first.getLock(name);
                assertThat(lock.name()).isEqualTo(name);
                lock.lock();
                assertThat(second.getLock(name).tryLock()).as("another provider's tryLock() of %s", show(name))
                        .isFalse();
                lock.unlock();
                DistributedLock other = second.getLock(name);
                assertThat(other.tryLock()).as("tryLock() of %s after release", show(name)).isTrue();
                other.unlock();
            }
        }

        @Test
        @DisplayName("names over 255 code points, with control characters or lone surrogates are rejected")
        void invalidNames() {
            LockProvider provider = open();
            SoftAssertions softly = new SoftAssertions();
            for (String tooLong : List.of("x".repeat(256), "x".repeat(10_000), "🔒".repeat(256))) {
                softly.assertThatThrownBy(() -> provider.getLock(tooLong)).as("getLock(%s)", show(tooLong))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("255");
            }
            for (String bad : List.of("\n", "a\nb", "\u0000", "a\u0000", "\u007f", "\t", "\r", "\u0085",
                    "\uD800", "a\uDC00b", "x\uD83D")) {
                softly.assertThatThrownBy(() -> provider.getLock(bad)).as("getLock(%s)", show(bad))
                        .isInstanceOf(IllegalArgumentException.class);
            }
            softly.assertAll();
        }

        @Test
        @DisplayName("path, brace, quote, SQL, wildcard, Unicode and whitespace names are distinct locks")
        void trickyNamesAreDistinctLocks() throws Exception {
            LockProvider first = open();
            LockProvider second = open();
            SoftAssertions softly = new SoftAssertions();
            for (String name : TRICKY_NAMES) {
                softly.assertThat(first.getLock(name).tryLock()).as("tryLock() of %s", show(name)).isTrue();
            }
            softly.assertAll();
            assertThat(heldNames(namespace())).as("heldNames() with every tricky name held")
                    .containsExactlyInAnyOrderElementsOf(TRICKY_NAMES);
            for (String name : TRICKY_NAMES) {
                softly.assertThat(second.getLock(name).tryLock()).as("another provider's tryLock() of %s", show(name))
                        .isFalse();
            }
            softly.assertAll();

            // The same names in another namespace are other locks.
            String otherNamespace = namespace() + "-other";
            LockProvider elsewhere = open(b -> b.namespace(otherNamespace));
            for (String name : TRICKY_NAMES) {
                DistributedLock lock = elsewhere.getLock(name);
                softly.assertThat(lock.tryLock()).as("tryLock() of %s in another namespace", show(name)).isTrue();
            }
            softly.assertAll();
            assertThat(heldNames(otherNamespace)).containsExactlyInAnyOrderElementsOf(TRICKY_NAMES);
            for (String name : TRICKY_NAMES) {
                elsewhere.getLock(name).unlock();
                first.getLock(name).unlock();
            }

            // Holding any one never blocks another.
            for (String held : TRICKY_NAMES) {
                DistributedLock holding = first.getLock(held);
                holding.lock();
                for (String probe : TRICKY_NAMES) {
                    if (!probe.equals(held)) {
                        DistributedLock lock = second.getLock(probe);
                        boolean got = lock.tryLock();
                        softly.assertThat(got).as("tryLock() of %s while %s is held", show(probe), show(held))
                                .isTrue();
                        if (got) {
                            lock.unlock();
                        }
                    }
                }
                holding.unlock();
            }
            softly.assertAll();
        }

        @Test
        @DisplayName("bad waits, leases and units are rejected without acquiring anything")
        void badDurationsAndUnits() {
            DistributedLock lock = open().getLock("arguments");
            SoftAssertions softly = new SoftAssertions();
            softly.assertThatThrownBy(() -> lock.tryLock(-1, TimeUnit.SECONDS)).as("tryLock(-1, SECONDS)")
                    .isInstanceOf(IllegalArgumentException.class);
            softly.assertThatThrownBy(() -> lock.tryLock(1, null)).as("tryLock(1, null)")
                    .isInstanceOf(NullPointerException.class);
            softly.assertThatThrownBy(() -> lock.tryLock(null, Duration.ofSeconds(1))).as("tryLock(null, 1 s)")
                    .isInstanceOf(NullPointerException.class);
            softly.assertThatThrownBy(() -> lock.tryLock(Duration.ZERO, null)).as("tryLock(0, null)")
                    .isInstanceOf(NullPointerException.class);
            softly.assertThatThrownBy(() -> lock.tryLock(Duration.ofSeconds(-1), Duration.ofSeconds(1)))
                    .as("tryLock(-1 s, 1 s)").isInstanceOf(IllegalArgumentException.class);
            softly.assertThatThrownBy(() -> lock.tryLock(Duration.ZERO, Duration.ZERO)).as("tryLock(0, 0)")
                    .isInstanceOf(IllegalArgumentException.class);
            softly.assertThatThrownBy(() -> lock.tryLock(Duration.ZERO, Duration.ofSeconds(-1)))
                    .as("tryLock(0, -1 s)").isInstanceOf(IllegalArgumentException.class);
            softly.assertThatThrownBy(() -> lock.tryAcquire(null)).as("tryAcquire(null)")
                    .isInstanceOf(NullPointerException.class);
            softly.assertThatThrownBy(() -> lock.tryAcquire(Duration.ofSeconds(-1))).as("tryAcquire(-1 s)")
                    .isInstanceOf(IllegalArgumentException.class);
            softly.assertThatThrownBy(lock::newCondition).as("newCondition()")
                    .isInstanceOf(UnsupportedOperationException.class);
            softly.assertAll();
            assertThat(lock.getHoldCount()).as("hold count after the rejected calls").isZero();
            assertThat(heldNames(namespace())).as("held names after the rejected calls").isEmpty();
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Close and leaks
    // ------------------------------------------------------------------------------------------------------

    /** Closing a provider releases its holds, wakes its waiters and ends its use; identities and lock objects. */
    @Nested
    @DisplayName("close and leaks")
    public class CloseAndLeaks {

        @Test
        @DisplayName("close() releases every hold made through the provider, by any thread")
        void closeReleasesHolds() throws Exception {
            LockProvider provider = open();
            LockProvider other = open();
            DistributedLock reentered = provider.getLock("close-reentered");
            DistributedLock leased = provider.getLock("close-leased");
            DistributedLock elsewhere = provider.getLock("close-other-thread");
            reentered.lock();
            reentered.lock();
            assertThat(leased.tryLock(Duration.ZERO, Duration.ofSeconds(60))).isTrue();
            Actor holder = actor("holder");
            holder.run(opBound(), elsewhere::lock);

            Future<Void> closing = actor("closer").submit(() -> {
                provider.close();
                return null;
            });
            await(closing, opBound().multipliedBy(3), "close() of a provider with 3 holds");
            for (String name : List.of("close-reentered", "close-leased", "close-other-thread")) {
                DistributedLock lock = other.getLock(name);
                assertThat(lock.tryLock()).as("another provider's tryLock() of '%s' right after close()", name)
                        .isTrue();
                lock.unlock();
            }
            assertThat(holder.failureOf(opBound(), elsewhere::unlock)).as("unlock() after close()")
                    .isInstanceOf(IllegalStateException.class);
        }

        @Test
        @DisplayName("close() wakes the provider's waiters with IllegalStateException")
        void closeWakesWaiters() throws Exception {
            DistributedLock held = open().getLock("close-wait");
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("close-wait");
            held.lock();
            Map<String, Executable> calls = Map.of(
                    "lock()", lock::lock,
                    "lockInterruptibly()", lock::lockInterruptibly,
                    "tryLock(60 s)", () -> lock.tryLock(60, TimeUnit.SECONDS));
            Map<String, Future<Throwable>> waiting = new java.util.LinkedHashMap<>();
            for (Map.Entry<String, Executable> call : calls.entrySet()) {
                Actor waiter = actor("waiter " + call.getKey());
                waiting.put(call.getKey(), waiter.submit(() -> {
                    try {
                        call.getValue().execute();
                    } catch (Throwable t) {
                        return t;
                    }
                    return null;
                }));
                waiter.awaitWaiting(Duration.ofSeconds(1));
            }
            Thread.sleep(100);
            provider.close();
            for (Map.Entry<String, Future<Throwable>> entry : waiting.entrySet()) {
                Throwable thrown = await(entry.getValue(), opBound(), entry.getKey() + " of a closed provider");
                assertThat(thrown).as("what a waiting %s got when its provider closed", entry.getKey())
                        .isInstanceOf(IllegalStateException.class);
            }
            assertThat(held.isHeldByCurrentThread()).isTrue();
            held.unlock();
        }

        @Test
        @DisplayName("a closed provider and its locks throw IllegalStateException; closing twice is fine")
        void closedProviderRejectsUse() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("closed");
            provider.close();
            provider.close();
            actor("user").run(opBound().multipliedBy(3), () -> {
                SoftAssertions softly = new SoftAssertions();
                softly.assertThatThrownBy(() -> provider.getLock("closed")).as("getLock()")
                        .isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(lock::lock).as("lock()").isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(lock::lockInterruptibly).as("lockInterruptibly()")
                        .isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(lock::tryLock).as("tryLock()").isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(() -> lock.tryLock(1, TimeUnit.SECONDS)).as("tryLock(1 s)")
                        .isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(() -> lock.tryLock(Duration.ZERO, Duration.ofSeconds(1)))
                        .as("tryLock(0, 1 s)").isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(lock::acquire).as("acquire()").isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(() -> lock.tryAcquire(Duration.ZERO)).as("tryAcquire(0)")
                        .isInstanceOf(IllegalStateException.class);
                softly.assertThatThrownBy(lock::unlock).as("unlock()").isInstanceOf(IllegalStateException.class);
                softly.assertAll();
            });
        }

        @Test
        @DisplayName("clientId() carries at least 128 random bits and differs between providers")
        void clientIdsAreRandom() {
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                LockProvider provider = open();
                ids.add(provider.clientId());
                provider.close();
            }
            assertThat(new HashSet<>(ids)).as("distinct client ids of 20 providers").hasSize(ids.size());
            assertThat(ids).as("client ids").allSatisfy(id -> assertThat(id).isNotBlank());
            assertThat(ids.stream().map(String::length).distinct().count())
                    .as("client ids have one length, so their random part can be located: %s", ids).isEqualTo(1);
            int length = ids.get(0).length();
            int varying = 0;
            boolean allHex = true;
            for (int i = 0; i < length; i++) {
                Set<Character> seen = new HashSet<>();
                for (String id : ids) {
                    seen.add(id.charAt(i));
                }
                if (seen.size() > 1) {
                    varying++;
                    allHex &= seen.stream().allMatch(c -> Character.digit(c, 16) >= 0);
                }
            }
            // 20 samples make a random character position look constant with negligible probability.
            int needed = allHex ? 32 : 22;
            assertThat(varying).as("positions that differ between 20 client ids %s (need %d for 128 bits of %s)",
                    ids, needed, allHex ? "hex" : "base64").isGreaterThanOrEqualTo(needed);
        }

        @Test
        @DisplayName("getLock() with the same name gives an equal lock sharing the holds")
        void sameNameGivesEqualLock() {
            LockProvider provider = open();
            DistributedLock one = provider.getLock("same");
            DistributedLock two = provider.getLock("same");
            assertThat(two).isEqualTo(one);
            assertThat(two.hashCode()).isEqualTo(one.hashCode());
            assertThat(provider.getLock("Same")).isNotEqualTo(one);
            one.lock();
            assertThat(two.isHeldByCurrentThread()).isTrue();
            assertThat(two.getHoldCount()).isEqualTo(1);
            assertThat(two.fencingToken()).isEqualTo(one.fencingToken());
            two.unlock();
            assertThat(one.isHeldByCurrentThread()).isFalse();
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Faults at the store boundary
    // ------------------------------------------------------------------------------------------------------

    /**
     * Faults of single store calls, injected by a {@link FaultyStore} between the machinery and the store: a call
     * that fails, one the store applies whose answer is lost, one that arrives late after later calls of the same
     * client. The store itself stays healthy, so every backend runs this group whatever its store control offers.
     */
    @Nested
    @DisplayName("faults of single store calls")
    public class CallFaults {

        @TestFactory
        @DisplayName("per call fault")
        Stream<DynamicTest> callFaults() {
            if (!runsCallFaults()) {
                return Stream.empty();
            }
            Stream<DynamicTest> reads = !supportsReadWriteLocks() ? Stream.empty() : Stream.of(
                    test("a read acquisition the store applied but answered by a timeout is released in the "
                            + "background: another client writes long before its lease ends",
                            this::readWithLostAnswerIsUndone),
                    test("a read unlock() applied but answered by a timeout ends the read hold: another client "
                            + "writes, and the retried unlock() reports no loss",
                            this::readUnlockWithLostAnswerEndsTheHold),
                    test("2 providers x 2 threads reading and writing under random failed and lost-answer "
                            + "acquisitions and releases: no writer beside anybody",
                            this::randomCallFaultsKeepReadersFromWriters));
            return Stream.concat(Stream.of(
                    test("unlock() whose release was applied but answered by a timeout ends the hold: no re-entry, "
                            + "another client may hold it, and the retried unlock() reports no loss",
                            this::unlockWithLostAnswerEndsTheHold),
                    test("unlock() whose release failed does not keep the lock: the provider's other threads and "
                            + "other clients get it while the owner thread lives on",
                            this::failedUnlockDoesNotLeakTheLock),
                    test("an acquisition the store applied but answered by a timeout is released in the background, "
                            + "long before its lease ends",
                            this::acquisitionWithLostAnswerIsUndone),
                    test("a release that arrives late, after the same client took the lock again, does not free the "
                            + "newer hold",
                            this::lateReleaseDoesNotFreeANewerHold),
                    test("an acquisition attempt that arrives late, while the same client holds the lock again, "
                            + "changes nothing",
                            this::lateAcquisitionDoesNotTouchANewerHold),
                    test("a renewal applied but answered by a timeout, or delayed past the operation timeout, keeps "
                            + "the hold",
                            this::renewalWithLostAnswerKeepsTheHold),
                    test("2 providers x 2 threads under random failed and lost-answer acquisitions and releases "
                            + "never hold the lock at once",
                            this::randomCallFaultsNeverBreakExclusion),
                    test("a lock handed to a waiting thread of the same provider whose take-over fails, is applied "
                            + "and answered by a timeout, or arrives late: the waiter's lock() fails, nothing stays "
                            + "held, and a late take-over changes nothing",
                            this::failedTakeOverLeavesNothingHeld)), reads);
        }

        private void readWithLostAnswerIsUndone() throws Exception {
            lostGrantIsUndone("lost-read", p -> p.getReadWriteLock("lost-read").readLock(),
                    p -> p.getReadWriteLock("lost-read").writeLock());
        }

        private void readUnlockWithLostAnswerEndsTheHold() throws Exception {
            unlockWithLostAnswerEnds("lost-read-release", p -> p.getReadWriteLock("lost-read-release").readLock(),
                    p -> p.getReadWriteLock("lost-read-release").writeLock());
        }

        private void randomCallFaultsKeepReadersFromWriters() throws Exception {
            AtomicInteger readers = new AtomicInteger();
            AtomicInteger writers = new AtomicInteger();
            List<String> violations = new CopyOnWriteArrayList<>();
            underRandomCallFaults((provider, p, t) -> {
                boolean writing = t == 0;
                DistributedReadWriteLock rw = provider.getReadWriteLock("random-rw-faults");
                DistributedLock lock = writing ? rw.writeLock() : rw.readLock();
                String who = "p" + p + (writing ? " writer" : " reader");
                return () -> lockedOnce(lock, () -> {
                    // each side counts itself in before it looks at the other side's count, so of two holds that
                    // overlap, at least one sees the other
                    int w;
                    int r;
                    if (writing) {
                        w = writers.incrementAndGet();
                        r = readers.get();
                    } else {
                        r = readers.incrementAndGet();
                        w = writers.get();
                    }
                    if (writing ? w != 1 || r != 0 : w != 0) {
                        violations.add(who + " got the lock beside " + w + " writer(s), " + r + " reader(s)");
                    }
                    Thread.yield();
                    (writing ? writers : readers).decrementAndGet();
                });
            });
            assertThat(violations).as("a writer beside anybody, or a reader beside a writer").isEmpty();
        }

        /** Makes one worker's lock round: the lock of provider {@code p} (0 or 1) for its thread {@code t}. */
        private interface FaultyWorker {
            Runnable round(LockProvider provider, int p, int t);
        }

        /**
         * Two providers whose acquisitions and releases fail or lose their answer at random (20 %), two threads
         * each running their round 12 times; then every provider must have had faults injected and report no loss.
         */
        private void underRandomCallFaults(FaultyWorker worker) throws Exception {
            Random seeds = new Random(ThreadLocalRandom.current().nextLong());
            List<Future<Void>> workers = new ArrayList<>();
            List<Faulty> faulty = new ArrayList<>();
            int iterations = 12;
            for (int p = 0; p < 2; p++) {
                Faulty provider = openFaulty(UnaryOperator.identity());
                provider.store.randomFaults(0.2, new Random(seeds.nextLong()), FaultyStore.Call.ACQUIRE,
                        FaultyStore.Call.RELEASE, FaultyStore.Call.TAKE_OVER);
                faulty.add(provider);
                for (int t = 0; t < 2; t++) {
                    Runnable round = worker.round(provider.provider, p, t);
                    workers.add(actor("worker-p" + p + "-t" + t).submit(() -> {
                        for (int i = 0; i < iterations; i++) {
                            round.run();
                        }
                        return null;
                    }));
                }
            }
            for (Future<Void> running : workers) {
                await(running, Duration.ofSeconds(60).plus(slack()), "worker of the random-fault run");
            }
            for (Faulty provider : faulty) {
                provider.store.stop();
                assertThat(provider.store.injected(FaultyStore.Fault.FAIL)
                        + provider.store.injected(FaultyStore.Fault.APPLY_THEN_TIMEOUT)).as("faults injected")
                        .isPositive();
                assertThat(losses(provider.provider).all()).as("losses").isEmpty();
            }
        }

        /**
         * Takes {@code lock}, runs {@code inside} and unlocks; an acquisition that fails leaves out the rest, and an
         * unlock of unknown outcome is fine (the thread no longer holds the lock either way).
         */
        private static void lockedOnce(DistributedLock lock, Runnable inside) {
            try {
                lock.lock();
            } catch (LockBackendException e) {
                return; // not acquired
            }
            inside.run();
            try {
                lock.unlock();
            } catch (LockBackendException e) {
                // outcome unknown: the thread no longer holds the lock
            }
        }

        private DynamicTest test(String name, Executable body) {
            return dynamicTest(name, () -> isolated(body));
        }

        private void unlockWithLostAnswerEndsTheHold() throws Exception {
            unlockWithLostAnswerEnds("lost-answer", p -> p.getLock("lost-answer"), p -> p.getLock("lost-answer"));
        }

        /**
         * {@code mine}'s lock of the faulty provider is held and its unlock() applied but answered by a timeout:
         * the hold has ended, {@code rival}'s lock of another client gets it, and the retried unlock() reports no
         * loss.
         */
        private void unlockWithLostAnswerEnds(String name, Function<LockProvider, DistributedLock> mine,
                Function<LockProvider, DistributedLock> rival) throws Exception {
            Faulty faulty = openFaulty(UnaryOperator.identity());
            DistributedLock lock = mine.apply(faulty.provider);
            DistributedLock sentinel = faulty.provider.getLock("sentinel");
            DistributedLock theirs = rival.apply(open());
            Actor holder = actor("holder");
            holder.run(opBound(), () -> {
                lock.lock();
                sentinel.lock(); // keeps renewal rounds going, so that one runs between the failure and the retry
            });
            faulty.store.arm(FaultyStore.Call.RELEASE, name, FaultyStore.Fault.APPLY_THEN_TIMEOUT);
            assertThat(holder.failureOf(opBound(), lock::unlock)).as("unlock() whose answer was lost")
                    .isInstanceOf(LockBackendException.class);
            assertThat(holder.<Boolean>call(opBound(), lock::isHeldByCurrentThread))
                    .as("isHeldByCurrentThread() after an unlock() of unknown outcome").isFalse();
            assertThat(attempt(theirs)).as("another client, the release having been applied").isTrue();
            assertThat(holder.<Boolean>call(opBound(), lock::tryLock))
                    .as("tryLock() of the thread whose unlock() failed, while another client holds the lock")
                    .isFalse();
            int renewals = faulty.store.calls(FaultyStore.Call.RENEW);
            awaitTrue("two renewal rounds after the failed unlock()", lossBound(faulty.provider),
                    () -> faulty.store.calls(FaultyStore.Call.RENEW) >= renewals + 2);
            assertThat(holder.failureOrNull(opBound(), lock::unlock)).as("the retried unlock()").isNull();
            assertThat(losses(faulty.provider).all()).as("losses reported for a lock that was released").isEmpty();
            theirs.unlock();
            holder.run(opBound(), sentinel::unlock);
        }

        private void failedUnlockDoesNotLeakTheLock() throws Exception {
            Faulty mine = openFaulty(UnaryOperator.identity());
            DistributedLock lock = mine.provider.getLock("failed-release");
            Actor holder = actor("holder");
            holder.run(opBound(), lock::lock);
            mine.store.arm(FaultyStore.Call.RELEASE, "failed-release", FaultyStore.Fault.FAIL);
            assertThat(holder.failureOf(opBound(), lock::unlock)).isInstanceOf(LockBackendException.class);
            // the holder thread stays alive and never calls unlock() again; the renewer must not keep its hold
            Actor neighbour = actor("neighbour");
            Duration wait = renewInterval(mine.provider).multipliedBy(3).plus(opBound());
            assertThat(neighbour.<Boolean>call(waitBound(wait), () -> lock.tryLock(wait.toMillis(),
                    TimeUnit.MILLISECONDS))).as("another thread of the same provider, within %d ms", wait.toMillis())
                    .isTrue();
            neighbour.run(opBound(), lock::unlock);
            DistributedLock theirs = open().getLock("failed-release");
            assertThat(theirs.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS)).as("another client").isTrue();
            theirs.unlock();
            assertThat(losses(mine.provider).all()).isEmpty();
        }

        private void acquisitionWithLostAnswerIsUndone() throws Exception {
            lostGrantIsUndone("lost-grant", p -> p.getLock("lost-grant"), p -> p.getLock("lost-grant"));
        }

        /**
         * {@code mine}'s lock of the faulty provider is granted by the store but answered by a timeout: the grant is
         * given back in the background, so that {@code rival}'s lock of another client gets it long before the
         * lost grant's lease ends.
         */
        private void lostGrantIsUndone(String name, Function<LockProvider, DistributedLock> mine,
                Function<LockProvider, DistributedLock> rival) throws Exception {
            // a lease far longer than the test's wait: only the background release can free the lock in time
            Duration lease = slack().multipliedBy(4).plus(opBound());
            Faulty faulty = openFaulty(b -> b.leaseTime(lease));
            DistributedLock lock = mine.apply(faulty.provider);
            faulty.store.arm(FaultyStore.Call.ACQUIRE, name, FaultyStore.Fault.APPLY_THEN_TIMEOUT);
            Actor caller = actor("caller");
            assertThat(caller.failureOf(opBound(), lock::lock)).isInstanceOf(LockBackendException.class);
            assertThat(caller.<Boolean>call(opBound(), lock::isHeldByCurrentThread)).isFalse();
            DistributedLock theirs = rival.apply(open());
            assertThat(theirs.tryLock(slack().toMillis(), TimeUnit.MILLISECONDS))
                    .as("another client within %d ms, the lease being %d ms", slack().toMillis(), lease.toMillis())
                    .isTrue();
            theirs.unlock();
        }

        private void lateReleaseDoesNotFreeANewerHold() throws Exception {
            Faulty mine = openFaulty(UnaryOperator.identity());
            DistributedLock lock = mine.provider.getLock("late-release");
            DistributedLock theirs = open().getLock("late-release");
            Actor holder = actor("holder");
            holder.run(opBound(), lock::lock);
            mine.store.arm(FaultyStore.Call.RELEASE, "late-release", FaultyStore.Fault.DELIVER_LATE);
            assertThat(holder.failureOf(opBound(), lock::unlock)).isInstanceOf(LockBackendException.class);
            Duration wait = slack();
            assertThat(holder.<Boolean>call(waitBound(wait), () -> lock.tryLock(wait.toMillis(),
                    TimeUnit.MILLISECONDS))).as("the same thread takes the lock again").isTrue();
            mine.store.deliverLate();
            assertThat(attempt(theirs)).as("another client, after the earlier hold's release arrived late")
                    .isFalse();
            assertThat(holder.failureOrNull(opBound(), lock::unlock)).as("unlock() of the newer hold").isNull();
            assertThat(attempt(theirs)).isTrue();
            theirs.unlock();
            assertThat(losses(mine.provider).all()).isEmpty();
        }

        private void lateAcquisitionDoesNotTouchANewerHold() throws Exception {
            Faulty mine = openFaulty(UnaryOperator.identity());
            DistributedLock lock = mine.provider.getLock("late-grant");
            DistributedLock theirs = open().getLock("late-grant");
            mine.store.arm(FaultyStore.Call.ACQUIRE, "late-grant", FaultyStore.Fault.DELIVER_LATE);
            Actor holder = actor("holder");
            assertThat(holder.failureOf(opBound(), lock::lock)).isInstanceOf(LockBackendException.class);
            holder.run(opBound(), lock::lock);
            long token = holder.call(opBound(), lock::fencingToken);
            mine.store.deliverLate();
            assertThat(attempt(theirs)).isFalse();
            assertThat(holder.<Long>call(opBound(), lock::fencingToken)).isEqualTo(token);
            assertThat(holder.failureOrNull(opBound(), lock::unlock)).as("unlock() after the late attempt").isNull();
            assertThat(losses(mine.provider).all()).isEmpty();
            assertThat(attempt(theirs)).isTrue();
            theirs.unlock();
        }

        private void renewalWithLostAnswerKeepsTheHold() throws Exception {
            // a lease of six operation timeouts, renewed every half operation timeout: a round delayed by one
            // operation timeout and the round after it both end well within the lease renewed before them
            Faulty mine = openFaulty(b -> b.leaseTime(operationTimeout().multipliedBy(6))
                    .renewInterval(operationTimeout().dividedBy(2)));
            DistributedLock lock = mine.provider.getLock("renewed");
            Actor holder = actor("holder");
            holder.run(opBound(), lock::lock);
            for (FaultyStore.Fault fault : List.of(FaultyStore.Fault.APPLY_THEN_TIMEOUT, FaultyStore.Fault.DELAY)) {
                mine.store.arm(FaultyStore.Call.RENEW, "renewed", fault);
                int before = mine.store.calls(FaultyStore.Call.RENEW);
                awaitTrue("a renewal suffering " + fault + " and a healthy round after it", lossBound(mine.provider),
                        () -> mine.store.allArmedUsed() && mine.store.calls(FaultyStore.Call.RENEW) >= before + 2);
            }
            assertThat(holder.<Boolean>call(opBound(), lock::isHeldByCurrentThread)).isTrue();
            assertThat(attempt(open().getLock("renewed"))).isFalse();
            assertThat(holder.failureOrNull(opBound(), lock::unlock)).isNull();
            assertThat(losses(mine.provider).all()).isEmpty();
        }

        /**
         * One thread of the faulty provider holds the lock while another of its threads waits for it; the unlock
         * hands the lock to the waiter (where the store takes over), and the waiter's take-over suffers each fault in
         * turn. The waiter's lock() then fails, but nothing is left held: another client gets the lock long before
         * the lease ends, and a take-over that arrives late, while the waiter holds the lock again, changes
         * nothing. Where the store does not take over, the waiter acquires after a release and the same holds.
         */
        private void failedTakeOverLeavesNothingHeld() throws Exception {
            // a lease far longer than the test's waits: only the provider's own releases can free the lock in time
            Duration lease = slack().multipliedBy(4).plus(opBound());
            Faulty mine = openFaulty(b -> b.leaseTime(lease));
            String name = "failed-take-over";
            DistributedLock lock = mine.provider.getLock(name);
            DistributedLock theirs = open().getLock(name);
            Actor holder = actor("holder");
            Actor waiter = actor("waiter");
            boolean takesOver = mine.store.takesOver();
            for (FaultyStore.Fault fault : List.of(FaultyStore.Fault.FAIL, FaultyStore.Fault.APPLY_THEN_TIMEOUT,
                    FaultyStore.Fault.DELIVER_LATE)) {
                holder.run(opBound(), lock::lock);
                long held = holder.call(opBound(), lock::fencingToken);
                Future<Object> waiting = waiter.submit(() -> {
                    lock.lock();
                    return lock.fencingToken();
                });
                waiter.awaitInLine(opBound());
                mine.store.arm(FaultyStore.Call.TAKE_OVER, name, fault);
                assertThat(holder.failureOrNull(opBound(), lock::unlock)).as("unlock() with a thread waiting").isNull();
                Object outcome = awaitOutcome(waiting, waitBound(Duration.ZERO), "the waiter's lock()");
                if (takesOver) {
                    assertThat(outcome).as("the waiter's lock() whose take-over suffered %s", fault)
                            .isInstanceOf(LockBackendException.class);
                    assertThat(waiter.<Boolean>call(opBound(), lock::isHeldByCurrentThread)).isFalse();
                } else {
                    assertThat(outcome).as("the waiter's token").isInstanceOf(Long.class);
                    assertThat((Long) outcome).isGreaterThan(held);
                    waiter.run(opBound(), lock::unlock);
                }
                assertThat(theirs.tryLock(slack().toMillis(), TimeUnit.MILLISECONDS))
                        .as("another client within %d ms after a take-over that suffered %s, the lease being %d ms",
                                slack().toMillis(), fault, lease.toMillis()).isTrue();
                theirs.unlock();
                if (fault == FaultyStore.Fault.DELIVER_LATE) {
                    waiter.run(opBound(), lock::lock);
                    long token = waiter.call(opBound(), lock::fencingToken);
                    mine.store.deliverLate();
                    assertThat(attempt(theirs)).as("another client, after the late take-over arrived").isFalse();
                    assertThat(waiter.<Long>call(opBound(), lock::fencingToken)).isEqualTo(token);
                    assertThat(waiter.failureOrNull(opBound(), lock::unlock)).as("unlock() after the late take-over")
                            .isNull();
                    assertThat(attempt(theirs)).as("another client, after the waiter's unlock()").isTrue();
                    theirs.unlock();
                }
            }
            if (takesOver) {
                assertThat(mine.store.allArmedUsed()).as("every armed take-over fault was used").isTrue();
            }
            assertThat(losses(mine.provider).all()).isEmpty();
        }

        /** What {@code future} returned, or the exception it failed with. */
        private Object awaitOutcome(Future<Object> future, Duration bound, String what) throws InterruptedException {
            try {
                return future.get(bound.toNanos(), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                return e.getCause();
            } catch (TimeoutException e) {
                throw new AssertionError(what + " did not return within " + bound.toMillis() + " ms");
            }
        }

        private void randomCallFaultsNeverBreakExclusion() throws Exception {
            ExclusionChecker checker = new ExclusionChecker();
            underRandomCallFaults((provider, p, t) -> {
                DistributedLock lock = provider.getLock("random-faults");
                String owner = provider.clientId() + "#" + t;
                return () -> lockedOnce(lock, () -> {
                    checker.acquired(lock, owner);
                    checker.releasing("random-faults", owner);
                });
            });
            checker.assertClean();
        }
    }

    /** A provider whose store calls pass through a {@link FaultyStore}. */
    private record Faulty(LockProvider provider, FaultyStore<?> store) {
    }

    private Faulty openFaulty(UnaryOperator<LockOptions.Builder> customizer) {
        AtomicReference<FaultyStore<?>> wrapper = new AtomicReference<>();
        Duration timeout = operationTimeout();
        LockProvider provider = open(b -> customizer.apply(b).storeWrapper(store -> {
            FaultyStore<?> faulty = new FaultyStore<>(store, timeout);
            wrapper.set(faulty);
            return faulty;
        }));
        assertThat(wrapper.get()).as("the provider passed its store through LockOptions.storeWrapper (build it "
                + "with LockStores.newProvider)").isNotNull();
        scope().faultyStores.add(wrapper.get());
        return new Faulty(provider, wrapper.get());
    }


    // ------------------------------------------------------------------------------------------------------
    // Failures of the store
    // ------------------------------------------------------------------------------------------------------

    /**
     * What happens when the store fails, generated for each fault {@link #storeControl()} offers: no call
     * hangs, holds that cannot be renewed are lost, and the provider recovers by itself.
     */
    @Nested
    @DisplayName("failures of the store")
    public class StoreFailures {

        @TestFactory
        @DisplayName("per fault the store control can inject")
        Stream<DynamicContainer> faults() {
            Optional<StoreControl> control = storeControl();
            if (control.isEmpty()) {
                return Stream.empty();
            }
            return control.get().faults().stream().sorted().map(fault -> dynamicContainer(fault.name(),
                    testsFor(fault)));
        }

        private Stream<DynamicTest> testsFor(Fault fault) {
            List<DynamicTest> tests = new ArrayList<>();
            if (fault != Fault.DROP_CONNECTIONS) {
                tests.add(test("calls fail with LockBackendException instead of hanging", () -> callsFail(fault)));
                tests.add(test("a hold that cannot be renewed past its lease is reported lost",
                        () -> holdIsLost(fault)));
                tests.add(test("a failed unlock() ends the hold, is retried in the background and may be retried",
                        () -> unlockRetried(fault)));
                tests.add(test("close() returns in bounded time", () -> closeIsBounded(fault)));
                if (runsPrimitives()) {
                    tests.add(test("a leader is told of the loss, its candidacy keeps contending through the outage "
                            + "and leads again", () -> leadershipOutlivesOutage(fault)));
                }
            } else {
                tests.add(test("calls return or fail within their bounds", () -> callsBounded(fault)));
            }
            tests.add(test("the provider recovers by itself", () -> recovers(fault)));
            return tests.stream();
        }

        private DynamicTest test(String name, Executable body) {
            return dynamicTest(name, () -> isolated(body));
        }

        private void callsFail(Fault fault) throws Throwable {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("unavailable");
            Actor caller = actor("caller");
            caller.run(opBound(), () -> {
                assertThat(lock.tryLock()).isTrue();
                lock.unlock();
            });
            inject(fault);
            Duration wait = Duration.ofMillis(300);
            Map<String, Executable> calls = new java.util.LinkedHashMap<>();
            calls.put("tryLock()", lock::tryLock);
            calls.put("tryLock(300 ms)", () -> lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS));
            calls.put("tryLock(300 ms, 10 s lease)", () -> lock.tryLock(wait, Duration.ofSeconds(10)));
            calls.put("lock()", lock::lock);
            calls.put("lockInterruptibly()", lock::lockInterruptibly);
            calls.put("isLocked()", lock::isLocked);
            calls.put("tryAcquireAsync(300 ms)", () -> {
                try {
                    lock.tryAcquireAsync(wait).get();
                } catch (ExecutionException e) {
                    throw e.getCause();
                }
            });
            for (Map.Entry<String, Executable> call : calls.entrySet()) {
                long start = System.nanoTime();
                Throwable thrown = caller.failureOf(waitBound(wait), call.getValue());
                assertThat(thrown).as("%s while the store suffers %s", call.getKey(), fault)
                        .isInstanceOf(LockBackendException.class);
                String message = String.valueOf(thrown.getMessage());
                assertThat(message.split(java.util.regex.Pattern.quote(provider.backend()), -1))
                        .as("%s: the store's address is named once in '%s'", call.getKey(), message).hasSize(2);
                assertThat(message).as("%s: the lock is named", call.getKey()).contains("'unavailable'");
                assertWithin(start, waitBound(wait), call.getKey() + " during " + fault);
                assertThat(caller.<Integer>call(opBound(), lock::getHoldCount)).as("hold count after the failed %s",
                        call.getKey()).isZero();
            }
            heal(fault);
        }

        private void leadershipOutlivesOutage(Fault fault) throws Throwable {
            Elections history = new Elections();
            Candidate candidate = history.candidate(open(), "outage-leader");
            history.awaitLeader(List.of(candidate), opBound());
            long epoch = candidate.events.get(0).epoch();
            inject(fault);
            awaitTrue("the leader hears of its loss during " + fault, lossBound(candidate.provider),
                    () -> candidate.events.size() >= 2);
            assertThat(candidate.events.get(1)).isEqualTo(new Event(false, epoch, LeadershipListener.Reason.LOST));
            assertThat(candidate.leadership.isLeader()).as("isLeader() during " + fault).isFalse();
            heal(fault);
            // the candidacy retries a failed attempt after at most one operation timeout
            awaitTrue("the candidacy leads again after " + fault + " was healed",
                    recoveryBound().plus(operationTimeout()), () -> candidate.events.size() >= 3);
            assertThat(candidate.events.get(2).elected()).as("the event after the loss: %s", candidate.events)
                    .isTrue();
            assertThat(candidate.leadership.isLeader()).isTrue();
            // no epoch check: a killed store may lose its fencing counters, see the fencing group
        }

        private void holdIsLost(Fault fault) throws Throwable {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("outage");
            Actor holder = actor("holder");
            holder.run(opBound(), lock::lock);
            inject(fault);
            awaitLoss(provider, "outage");
            assertThat(holder.<Boolean>call(opBound(), lock::isHeldByCurrentThread)).isFalse();
            assertThat(holder.failureOf(opBound(), lock::unlock)).as("unlock() of the lost hold")
                    .isInstanceOf(LockLostException.class);
            heal(fault);
            awaitTrue("the same thread locks again after " + fault + " was healed", recoveryBound(),
                    () -> holder.<Boolean>call(waitBound(Duration.ZERO), () -> attempt(lock)));
            holder.run(opBound(), lock::unlock);
            assertLostOnce(provider, "outage");
        }

        private void unlockRetried(Fault fault) throws Throwable {
            // A long lease, so that only the failed unlock() can end the hold during the test.
            LockProvider provider = open(b -> b.leaseTime(Duration.ofSeconds(30)));
            DistributedLock lock = provider.getLock("retried");
            DistributedLock other = open().getLock("retried");
            Actor holder = actor("holder");
            holder.run(opBound(), lock::lock);
            inject(fault);
            assertThat(holder.failureOf(opBound(), lock::unlock)).as("unlock() while the store suffers %s", fault)
                    .isInstanceOf(LockBackendException.class);
            // its outcome is unknown: the thread no longer holds the lock, the provider retries the release
            assertThat(holder.<Integer>call(opBound(), lock::getHoldCount)).as("hold count after the failed unlock()")
                    .isZero();
            heal(fault);
            assertThat(holder.failureOrNull(opBound(), lock::unlock)).as("retried unlock() after %s was healed",
                    fault).isNull();
            awaitTrue("another provider acquires after the retried unlock()", recoveryBound(),
                    () -> attempt(other));
            other.unlock();
            assertThat(losses(provider).all()).as("losses reported for a lock that was released").isEmpty();
        }

        private void closeIsBounded(Fault fault) throws Throwable {
            LockProvider provider = open();
            for (String name : List.of("close-1", "close-2", "close-3")) {
                provider.getLock(name).lock();
            }
            inject(fault);
            Future<Void> closing = actor("closer").submit(() -> {
                provider.close();
                return null;
            });
            await(closing, operationTimeout().multipliedBy(3).plus(slack()),
                    "close() of a provider with 3 holds while the store suffers " + fault);
            assertThatThrownBy(() -> provider.getLock("close-1")).isInstanceOf(IllegalStateException.class);
            heal(fault);
            // Holds that close() could not release end with their lease.
            awaitTrue("the store frees the holds close() could not release within their lease",
                    baseLease().plus(slack()), () -> heldNames(namespace()).isEmpty());
        }

        private void callsBounded(Fault fault) throws Throwable {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("dropped");
            Actor caller = actor("caller");
            caller.run(opBound(), lock::lock);
            inject(fault);
            for (int i = 0; i < 5; i++) {
                long start = System.nanoTime();
                Throwable thrown = caller.failureOrNull(opBound(), () -> {
                    if (attempt(provider.getLock("probe"))) {
                        provider.getLock("probe").unlock();
                    }
                });
                if (thrown != null) {
                    assertThat(thrown).isInstanceOf(LockBackendException.class);
                }
                assertWithin(start, opBound(), "a call after " + fault);
            }
            Throwable unlocked = caller.failureOrNull(opBound(), lock::unlock);
            if (unlocked != null) {
                assertThat(unlocked).isInstanceOfAny(LockBackendException.class, LockLostException.class);
                if (unlocked instanceof LockBackendException) {
                    awaitTrue("unlock() succeeds on retry after " + fault, recoveryBound(),
                            () -> caller.failureOrNull(opBound(), lock::unlock) == null);
                }
            }
        }

        private void recovers(Fault fault) throws Throwable {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("recovery");
            DistributedLock other = open().getLock("recovery");
            Actor caller = actor("caller");
            caller.run(opBound(), () -> {
                assertThat(lock.tryLock()).isTrue();
                lock.unlock();
            });
            inject(fault);
            if (fault != Fault.DROP_CONNECTIONS) {
                assertThat(caller.failureOf(opBound(), lock::tryLock)).as("tryLock() during %s", fault)
                        .isInstanceOf(LockBackendException.class);
            }
            heal(fault);
            awaitTrue("the same provider acquires again after " + fault + " was healed", recoveryBound(),
                    () -> caller.<Boolean>call(waitBound(Duration.ZERO), () -> attempt(lock)));
            assertThat(other.tryLock()).as("another provider's tryLock() while the recovered provider holds")
                    .isFalse();
            caller.run(opBound(), lock::unlock);
            assertThat(other.tryLock()).as("another provider's tryLock() after the recovered provider's unlock()")
                    .isTrue();
            other.unlock();
            Future<Void> waiter = caller.submit(() -> {
                lock.lock();
                lock.unlock();
                return null;
            });
            await(waiter, waitBound(Duration.ZERO), "lock() and unlock() on the recovered provider");
        }

        private Duration recoveryBound() {
            return baseLease().plus(operationTimeout()).plus(slack());
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Shared test machinery
    // ------------------------------------------------------------------------------------------------------

    // ------------------------------------------------------------------------------------------------------
    // Handles that own their hold, and asynchronous acquisition
    // ------------------------------------------------------------------------------------------------------

    /**
     * acquireAsync()/tryAcquireAsync(wait): a handle owns its hold, any thread may close it exactly once, waiting
     * blocks no thread, cancellation never leaves a hold, and the handle tells of its loss.
     */
    // ------------------------------------------------------------------------------------------------------
    // Several locks at once
    // ------------------------------------------------------------------------------------------------------

    /**
     * acquireAll(names, wait): all the locks or none, one handle for them, no deadlock between callers asking for
     * overlapping sets in different orders, and bad input refused before anything is taken.
     */
    @Nested
    @DisplayName("several locks at once (acquireAll)")
    public class MultiLocks {

        @Test
        @DisplayName("acquireAll() takes every lock in the names' order as one handle of the calling thread; others"
                + " are kept out of each until close() releases them all")
        void takesAllAndReleasesAll() throws Exception {
            LockProvider provider = open();
            LockProvider other = open();
            List<String> names = List.of("multi-c", "multi-a", "multi-b");
            MultiLockHandle held = provider.acquireAll(names, Duration.ZERO).orElseThrow(
                    () -> new AssertionError("acquireAll() of three free locks came back empty"));
            assertThat(held.handles()).extracting(h -> h.lock().name())
                    .containsExactly("multi-a", "multi-b", "multi-c");
            assertThat(held.isValid()).isTrue();
            for (LockHandle handle : held.handles()) {
                String name = handle.lock().name();
                assertThat(held.fencingToken(name)).as("fencing token of %s", name).isPositive()
                        .isEqualTo(handle.fencingToken());
                assertThat(other.getLock(name).tryLock()).as("another provider's tryLock() of %s", name).isFalse();
            }
            assertThatThrownBy(() -> held.fencingToken("multi-d")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("multi-d");
            held.close();
            assertThat(held.isValid()).as("isValid() after close()").isFalse();
            held.close(); // exactly once: a second close does nothing
            assertFree(other, names, "after close()");
        }

        @Test
        @DisplayName("if one lock is busy past the wait, acquireAll() comes back empty and holds none of the others")
        void allOrNothing() throws Exception {
            LockProvider provider = open();
            LockProvider other = open();
            DistributedLock middle = other.getLock("multi-m");
            middle.lock();
            try {
                assertThat(provider.acquireAll(List.of("multi-l", "multi-m", "multi-n"), Duration.ZERO))
                        .as("acquireAll() while another provider holds one of the locks").isEmpty();
            } finally {
                middle.unlock();
            }
            assertFree(other, List.of("multi-l", "multi-n"), "after acquireAll() came back empty");
        }

        @Test
        @DisplayName("an interrupt while acquireAll() waits ends it with InterruptedException and leaves nothing held")
        void interruptLeavesNothingHeld() throws Exception {
            LockProvider provider = open();
            LockProvider other = open();
            DistributedLock second = other.getLock("multi-q2");
            second.lock();
            AtomicReference<Throwable> ended = new AtomicReference<>();
            CountDownLatch done = new CountDownLatch(1);
            try {
                Future<Object> caller = actor("caller").submit(() -> {
                    try {
                        provider.acquireAll(List.of("multi-q1", "multi-q2"), Duration.ofMinutes(5));
                    } catch (Throwable t) {
                        ended.set(t);
                    } finally {
                        done.countDown();
                    }
                    return null;
                });
                assertThat(eventually(opBound(), () -> other.getLock("multi-q1").isLocked()))
                        .as("multi-q1 taken while multi-q2 is awaited").isTrue();
                caller.cancel(true);
                assertThat(done.await(opBound().toMillis(), TimeUnit.MILLISECONDS)).as("acquireAll() returned")
                        .isTrue();
                assertThat(ended.get()).as("how acquireAll() ended").isInstanceOf(InterruptedException.class);
                assertThat(ended.get().getSuppressed()).as("failures releasing what acquireAll() had taken")
                        .isEmpty();
            } finally {
                second.unlock();
            }
            assertFree(other, List.of("multi-q1"), "after the interrupted acquireAll()");
        }

        @Test
        @DisplayName("two providers asking again and again for the same locks in opposite orders never deadlock and"
                + " never hold them at the same time")
        void oppositeOrdersNeverDeadlock() throws Exception {
            List<String> forward = List.of("multi-x", "multi-y", "multi-z");
            List<String> backward = List.of("multi-z", "multi-y", "multi-x");
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger overlaps = new AtomicInteger();
            int rounds = 20;
            List<Future<Integer>> callers = new ArrayList<>();
            for (List<String> order : List.of(forward, backward)) {
                LockProvider provider = open();
                callers.add(actor("caller-" + order.get(0)).submit(() -> {
                    int taken = 0;
                    for (int i = 0; i < rounds; i++) {
                        Optional<MultiLockHandle> held = provider.acquireAll(order, waitBound(Duration.ZERO));
                        if (held.isEmpty()) {
                            continue;
                        }
                        try (MultiLockHandle all = held.get()) {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            taken++;
                            inside.decrementAndGet();
                        }
                    }
                    return taken;
                }));
            }
            for (Future<Integer> caller : callers) {
                assertThat(await(caller, waitBound(Duration.ZERO).multipliedBy(2L * rounds), "a caller's rounds"))
                        .as("rounds in which a caller got all three locks within its wait").isEqualTo(rounds);
            }
            assertThat(overlaps).as("rounds in which both callers held the locks").hasValue(0);
        }

        @Test
        @DisplayName("no names, a name twice, a null or a bad name, a negative wait: refused before anything is taken")
        void badInput() {
            LockProvider provider = open();
            assertThatThrownBy(() -> provider.acquireAll(List.of(), Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one");
            assertThatThrownBy(() -> provider.acquireAll(List.of("multi-a", "multi-a"), Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'multi-a'");
            assertThatThrownBy(() -> provider.acquireAll(java.util.Arrays.asList("multi-a", null), Duration.ZERO))
                    .isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.acquireAll(null, Duration.ZERO)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.acquireAll(List.of("multi-a"), null))
                    .isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.acquireAll(List.of("multi-a"), Duration.ofMillis(-1)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.acquireAll(List.of("multi-a", ""), Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class);
            assertFree(open(), List.of("multi-a"), "after the refused calls");
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Semaphores
    // ------------------------------------------------------------------------------------------------------

    /**
     * {@link LockProvider#getSemaphore}: never more permits held than the semaphore has, across providers and
     * threads; each permit a hold of its own, given back only by its handle; all or nothing for several.
     */
    @Nested
    @DisplayName("semaphores")
    public class Semaphores {

        @TestFactory
        @DisplayName("every semaphore test")
        Stream<DynamicTest> tests() {
            if (!runsPrimitives()) {
                return Stream.empty();
            }
            return Stream.of(
                    primitiveTest(this::neverMoreHoldersThanPermits,
                            "three providers with two threads each, taking and giving back permits of a 2-permit "
                            + "semaphore 100 times in all, never hold more than 2 at once"),
                    primitiveTest(this::permitsAreHandles,
                            "permits are handles of their own: distinct ids and locks, positive tokens, given back "
                            + "one by one from any thread, a second close() does nothing"),
                    primitiveTest(this::severalAreAllOrNothing,
                            "tryAcquire(n) is all or nothing: with fewer free than asked it comes back empty and "
                            + "holds none"),
                    primitiveTest(this::waiterGetsAGivenBackPermit,
                            "a waiting acquire() gets the permit another provider gives back"),
                    primitiveTest(this::interruptLeavesNothingHeld,
                            "an interrupt while waiting ends it with InterruptedException; nothing stays held"),
                    primitiveTest(this::lostPermitIsReported,
                            "a permit whose hold is deleted in the store is reported lost, and the permit is free "
                            + "again"),
                    primitiveTest(this::badInput,
                            "zero or too many permits, a bad or too long name, a count out of range, a negative "
                            + "wait: refused with a clear error"),
                    primitiveTest(this::storedCountIsChangedForAll,
                            "a permit count kept in the store: none until an operator sets it, the same for every "
                            + "provider, raised for a waiter, lowered without taking a permit from its holder"),
                    primitiveTest(this::storedCountBadInput,
                            "a stored permit count out of range, a bad name, a take beyond the stored count: "
                            + "refused with a clear error, the count unchanged"));
        }

        private void storedCountIsChangedForAll() throws Exception {
            LockProvider admin = open();
            assertThat(admin.semaphorePermits("sem-stored")).as("the count before any was set").isEmpty();
            assertThatThrownBy(() -> admin.getSemaphore("sem-stored")).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("setSemaphorePermits");
            admin.setSemaphorePermits("sem-stored", 1);
            DistributedSemaphore semaphore = open().getSemaphore("sem-stored");
            assertThat(semaphore.permits()).isEqualTo(1);
            Permit first = semaphore.tryAcquire(Duration.ZERO).orElseThrow(
                    () -> new AssertionError("tryAcquire() of a free semaphore with a stored count of 1 "
                            + "came back empty"));
            LockProvider waiterProvider = open();
            DistributedSemaphore other = waiterProvider.getSemaphore("sem-stored");
            Future<Permit> waiting = actor("waiter").submit(other::acquire);
            assertThat(eventually(Duration.ofMillis(200), waiting::isDone)).as("acquire() while the only permit is "
                    + "held").isFalse();
            admin.setSemaphorePermits("sem-stored", 2);
            // the waiter reads the count again after each slice of its wait, the longest slice being the max backoff
            Permit second = await(waiting, waiterProvider.options().maxBackoff().plus(waitBound(Duration.ZERO)),
                    "acquire() after the count was raised to 2");
            assertThat(second.lockName()).isEqualTo("sem-stored#permit-1");
            assertThat(semaphore.permits()).as("permits() after the raise").isEqualTo(2);

            admin.setSemaphorePermits("sem-stored", 1);
            assertThat(admin.semaphorePermits("sem-stored")).hasValue(1);
            assertThat(first.isValid() && second.isValid()).as("both permits stay held when the count is lowered")
                    .isTrue();
            assertThat(other.tryAcquire(Duration.ZERO)).as("tryAcquire() with the count lowered to 1, 2 held")
                    .isEmpty();
            second.close();
            assertThat(other.tryAcquire(Duration.ZERO)).as("tryAcquire() with permit 0 held, count 1").isEmpty();
            assertThat(other.availablePermits()).as("free permits with permit 0 held, count 1").isZero();
            first.close();
            Permit again = other.tryAcquire(Duration.ZERO).orElseThrow(
                    () -> new AssertionError("tryAcquire() with every permit given back came back empty"));
            assertThat(again.lockName()).isEqualTo("sem-stored#permit-0");
            again.close();
        }

        private void storedCountBadInput() throws Exception {
            LockProvider provider = open();
            assertThatThrownBy(() -> provider.setSemaphorePermits("sem-set", 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to");
            assertThatThrownBy(() -> provider.setSemaphorePermits("sem-set", -1))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.setSemaphorePermits("sem-set", 1025))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.setSemaphorePermits(null, 2)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.setSemaphorePermits("", 2)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.setSemaphorePermits("s".repeat(250), 2))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("#permit-");
            assertThatThrownBy(() -> provider.semaphorePermits(null)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.getSemaphore((String) null)).isInstanceOf(NullPointerException.class);
            assertThat(provider.semaphorePermits("sem-set")).as("the count after the refused changes").isEmpty();
            provider.setSemaphorePermits("sem-set", 1);
            DistributedSemaphore semaphore = provider.getSemaphore("sem-set");
            assertThatThrownBy(() -> semaphore.tryAcquire(2, Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has 1 permit;");
            assertThat(provider.semaphorePermits("sem-set")).hasValue(1);
        }

        private void neverMoreHoldersThanPermits() throws Exception {
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            AtomicInteger rounds = new AtomicInteger();
            int total = 100;
            List<Future<Object>> workers = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                DistributedSemaphore semaphore = open().getSemaphore("sem-bounded", 2);
                for (int t = 0; t < 2; t++) {
                    workers.add(actor("worker-" + p + "-" + t).submit(() -> {
                        while (rounds.getAndIncrement() < total) {
                            try (Permit permit = semaphore.acquire()) {
                                int now = inside.incrementAndGet();
                                most.accumulateAndGet(now, Math::max);
                                assertThat(permit.isValid()).isTrue();
                                Thread.yield();
                                inside.decrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
            }
            for (Future<Object> worker : workers) {
                await(worker, waitBound(Duration.ZERO).multipliedBy(total), "a worker's rounds");
            }
            assertThat(most).as("most permits held at one moment").hasValueLessThanOrEqualTo(2);
            assertThat(open().getSemaphore("sem-bounded", 2).availablePermits()).as("free permits at the end")
                    .isEqualTo(2);
        }

        private void permitsAreHandles() throws Exception {
            DistributedSemaphore semaphore = open().getSemaphore("sem-handles", 3);
            assertThat(semaphore.name()).isEqualTo("sem-handles");
            assertThat(semaphore.permits()).isEqualTo(3);
            List<Permit> two = semaphore.tryAcquire(2, Duration.ZERO).orElseThrow(
                    () -> new AssertionError("tryAcquire(2) of a free 3-permit semaphore came back empty"));
            assertThat(two).hasSize(2);
            assertThat(two).extracting(Permit::id).doesNotHaveDuplicates();
            assertThat(two).extracting(Permit::lockName).doesNotHaveDuplicates()
                    .allMatch(n -> n.startsWith("sem-handles#permit-"));
            assertThat(two).allMatch(p -> p.fencingToken() > 0 && p.isValid() && p.semaphore() == semaphore);
            DistributedSemaphore elsewhere = open().getSemaphore("sem-handles", 3);
            assertThat(elsewhere.availablePermits()).as("free permits while two are held").isEqualTo(1);
            actor("closer").run(opBound(), () -> two.get(0).close());
            assertThat(two.get(0).isValid()).as("isValid() after close()").isFalse();
            two.get(0).close();
            assertThat(elsewhere.availablePermits()).as("free permits after one was given back").isEqualTo(2);
            two.get(1).close();
            assertThat(elsewhere.availablePermits()).isEqualTo(3);
        }

        private void severalAreAllOrNothing() throws Exception {
            DistributedSemaphore semaphore = open().getSemaphore("sem-all", 3);
            Permit held = semaphore.tryAcquire(Duration.ZERO).orElseThrow();
            DistributedSemaphore other = open().getSemaphore("sem-all", 3);
            assertThat(other.tryAcquire(3, Duration.ofMillis(100))).as("tryAcquire(3) with one permit held")
                    .isEmpty();
            assertThat(other.availablePermits()).as("free permits after the empty tryAcquire(3)").isEqualTo(2);
            List<Permit> both = other.tryAcquire(2, Duration.ZERO).orElseThrow(
                    () -> new AssertionError("tryAcquire(2) with two of three free came back empty"));
            assertThat(other.tryAcquire(Duration.ZERO)).as("tryAcquire() with every permit held").isEmpty();
            held.close();
            both.forEach(Permit::close);
        }

        private void waiterGetsAGivenBackPermit() throws Exception {
            DistributedSemaphore semaphore = open().getSemaphore("sem-wait", 1);
            Permit held = semaphore.acquire();
            long heldToken = held.fencingToken();
            DistributedSemaphore other = open().getSemaphore("sem-wait", 1);
            Future<Permit> waiting = actor("waiter").submit(other::acquire);
            assertThat(eventually(Duration.ofMillis(200), waiting::isDone)).as("acquire() while the only permit is "
                    + "held").isFalse();
            held.close();
            Permit handedOver = await(waiting, waitBound(Duration.ZERO), "acquire() after the permit was given back");
            assertThat(handedOver.lockName()).isEqualTo(held.lockName());
            assertThat(handedOver.fencingToken()).isGreaterThan(heldToken);
            handedOver.close();
        }

        private void interruptLeavesNothingHeld() throws Exception {
            DistributedSemaphore semaphore = open().getSemaphore("sem-int", 2);
            Permit held = semaphore.acquire();
            DistributedSemaphore other = open().getSemaphore("sem-int", 2);
            AtomicReference<Throwable> ended = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch done = new CountDownLatch(1);
            Future<Object> caller = actor("caller").submit(() -> {
                started.countDown();
                try {
                    other.tryAcquire(2, Duration.ofMinutes(5));
                } catch (Throwable t) {
                    ended.set(t);
                } finally {
                    done.countDown();
                }
                return null;
            });
            assertThat(started.await(opBound().toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            Thread.sleep(100); // sweeping or waiting, whichever it does then: either way the interrupt must end it
            caller.cancel(true);
            assertThat(done.await(opBound().toMillis(), TimeUnit.MILLISECONDS)).as("tryAcquire() returned").isTrue();
            assertThat(ended.get()).as("how tryAcquire() ended").isInstanceOf(InterruptedException.class);
            held.close();
            DistributedSemaphore checker = open().getSemaphore("sem-int", 2);
            awaitTrue("both permits are free after the interrupted tryAcquire()", opBound(),
                    () -> checker.availablePermits() == 2);
        }

        private void lostPermitIsReported() throws Exception {
            LockProvider provider = open();
            Permit permit = provider.getSemaphore("sem-lost", 1).acquire();
            CompletableFuture<LockLostException> lost = permit.whenLost();
            forceRelease(namespace(), permit.lockName());
            await(lost, lossBound(provider), "whenLost() of the deleted permit");
            assertThat(permit.isValid()).isFalse();
            assertThatThrownBy(permit::fencingToken).isInstanceOf(LockLostException.class);
            Permit again = open().getSemaphore("sem-lost", 1).tryAcquire(Duration.ZERO).orElseThrow(
                    () -> new AssertionError("the deleted permit could not be taken again"));
            assertThat(again.fencingToken()).isGreaterThan(0);
            again.close();
            assertThatThrownBy(permit::close).isInstanceOf(LockLostException.class);
        }

        private void badInput() {
            LockProvider provider = open();
            assertThatThrownBy(() -> provider.getSemaphore("sem", 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("1 to");
            assertThatThrownBy(() -> provider.getSemaphore("sem", -3)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.getSemaphore("sem", 1025)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.getSemaphore(null, 2)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.getSemaphore("", 2)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.getSemaphore("s".repeat(250), 2))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("#permit-");
            DistributedSemaphore semaphore = provider.getSemaphore("sem", 2);
            assertThatThrownBy(() -> semaphore.tryAcquire(0, Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2 permits");
            assertThatThrownBy(() -> semaphore.tryAcquire(3, Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> semaphore.tryAcquire(Duration.ofMillis(-1)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> semaphore.tryAcquire(null)).isInstanceOf(NullPointerException.class);
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Read-write locks
    // ------------------------------------------------------------------------------------------------------

    /**
     * {@link LockProvider#getReadWriteLock}: many readers or one writer across providers, reentrant, a waiting
     * writer not passed by new readers, downgrade allowed and upgrade refused, fencing, handles, loss. A backend
     * that keeps no read holds ({@link #supportsReadWriteLocks()} false) is checked for a clear refusal instead.
     */
    @Nested
    @DisplayName("read-write locks")
    public class ReadWriteLocks {

        @TestFactory
        @DisplayName("every read-write lock test")
        Stream<DynamicTest> tests() {
            if (!supportsReadWriteLocks()) {
                return Stream.of(primitiveTest(this::refusedClearly,
                        "this backend keeps no read holds: getReadWriteLock is refused with an "
                        + "UnsupportedOperationException naming the backend"));
            }
            Stream<DynamicTest> all = Stream.of(
                    primitiveTest(this::readersShareWritersExclude,
                            "readers of two providers hold the lock at once; a writer cannot take it while one "
                            + "of them reads, readers cannot while somebody writes, and the free lock goes to "
                            + "either"),
                    primitiveTest(this::historyUnderContention,
                            "three providers with two threads each, reading and writing 90 times in all: a writer "
                            + "overlaps nobody, readers overlap only readers, every write's token is greater than "
                            + "every earlier write's and read's, every read's at least the last write's"),
                    primitiveTest(this::reentrantWithoutRoundTrips,
                            "both sides are reentrant for the holding thread without a round trip, and another "
                            + "thread of the same provider reads beside it"),
                    primitiveTest(this::waitingWriterIsNotPassedByNewReaders,
                            "once a writer waits for the readers to leave, new readers of every provider wait "
                            + "behind it, and get the lock after it"),
                    primitiveTest(this::downgrade,
                            "downgrade: the writer takes the read lock, releases the write lock and keeps reading "
                            + "beside other readers, with the write's token"),
                    primitiveTest(this::upgradeIsRefused,
                            "upgrade: asking for the write lock while holding the read lock is refused with an "
                            + "IllegalMonitorStateException, and the read hold stays"),
                    primitiveTest(this::writeLockIsTheLock,
                            "the write lock is getLock(name): they exclude each other and share the fencing "
                            + "counter"),
                    primitiveTest(this::readHandles,
                            "read handles: two asynchronous read holds of one provider at once, each closed from "
                            + "another thread, then a writer gets the lock"),
                    primitiveTest(this::readLeasesAreTheirOwn,
                            "each read hold has its own lease: one that ends unreleased does not outlive it "
                            + "because another reader renews its own, nor is cut short by another's release"),
                    primitiveTest(this::interruptLeavesNothingHeld,
                            "an interrupt while a reader waits for a writer ends it with InterruptedException; "
                            + "nothing stays held"),
                    primitiveTest(this::lostReadHoldIsReported,
                            "a read hold freed in the store is reported lost: the listener, isHeldByCurrentThread, "
                            + "unlock() and the handle say so, and the lock can be taken again"),
                    primitiveTest(this::badInput,
                            "a null, empty or bad name is refused; unlock() by a thread that does not read throws "
                            + "IllegalMonitorStateException; conditions are unsupported"));
            // a variant of a backend another class covers runs the first four: sharing, the checked history,
            // re-entry and the waiting writer
            return runsPrimitives() ? all : all.limit(4);
        }

        private void refusedClearly() {
            LockProvider provider = open();
            assertThatThrownBy(() -> provider.getReadWriteLock("rw"))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining(provider.backend());
        }

        private void readersShareWritersExclude() throws Exception {
            DistributedReadWriteLock first = open().getReadWriteLock("rw-share");
            DistributedReadWriteLock second = open().getReadWriteLock("rw-share");
            DistributedReadWriteLock third = open().getReadWriteLock("rw-share");
            Actor reader = actor("second reader");
            Actor writer = actor("writer");
            assertThat(first.readLock().tryLock()).as("first provider's read tryLock() on a free lock").isTrue();
            assertThat(reader.<Boolean>call(opBound(), () -> second.readLock().tryLock()))
                    .as("second provider's read tryLock() beside a reader").isTrue();
            assertThat(writer.<Boolean>call(opBound(), () -> third.writeLock().tryLock()))
                    .as("third provider's write tryLock() while two read").isFalse();
            assertThat(first.writeLock().isLocked()).as("isLocked() while only readers hold it").isTrue();
            first.readLock().unlock();
            assertThat(writer.<Boolean>call(opBound(), () -> third.writeLock().tryLock()))
                    .as("write tryLock() while one reader is left").isFalse();
            reader.run(opBound(), () -> second.readLock().unlock());
            assertThat(writer.<Boolean>call(opBound(), () -> third.writeLock().tryLock()))
                    .as("write tryLock() after the readers left").isTrue();
            assertThat(first.readLock().tryLock()).as("read tryLock() while somebody writes").isFalse();
            assertThat(reader.<Boolean>call(waitBound(Duration.ofMillis(200)),
                    () -> second.readLock().tryLock(200, TimeUnit.MILLISECONDS)))
                    .as("read tryLock(200 ms) while somebody writes").isFalse();
            Future<Boolean> waiting = reader.submit(() -> {
                second.readLock().lock();
                second.readLock().unlock();
                return true;
            });
            writer.run(opBound(), () -> third.writeLock().unlock());
            assertThat(await(waiting, waitBound(Duration.ZERO), "a waiting reader's lock() after the write"))
                    .isTrue();
            assertThat(first.readLock().isLocked()).as("isLocked() after everybody left").isFalse();
        }

        private void historyUnderContention() throws Exception {
            AtomicInteger readers = new AtomicInteger();
            AtomicInteger writers = new AtomicInteger();
            AtomicInteger rounds = new AtomicInteger();
            AtomicReference<Long> lastWrite = new AtomicReference<>(-1L);
            AtomicLong lastRead = new AtomicLong(-1);
            List<String> violations = new CopyOnWriteArrayList<>();
            int total = 90;
            List<Future<Object>> workers = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                DistributedReadWriteLock rw = open().getReadWriteLock("rw-history");
                for (int t = 0; t < 2; t++) {
                    workers.add(actor("worker-" + p + "-" + t).submit(() -> {
                        for (int round = rounds.getAndIncrement(); round < total; round = rounds.getAndIncrement()) {
                            if (round % 3 == 0) {
                                rw.writeLock().lock();
                                try {
                                    long token = rw.writeLock().fencingToken();
                                    if (writers.incrementAndGet() != 1 || readers.get() != 0) {
                                        violations.add("round " + round + ": a writer beside " + (writers.get() - 1)
                                                + " writer(s) and " + readers.get() + " reader(s)");
                                    }
                                    long before = lastWrite.getAndSet(token);
                                    if (token <= before || token <= lastRead.get()) {
                                        violations.add("round " + round + ": write token " + token
                                                + " not greater than the previous write's " + before
                                                + " and every earlier read's (" + lastRead.get() + ")");
                                    }
                                    Thread.yield();
                                    writers.decrementAndGet();
                                } finally {
                                    rw.writeLock().unlock();
                                }
                            } else {
                                rw.readLock().lock();
                                try {
                                    readers.incrementAndGet();
                                    if (writers.get() != 0) {
                                        violations.add("round " + round + ": a reader beside a writer");
                                    }
                                    long token = rw.readLock().fencingToken();
                                    long written = lastWrite.get();
                                    if (written >= 0 && token < written) {
                                        violations.add("round " + round + ": read token " + token
                                                + ", below the last write's " + written);
                                    }
                                    lastRead.accumulateAndGet(token, Math::max);
                                    Thread.yield();
                                    readers.decrementAndGet();
                                } finally {
                                    rw.readLock().unlock();
                                }
                            }
                        }
                        return null;
                    }));
                }
            }
            for (Future<Object> worker : workers) {
                await(worker, waitBound(Duration.ZERO).multipliedBy(total), "a worker's rounds");
            }
            assertThat(violations).as("violations of the read-write rules").isEmpty();
            assertThat(lastWrite.get()).as("the last write's token").isGreaterThan(0);
        }

        private void reentrantWithoutRoundTrips() throws Exception {
            LockProvider provider = open();
            DistributedReadWriteLock rw = provider.getReadWriteLock("rw-reentrant");
            DistributedLock read = rw.readLock();
            read.lock();
            long before = storeOperationCount();
            read.lock();
            assertThat(read.tryLock()).isTrue();
            assertThat(storeOperationCount()).as("store operations for two read re-entries").isEqualTo(before);
            assertThat(read.getHoldCount()).isEqualTo(3);
            assertThat(rw.writeLock().getHoldCount()).as("write hold count of a reader").isZero();
            Actor sibling = actor("sibling reader");
            assertThat(sibling.<Boolean>call(opBound(), () -> {
                boolean got = read.tryLock();
                boolean mine = read.isHeldByCurrentThread() && read.getHoldCount() == 1;
                if (got) {
                    read.unlock();
                }
                return got && mine;
            })).as("a sibling thread's read tryLock() beside the reader, its own hold of count 1").isTrue();
            read.unlock();
            read.unlock();
            assertThat(read.isHeldByCurrentThread()).isTrue();
            read.unlock();
            assertThat(read.isHeldByCurrentThread()).isFalse();
            assertThatThrownBy(read::unlock).isInstanceOf(IllegalMonitorStateException.class);
            DistributedLock write = rw.writeLock();
            write.lock();
            before = storeOperationCount();
            write.lock();
            assertThat(storeOperationCount()).as("store operations for a write re-entry").isEqualTo(before);
            assertThat(write.getHoldCount()).isEqualTo(2);
            write.unlock();
            write.unlock();
            assertThat(write.isHeldByCurrentThread()).isFalse();
        }

        private void waitingWriterIsNotPassedByNewReaders() throws Exception {
            DistributedReadWriteLock holder = open().getReadWriteLock("rw-writer-first");
            AtomicBoolean writerWaits = new AtomicBoolean();
            DistributedReadWriteLock writerSide = open(b -> b.storeWrapper(store -> noteBusy(store, writerWaits)))
                    .getReadWriteLock("rw-writer-first");
            DistributedReadWriteLock late = open().getReadWriteLock("rw-writer-first");
            holder.readLock().lock();
            Actor writer = actor("writer");
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch leave = new CountDownLatch(1);
            Future<Long> wrote = writer.submit(() -> {
                writerSide.writeLock().lock();
                try {
                    inside.countDown();
                    leave.await();
                    return writerSide.writeLock().fencingToken();
                } finally {
                    writerSide.writeLock().unlock();
                }
            });
            assertThat(eventually(opBound(), writerWaits::get)).as("the writer's first attempt was answered busy")
                    .isTrue();
            Actor newcomer = actor("new reader");
            assertThat(newcomer.<Boolean>call(opBound(), () -> late.readLock().tryLock()))
                    .as("a new reader's tryLock() while a writer waits for the old reader").isFalse();
            assertThat(holder.readLock().tryLock()).as("the old reader's own re-entry").isTrue();
            holder.readLock().unlock();
            Future<Long> read = newcomer.submit(() -> {
                late.readLock().lock();
                try {
                    return late.readLock().fencingToken();
                } finally {
                    late.readLock().unlock();
                }
            });
            holder.readLock().unlock();
            assertThat(inside.await(waitBound(Duration.ZERO).toNanos(), TimeUnit.NANOSECONDS))
                    .as("the writer got the lock when the old reader left").isTrue();
            Thread.sleep(100);
            assertThat(read.isDone()).as("the new reader got the lock while the writer held it").isFalse();
            leave.countDown();
            long written = await(wrote, waitBound(Duration.ZERO), "the writer's turn");
            assertThat(await(read, waitBound(Duration.ZERO), "the new reader's lock() after the write"))
                    .as("the new reader's token").isGreaterThanOrEqualTo(written);
        }

        private void downgrade() throws Exception {
            DistributedReadWriteLock rw = open().getReadWriteLock("rw-downgrade");
            DistributedReadWriteLock other = open().getReadWriteLock("rw-downgrade");
            rw.writeLock().lock();
            long written = rw.writeLock().fencingToken();
            assertThat(rw.readLock().tryLock()).as("the writer's read tryLock()").isTrue();
            assertThat(rw.readLock().fencingToken()).as("the read token under the write")
                    .isGreaterThanOrEqualTo(written);
            Actor reader = actor("other reader");
            assertThat(reader.<Boolean>call(opBound(), () -> other.readLock().tryLock()))
                    .as("another provider's read tryLock() while the downgrading thread still writes").isFalse();
            rw.writeLock().unlock();
            assertThat(rw.readLock().isHeldByCurrentThread()).as("still reading after the write unlock").isTrue();
            assertThat(rw.writeLock().isHeldByCurrentThread()).isFalse();
            assertThat(reader.<Boolean>call(opBound(), () -> other.readLock().tryLock()))
                    .as("another provider's read tryLock() after the downgrade").isTrue();
            assertThat(actor("writer").<Boolean>call(opBound(), () -> other.writeLock().tryLock()))
                    .as("a write tryLock() while the downgraded thread reads").isFalse();
            reader.run(opBound(), () -> other.readLock().unlock());
            rw.readLock().unlock();
            assertThat(rw.writeLock().isLocked()).as("isLocked() after the downgraded read ended").isFalse();
        }

        private void upgradeIsRefused() throws Exception {
            DistributedReadWriteLock rw = open().getReadWriteLock("rw-upgrade");
            rw.readLock().lock();
            assertThatThrownBy(() -> rw.writeLock().lock()).isInstanceOf(IllegalMonitorStateException.class)
                    .hasMessageContaining("rw-upgrade").hasMessageContaining("read lock");
            assertThatThrownBy(() -> rw.writeLock().tryLock()).isInstanceOf(IllegalMonitorStateException.class);
            assertThatThrownBy(() -> rw.writeLock().tryLock(1, TimeUnit.SECONDS))
                    .isInstanceOf(IllegalMonitorStateException.class);
            assertThat(rw.readLock().isHeldByCurrentThread()).as("the read hold after the refused upgrades")
                    .isTrue();
            rw.readLock().unlock();
            assertThat(rw.writeLock().tryLock()).as("write tryLock() once the read lock is released").isTrue();
            rw.writeLock().unlock();
        }

        private void writeLockIsTheLock() throws Exception {
            LockProvider provider = open();
            DistributedLock plain = open().getLock("rw-same");
            DistributedReadWriteLock rw = provider.getReadWriteLock("rw-same");
            assertThat(plain.tryLock()).isTrue();
            long first = plain.fencingToken();
            assertThat(actor("writer").<Boolean>call(opBound(), () -> rw.writeLock().tryLock()))
                    .as("write tryLock() while getLock(name) is held").isFalse();
            assertThat(rw.readLock().tryLock()).as("read tryLock() while getLock(name) is held").isFalse();
            plain.unlock();
            assertThat(rw.writeLock().tryLock()).isTrue();
            long second = rw.writeLock().fencingToken();
            assertThat(second).as("the write lock's token after the plain lock's").isGreaterThan(first);
            rw.writeLock().unlock();
            assertThat(rw.readLock().tryLock()).isTrue();
            long read = rw.readLock().fencingToken();
            assertThat(read).as("a read token: at least the last write's").isGreaterThanOrEqualTo(second);
            assertThat(actor("plain").<Boolean>call(opBound(), plain::tryLock))
                    .as("getLock(name).tryLock() while somebody reads").isFalse();
            rw.readLock().unlock();
            Actor plainAgain = actor("plain again");
            assertThat(plainAgain.<Long>call(opBound(), () -> {
                plain.lock();
                try {
                    return plain.fencingToken();
                } finally {
                    plain.unlock();
                }
            })).as("the next write's token, after the read").isGreaterThan(read);
            assertThat(provider.getReadWriteLock("rw-same")).isEqualTo(rw);
        }

        private void readHandles() throws Exception {
            LockProvider provider = open();
            DistributedReadWriteLock rw = provider.getReadWriteLock("rw-handles");
            LockHandle one = await(rw.readLock().acquireAsync(), opBound(), "first read acquireAsync()");
            LockHandle two = await(rw.readLock().tryAcquireAsync(Duration.ofSeconds(1)), waitBound(Duration.ZERO),
                    "second read tryAcquireAsync()");
            assertThat(one.isValid() && two.isValid()).as("both read handles valid at once").isTrue();
            assertThat(rw.readLock().isHeldByCurrentThread()).as("a handle's read is not the thread's").isFalse();
            DistributedReadWriteLock other = open().getReadWriteLock("rw-handles");
            Actor writer = actor("writer");
            assertThat(writer.<Boolean>call(opBound(), () -> other.writeLock().tryLock()))
                    .as("write tryLock() while two read handles are open").isFalse();
            Actor closer = actor("closer");
            closer.run(opBound(), one::close);
            assertThat(writer.<Boolean>call(opBound(), () -> other.writeLock().tryLock()))
                    .as("write tryLock() while one read handle is open").isFalse();
            closer.run(opBound(), two::close);
            assertThat(writer.<Boolean>call(opBound(), () -> other.writeLock().tryLock()))
                    .as("write tryLock() after both read handles were closed").isTrue();
            writer.run(opBound(), () -> other.writeLock().unlock());
            try (LockHandle sync = rw.readLock().acquire()) {
                assertThat(sync.fencingToken()).isEqualTo(rw.readLock().fencingToken());
            }
            assertThat(rw.readLock().isHeldByCurrentThread()).isFalse();
        }

        private void readLeasesAreTheirOwn() throws Exception {
            DistributedReadWriteLock shortLived = open().getReadWriteLock("rw-leases");
            LockProvider renewing = open();
            DistributedReadWriteLock renewed = renewing.getReadWriteLock("rw-leases");
            DistributedReadWriteLock longLived = open().getReadWriteLock("rw-leases");
            DistributedReadWriteLock writer = open().getReadWriteLock("rw-leases");
            Actor renewer = actor("renewed reader");
            Actor other = actor("long reader");
            Actor writing = actor("writer");
            Duration lease = Duration.ofMillis(400);
            assertThat(shortLived.readLock().tryLock(Duration.ZERO, lease)).as("a read with a 400 ms lease").isTrue();
            renewer.run(opBound(), () -> renewed.readLock().lock());
            // past the short lease, and past several renewals of the other reader
            Thread.sleep(lease.toMillis() + 2 * renewInterval(renewing).toMillis());
            assertThat(other.<Boolean>call(opBound(), () -> longLived.readLock().tryLock(Duration.ZERO,
                    Duration.ofMinutes(1)))).as("a read with a one-minute lease").isTrue();
            renewer.run(opBound(), () -> renewed.readLock().unlock());
            assertThat(writing.<Boolean>call(opBound(), () -> writer.writeLock().tryLock()))
                    .as("write tryLock() while the one-minute read holds, after the renewed reader left").isFalse();
            other.run(opBound(), () -> longLived.readLock().unlock());
            assertThat(writing.<Boolean>call(opBound(), () -> writer.writeLock().tryLock()))
                    .as("write tryLock() once only the read whose 400 ms lease ended is left").isTrue();
            writing.run(opBound(), () -> writer.writeLock().unlock());
            assertThat(shortLived.readLock().isHeldByCurrentThread()).as("the read whose lease ended").isFalse();
        }

        private void interruptLeavesNothingHeld() throws Exception {
            DistributedReadWriteLock writerSide = open().getReadWriteLock("rw-interrupt");
            DistributedReadWriteLock readerSide = open().getReadWriteLock("rw-interrupt");
            writerSide.writeLock().lock();
            Actor reader = actor("reader");
            CountDownLatch entering = new CountDownLatch(1);
            Future<Boolean> waited = reader.submit(() -> {
                entering.countDown();
                try {
                    readerSide.readLock().lockInterruptibly();
                    readerSide.readLock().unlock();
                    return false;
                } catch (InterruptedException expected) {
                    return !readerSide.readLock().isHeldByCurrentThread();
                }
            });
            entering.await();
            reader.awaitWaiting(Duration.ofSeconds(1));
            reader.interrupt();
            assertThat(await(waited, opBound(), "lockInterruptibly() of the read lock after an interrupt"))
                    .as("InterruptedException, and no read hold").isTrue();
            writerSide.writeLock().unlock();
            assertThat(writerSide.writeLock().tryLock()).as("write tryLock() after the interrupted reader")
                    .isTrue();
            writerSide.writeLock().unlock();
        }

        private void lostReadHoldIsReported() throws Exception {
            LockProvider provider = open();
            DistributedReadWriteLock rw = provider.getReadWriteLock("rw-lost");
            LockHandle handle = rw.readLock().acquire();
            CompletableFuture<LockLostException> lost = handle.whenLost();
            LockProvider operator = open();
            boolean forcible;
            try {
                assertThat(operator.forceRelease("rw-lost")).as("forceRelease() of a read lock").isTrue();
                forcible = true;
            } catch (UnsupportedOperationException noForcedRelease) {
                forcible = false; // Redlock: freed in the store by the test's own means, as in "holds and loss"
            }
            if (!forcible) {
                forceRelease(namespace(), "rw-lost");
            }
            await(lost, lossBound(provider), "whenLost() of the freed read hold");
            assertThat(eventually(opBound(), () -> losses(provider).count("rw-lost") == 1))
                    .as("the listener told once of the lost read hold: %s", losses(provider).all()).isTrue();
            assertThat(rw.readLock().isHeldByCurrentThread()).isFalse();
            assertThatThrownBy(rw.readLock()::unlock).isInstanceOf(LockLostException.class);
            assertThatThrownBy(handle::close).isInstanceOf(IllegalMonitorStateException.class);
            DistributedLock write = open().getReadWriteLock("rw-lost").writeLock();
            assertThat(write.tryLock()).as("write tryLock() after the read hold was freed").isTrue();
            write.unlock();
        }

        private void badInput() {
            LockProvider provider = open();
            assertThatThrownBy(() -> provider.getReadWriteLock(null)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.getReadWriteLock("")).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.getReadWriteLock("a\u0001b")).isInstanceOf(IllegalArgumentException.class);
            DistributedReadWriteLock rw = provider.getReadWriteLock("rw-bad");
            assertThat(rw.name()).isEqualTo("rw-bad");
            assertThatThrownBy(rw.readLock()::unlock).isInstanceOf(IllegalMonitorStateException.class)
                    .hasMessageContaining("rw-bad");
            assertThatThrownBy(rw.readLock()::fencingToken).isInstanceOf(IllegalMonitorStateException.class);
            assertThatThrownBy(rw.readLock()::newCondition).isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(() -> rw.readLock().tryLock(Duration.ZERO, Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Leader election
    // ------------------------------------------------------------------------------------------------------

    /**
     * {@link LockProvider#leadership}: one leader at a time, each elected with an epoch greater than every earlier
     * one, told of its end before the lock is given back when it steps down, contending again after a loss.
     * Checked by a history of every candidacy's elections and revocations on one timeline.
     */
    @Nested
    @DisplayName("leader election")
    public class LeaderElection {

        @TestFactory
        @DisplayName("every leader-election test")
        Stream<DynamicTest> tests() {
            if (!runsPrimitives()) {
                return Stream.empty();
            }
            return Stream.of(
                    primitiveTest(this::oneOfSeveralLeads,
                            "of three candidacies exactly one leads, with the hold's fencing token as its epoch; "
                            + "nobody else can take the lock meanwhile"),
                    primitiveTest(this::relinquishHandsOver,
                            "relinquish() hands leadership over: revoked(RELINQUISHED) before the lock is given "
                            + "back, the next leader's epoch greater, never two leaders at once, over six terms"),
                    primitiveTest(this::lossIsToldAndContendedAgain,
                            "a lost hold is told as revoked(LOST), and the candidacy contends again and leads with "
                            + "a greater epoch"),
                    primitiveTest(this::relinquishAfterUnnoticedLoss,
                            "relinquish() of a leader whose hold was deleted in the store never passes for an "
                            + "intact term: it throws LockLostException, or the listener was told LOST"),
                    primitiveTest(this::closeStepsDown,
                            "close() of the leader: revoked(CLOSED) before close() returns, the lock free, no "
                            + "later events; a second close() does nothing"),
                    primitiveTest(this::closeWhileContending,
                            "close() while contending returns without an event and leaves nothing held"),
                    primitiveTest(this::providerCloseEndsLeadership,
                            "closing the leader's provider ends its leadership as revoked(CLOSED), and another "
                            + "candidacy leads"),
                    primitiveTest(this::throwingListenerStepsDown,
                            "an elected() that throws steps down at once: revoked(RELINQUISHED), and another "
                            + "candidacy leads"),
                    primitiveTest(this::callsFromTheListener,
                            "relinquish() and close() from the listener itself do not deadlock"),
                    primitiveTest(this::badInput,
                            "a null or bad name, a null listener: refused, nothing contends"));
        }

        private void oneOfSeveralLeads() throws Exception {
            Elections history = new Elections();
            List<Candidate> candidates = List.of(history.candidate(open(), "lead"), history.candidate(open(), "lead"),
                    history.candidate(open(), "lead"));
            Candidate leader = history.awaitLeader(candidates, opBound());
            long epoch = leader.events.get(0).epoch();
            assertThat(epoch).as("epoch of the first leader").isPositive();
            assertThat(leader.leadership.epoch()).as("epoch() of the leader").hasValue(epoch);
            assertThat(leader.leadership.name()).isEqualTo("lead");
            for (Candidate other : candidates) {
                if (other != leader) {
                    assertThat(other.leadership.isLeader()).as("isLeader() of a candidacy that was not elected")
                            .isFalse();
                    assertThat(other.leadership.epoch()).isEmpty();
                }
            }
            assertThat(open().getLock("lead").tryLock()).as("another provider's tryLock() while a leader leads")
                    .isFalse();
            history.assertConsistent();
        }

        private void relinquishHandsOver() throws Exception {
            Elections history = new Elections();
            List<Candidate> candidates = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                candidates.add(history.candidate(open(), "rotate"));
            }
            // a candidacy that relinquished waits one operation timeout before it contends again: the others may
            // all be waiting
            Duration handOver = waitBound(Duration.ZERO).plus(operationTimeout());
            for (int term = 0; term < 6; term++) {
                Candidate leader = history.awaitLeader(candidates, handOver);
                long epoch = leader.leadership.epoch().orElseThrow(
                        () -> new AssertionError("the leader lost its leadership before relinquish()"));
                leader.leadership.relinquish();
                assertThat(leader.last()).as("last event of the leader after relinquish() returned")
                        .isEqualTo(new Event(false, epoch, LeadershipListener.Reason.RELINQUISHED));
                assertThat(leader.leadership.isLeader()).as("isLeader() after relinquish()").isFalse();
                Candidate next = history.awaitLeader(candidates, handOver);
                assertThat(next.leadership.epoch().orElse(Long.MAX_VALUE)).as("epoch of the next leader")
                        .isGreaterThan(epoch);
            }
            history.assertConsistent();
        }

        private void lossIsToldAndContendedAgain() throws Exception {
            Elections history = new Elections();
            Candidate only = history.candidate(open(), "lose");
            history.awaitLeader(List.of(only), opBound());
            long epoch = only.events.get(0).epoch();
            forceRelease(namespace(), "lose");
            awaitTrue("the candidacy is told that its leadership was lost", lossBound(only.provider),
                    () -> only.events.size() >= 2);
            assertThat(only.events.get(1)).isEqualTo(new Event(false, epoch, LeadershipListener.Reason.LOST));
            awaitTrue("the candidacy leads again", waitBound(Duration.ZERO), () -> only.events.size() >= 3);
            assertThat(only.events.get(2).elected()).isTrue();
            assertThat(only.events.get(2).epoch()).as("epoch after the loss").isGreaterThan(epoch);
            history.assertConsistent();
        }

        private void relinquishAfterUnnoticedLoss() throws Exception {
            Elections history = new Elections();
            Candidate leader = history.candidate(open(), "unnoticed");
            history.awaitLeader(List.of(leader), opBound());
            long epoch = leader.events.get(0).epoch();
            leader.probe = null; // the lock is free at this step-down: that is the point
            forceRelease(namespace(), "unnoticed");
            // the watchdog may notice the loss first (LOST), or the give-back finds the hold gone; either way the
            // application must learn that its term did not hold to the end
            LockLostException thrown = null;
            try {
                leader.leadership.relinquish();
            } catch (LockLostException e) {
                thrown = e;
            }
            awaitTrue("the candidacy is told that its leadership ended", lossBound(leader.provider),
                    () -> leader.events.size() >= 2);
            Event end = leader.events.get(1);
            if (thrown == null) {
                assertThat(end).as("the end of a term whose hold was deleted, relinquish() having returned")
                        .isEqualTo(new Event(false, epoch, LeadershipListener.Reason.LOST));
            } else {
                assertThat(end).as("the end of the term that relinquish() found lost")
                        .isEqualTo(new Event(false, epoch, LeadershipListener.Reason.RELINQUISHED));
                assertThat(thrown).hasMessageContaining("unnoticed").hasMessageContaining("epoch " + epoch);
            }
            history.assertConsistent();
        }

        private void closeStepsDown() throws Exception {
            Elections history = new Elections();
            Candidate leader = history.candidate(open(), "close");
            history.awaitLeader(List.of(leader), opBound());
            long epoch = leader.events.get(0).epoch();
            leader.leadership.close();
            assertThat(leader.events).as("events of the closed leadership")
                    .containsExactly(new Event(true, epoch, null),
                            new Event(false, epoch, LeadershipListener.Reason.CLOSED));
            assertThat(leader.leadership.isLeader()).isFalse();
            assertFree(open(), List.of("close"), "after the leader's close()");
            leader.leadership.close();
            Candidate next = history.candidate(open(), "close");
            history.awaitLeader(List.of(next), opBound());
            assertThat(leader.events).as("events of the closed leadership after another was elected").hasSize(2);
            history.assertConsistent();
        }

        private void closeWhileContending() throws Exception {
            LockProvider holderProvider = open();
            DistributedLock held = holderProvider.getLock("busy");
            held.lock();
            Elections history = new Elections();
            Candidate waiting = history.candidate(open(), "busy");
            assertThat(eventually(Duration.ofMillis(200), () -> !waiting.events.isEmpty()))
                    .as("an election while another provider holds the lock").isFalse();
            actor("closer").run(opBound(), waiting.leadership::close);
            held.unlock();
            assertFree(open(), List.of("busy"), "after the closed candidacy's holder let go");
            assertThat(waiting.events).as("events of a candidacy closed while it contended").isEmpty();
        }

        private void providerCloseEndsLeadership() throws Exception {
            Elections history = new Elections();
            Candidate first = history.candidate(open(), "owner");
            history.awaitLeader(List.of(first), opBound());
            Candidate second = history.candidate(open(), "owner");
            first.provider.close();
            awaitTrue("the leader of a closed provider is told", opBound(), () -> first.events.size() >= 2);
            assertThat(first.last().reason()).isEqualTo(LeadershipListener.Reason.CLOSED);
            history.awaitLeader(List.of(second), waitBound(Duration.ZERO));
            assertThat(first.events).as("events of the closed provider's candidacy").hasSize(2);
            // no history check: a provider's close gives its holds back first, so (as after a loss) the next
            // leader may be elected before the old one is told; closing the leadership first steps down cleanly
        }

        private void throwingListenerStepsDown() throws Exception {
            Elections history = new Elections();
            Candidate faulty = history.candidate(open(), "throws", epoch -> {
                throw new IllegalStateException("cannot lead");
            });
            awaitTrue("the throwing candidacy steps down", waitBound(Duration.ZERO), () -> faulty.events.size() >= 2);
            assertThat(faulty.events.get(1).reason()).isEqualTo(LeadershipListener.Reason.RELINQUISHED);
            Candidate next = history.candidate(open(), "throws");
            history.awaitLeader(List.of(next), waitBound(Duration.ZERO));
            history.assertConsistent();
        }

        private void callsFromTheListener() throws Exception {
            Elections history = new Elections();
            AtomicReference<Leadership> self = new AtomicReference<>();
            // the lock is held elsewhere until the candidacy's reference is set, so elected() cannot come first
            DistributedLock holder = open().getLock("self");
            holder.lock();
            AtomicInteger elections = new AtomicInteger();
            Candidate candidate = history.candidate(open(), "self", epoch -> {
                if (elections.incrementAndGet() == 1) {
                    self.get().relinquish();
                } else {
                    self.get().close();
                }
            });
            self.set(candidate.leadership);
            holder.unlock();
            // the second election follows the relinquish's pause of one operation timeout
            awaitTrue("the leadership relinquished, then closed from elected(), is revoked twice",
                    waitBound(Duration.ZERO).plus(operationTimeout()),
                    () -> candidate.events.size() >= 4);
            assertThat(candidate.events).extracting(Event::reason).containsExactly(null,
                    LeadershipListener.Reason.RELINQUISHED, null, LeadershipListener.Reason.CLOSED);
            history.assertConsistent();
            DistributedLock lock = open().getLock("self");
            assertThat(lock.tryLock(opBound().toMillis(), TimeUnit.MILLISECONDS))
                    .as("tryLock() after the leadership closed itself").isTrue();
            lock.unlock();
        }

        private void badInput() {
            LockProvider provider = open();
            LeadershipListener listener = new Candidate(null, provider, e -> { });
            assertThatThrownBy(() -> provider.leadership(null, listener)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> provider.leadership("", listener)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> provider.leadership("x", null)).isInstanceOf(NullPointerException.class);
            assertThat(Thread.getAllStackTraces().keySet()).as("threads after the refused calls")
                    .noneMatch(t -> t.getName().startsWith("locksmith-leadership-") && t.getName().endsWith("-x"));
        }
    }

    /** A primitive's test as a dynamic test in a scope of its own (namespace, providers, leak check). */
    private DynamicTest primitiveTest(Executable body, String name) {
        return dynamicTest(name, () -> isolated(body));
    }

    /** Another provider takes and gives back each of {@code names} at once: nobody holds them. */
    private static void assertFree(LockProvider other, List<String> names, String when) {
        for (String name : names) {
            DistributedLock lock = other.getLock(name);
            assertThat(lock.tryLock()).as("another provider's tryLock() of %s %s", name, when).isTrue();
            lock.unlock();
        }
    }

    /** One listener call: an election ({@code reason} null) or a revocation. */
    private record Event(boolean elected, long epoch, LeadershipListener.Reason reason) {
    }

    /**
     * Every candidacy of a test on one timeline: how many lead at each moment (more than one is a violation),
     * and the epochs in the order they were elected (each must be greater than the one before).
     */
    private final class Elections {
        private final AtomicInteger leading = new AtomicInteger();
        private final List<String> violations = new CopyOnWriteArrayList<>();
        private final List<Long> epochs = new ArrayList<>();

        Candidate candidate(LockProvider provider, String name) {
            return candidate(provider, name, epoch -> { });
        }

        Candidate candidate(LockProvider provider, String name, java.util.function.LongConsumer onElected) {
            Candidate candidate = new Candidate(this, provider, onElected);
            candidate.probe = open().getLock(name);
            candidate.leadership = provider.leadership(name, candidate);
            scope().leaderships.add(candidate.leadership);
            return candidate;
        }

        void elected(long epoch) {
            if (leading.incrementAndGet() != 1) {
                violations.add("epoch " + epoch + " was elected while another leader led");
            }
            synchronized (epochs) {
                if (!epochs.isEmpty() && epochs.get(epochs.size() - 1) >= epoch) {
                    violations.add("epoch " + epoch + " was elected after epoch " + epochs.get(epochs.size() - 1));
                }
                epochs.add(epoch);
            }
        }

        void revoked() {
            leading.decrementAndGet();
        }

        /** Waits until one of {@code candidates} leads, and returns it. */
        Candidate awaitLeader(List<Candidate> candidates, Duration bound) throws InterruptedException {
            AtomicReference<Candidate> leader = new AtomicReference<>();
            awaitTrue("one of the candidacies leads", bound, () -> {
                for (Candidate c : candidates) {
                    // isLeader() turns true just before elected() is called: wait for both
                    if (c.leadership.isLeader() && !c.events.isEmpty() && c.last().elected()) {
                        leader.set(c);
                        return true;
                    }
                }
                return false;
            });
            return leader.get();
        }

        void assertConsistent() {
            assertThat(violations).as("leader election history (epochs in election order: %s)", epochs).isEmpty();
        }
    }

    /** A candidacy and what its listener heard. */
    private static final class Candidate implements LeadershipListener {
        final Elections history;
        final LockProvider provider;
        final java.util.function.LongConsumer onElected;
        final List<Event> events = new CopyOnWriteArrayList<>();
        volatile Leadership leadership;
        /** Another provider's lock of the name: when stepping down, the leader must still hold it. */
        volatile DistributedLock probe;

        Candidate(Elections history, LockProvider provider, java.util.function.LongConsumer onElected) {
            this.history = history;
            this.provider = provider;
            this.onElected = onElected;
        }

        @Override
        public void elected(long epoch) {
            history.elected(epoch);
            events.add(new Event(true, epoch, null));
            onElected.accept(epoch);
        }

        @Override
        public void revoked(long epoch, Reason reason) {
            events.add(new Event(false, epoch, reason));
            DistributedLock check = probe;
            if (check != null && reason != Reason.LOST && check.tryLock()) {
                check.unlock();
                history.violations.add("the lock was free when revoked(" + epoch + ", " + reason + ") was called");
            }
            history.revoked();
        }

        Event last() {
            return events.get(events.size() - 1);
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Fairness across providers
    // ------------------------------------------------------------------------------------------------------

    /**
     * No provider starves another: while one provider's threads take the lock from each other without pause, a
     * waiting provider gets it within the turns the store's rule allows ({@link LockStore#GRANTS_PAST_A_CLAIM}
     * grants after it first heard "busy"), counted, never timed.
     */
    @Nested
    @DisplayName("fairness across providers")
    public class Fairness {

        @Test
        @DisplayName("a waiting provider gets the lock before another provider, whose two threads take it from each "
                + "other without pause, has it " + LockStore.GRANTS_PAST_A_CLAIM + " more times")
        void noProviderStarves() throws Exception {
            AtomicBoolean waiting = new AtomicBoolean();
            AtomicInteger passed = new AtomicInteger();
            // a long lease: a claim lives for one lease from its last refresh, and no pause of a busy machine may
            // end it here
            Duration lease = Duration.ofSeconds(30);
            LockProvider busy = open(b -> b.leaseTime(lease).storeWrapper(store -> countGrants(store, waiting,
                    passed)));
            LockProvider patient = open(b -> b.leaseTime(lease).storeWrapper(store -> noteBusy(store, waiting)));
            DistributedLock hot = busy.getLock("fair");
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger cycles = new AtomicInteger();
            // the next holder keeps the lock until the waiter has been answered busy, so that it must wait
            AtomicBoolean holdForWaiter = new AtomicBoolean();
            List<Future<Object>> loops = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                loops.add(actor("busy-" + i).submit(() -> {
                    while (!stop.get()) {
                        hot.lock();
                        try {
                            cycles.incrementAndGet();
                            if (holdForWaiter.compareAndSet(true, false)) {
                                eventually(waitBound(Duration.ZERO), waiting::get);
                            }
                        } finally {
                            hot.unlock();
                        }
                    }
                    return null;
                }));
            }
            try {
                assertThat(eventually(opBound().multipliedBy(4), () -> cycles.get() >= 20))
                        .as("the busy provider's threads take the lock in turn (cycles: %s)", cycles).isTrue();
                holdForWaiter.set(true);
                assertThat(eventually(opBound(), () -> !holdForWaiter.get())).as("a busy thread holds for the waiter")
                        .isTrue();
                DistributedLock lock = patient.getLock("fair");
                boolean acquired = lock.tryLock(waitBound(Duration.ZERO).toMillis(), TimeUnit.MILLISECONDS);
                int grantsPast = passed.get();
                try {
                    assertThat(acquired).as("the waiting provider's tryLock(%s ms) while the other provider's threads "
                            + "took the lock %s times in all, %s of them after its first busy answer",
                            waitBound(Duration.ZERO).toMillis(), cycles.get(), grantsPast).isTrue();
                    assertThat(waiting).as("the waiting provider was answered busy first").isTrue();
                    assertThat(grantsPast).as("grants to the busy provider after the waiter's first busy answer")
                            .isLessThanOrEqualTo(LockStore.GRANTS_PAST_A_CLAIM);
                } finally {
                    if (acquired) {
                        lock.unlock();
                    }
                }
            } finally {
                stop.set(true);
                for (Future<Object> loop : loops) {
                    await(loop, opBound().multipliedBy(4), "the busy provider's loop");
                }
            }
        }

        @Test
        @DisplayName("unlock() with another owner of the same provider in line hands it the lock: a thread, then an "
                + "asynchronous acquisition, each with a greater token, no other client in between, nothing held "
                + "after")
        void handsOverToTheNextOwnerInLine() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("hand-over");
            DistributedLock theirs = open().getLock("hand-over");
            Actor holder = actor("holder");
            Actor waiter = actor("waiter");
            holder.run(opBound(), lock::lock);
            long first = holder.call(opBound(), lock::fencingToken);
            Future<Long> next = waiter.submit(() -> {
                lock.lock();
                return lock.fencingToken();
            });
            waiter.awaitInLine(opBound());
            assertThat(holder.failureOrNull(opBound(), lock::unlock)).as("unlock() with a thread in line").isNull();
            long second = await(next, waitBound(Duration.ZERO), "the waiting thread's lock()");
            assertThat(second).as("the token of the thread in line").isGreaterThan(first);
            assertThat(attempt(theirs)).as("another client while the thread in line holds the lock").isFalse();
            CompletableFuture<LockHandle> later = lock.acquireAsync();
            assertThat(later).as("the asynchronous acquisition, in line while a thread holds the lock").isNotDone();
            waiter.run(opBound(), lock::unlock);
            try (LockHandle handle = later.get(waitBound(Duration.ZERO).toNanos(), TimeUnit.NANOSECONDS)) {
                assertThat(handle.fencingToken()).as("the asynchronous acquisition's token").isGreaterThan(second);
                assertThat(attempt(theirs)).as("another client while the asynchronous acquisition holds the lock")
                        .isFalse();
            }
            assertThat(attempt(theirs)).as("another client after the last owner in line let go").isTrue();
            theirs.unlock();
            assertThat(losses(provider).all()).isEmpty();
        }

        @Test
        @DisplayName("a waiter that gives up, or never waited, leaves no claim: the other provider goes on taking the "
                + "lock")
        void givingUpLeavesNoClaim() throws Exception {
            DistributedLock holder = open().getLock("fair-gone");
            DistributedLock quitter = open().getLock("fair-gone");
            holder.lock();
            assertThat(quitter.tryLock()).as("tryLock() of another provider while held").isFalse();
            assertThat(quitter.tryLock(200, TimeUnit.MILLISECONDS)).as("tryLock(200 ms) of another provider while held")
                    .isFalse();
            holder.unlock();
            for (int i = 0; i < 3 * LockStore.GRANTS_PAST_A_CLAIM; i++) {
                assertThat(holder.tryLock()).as("tryLock() number %d of the provider nobody waits for", i + 1)
                        .isTrue();
                holder.unlock();
            }
        }
    }

    /** The store, counting its grants that began after {@code waiting} turned true. */
    private static <H> LockStore<H> countGrants(LockStore<H> store, AtomicBoolean waiting, AtomicInteger passed) {
        return new ForwardingLockStore<>(store) {
            @Override
            public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
                return counted(() -> super.tryAcquire(hold, lease, wait, wakeUp));
            }

            @Override
            public Acquisition takeOver(H previous, H hold, Duration lease, Runnable wakeUp) {
                return counted(() -> super.takeOver(previous, hold, lease, wakeUp));
            }

            /** Counts a grant of an attempt that began after the waiter's first busy answer. */
            private Acquisition counted(Supplier<Acquisition> attempt) {
                boolean after = waiting.get();
                Acquisition outcome = attempt.get();
                if (after && outcome.isAcquired()) {
                    passed.incrementAndGet();
                }
                return outcome;
            }
        };
    }

    /** The store, turning {@code waiting} true when an attempt is answered busy. */
    /** Counts the attempts in progress that may wait inside the store (a database lock wait). */
    private static <H> LockStore<H> countWaitsInStore(LockStore<H> store, AtomicInteger inProgress) {
        return new ForwardingLockStore<>(store) {
            @Override
            public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
                if (wait.isZero()) {
                    return super.tryAcquire(hold, lease, wait, wakeUp);
                }
                inProgress.incrementAndGet();
                try {
                    return super.tryAcquire(hold, lease, wait, wakeUp);
                } finally {
                    inProgress.decrementAndGet();
                }
            }
        };
    }

    private static <H> LockStore<H> noteBusy(LockStore<H> store, AtomicBoolean waiting) {
        return new ForwardingLockStore<>(store) {
            @Override
            public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
                Acquisition outcome = super.tryAcquire(hold, lease, wait, wakeUp);
                if (!outcome.isAcquired()) {
                    waiting.set(true);
                }
                return outcome;
            }
        };
    }

    @Nested
    @DisplayName("handles and asynchronous acquisition")
    public class HandlesAndAsync {

        @Test
        @DisplayName("acquireAsync() on a free lock gives a valid handle that excludes others and any thread closes "
                + "exactly once")
        void handleClosedFromAnotherThread() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("async-free");
            DistributedLock other = open().getLock("async-free");
            LockHandle handle = await(lock.acquireAsync(), opBound(), "acquireAsync() of a free lock");
            assertThat(handle.lock()).isEqualTo(lock);
            assertThat(handle.isValid()).as("isValid() of a new handle").isTrue();
            long token = handle.fencingToken();
            assertThat(token).isPositive();
            assertThat(lock.isHeldByCurrentThread()).as("the handle's hold belongs to no thread").isFalse();
            assertThat(other.tryLock()).as("another provider's tryLock() while the handle holds").isFalse();
            actor("closer").run(opBound(), handle::close);
            assertThat(handle.isValid()).as("isValid() after close()").isFalse();
            assertThatThrownBy(handle::fencingToken).isInstanceOf(IllegalStateException.class);
            handle.close(); // exactly once: a second close does nothing
            assertThat(other.tryLock()).as("another provider's tryLock() after the handle was closed").isTrue();
            assertThat(other.fencingToken()).isGreaterThan(token);
            other.unlock();
        }

        @Test
        @DisplayName("a handle is not reentrant: the acquiring thread's own lock() waits for it, and it waits for "
                + "the thread's hold")
        void handleIsNotReentrant() throws Exception {
            DistributedLock lock = open().getLock("async-owner");
            lock.lock();
            CompletableFuture<LockHandle> pending = lock.acquireAsync();
            // the thread's hold stays while the handle waits; nothing can grant it meanwhile
            assertThat(lock.tryLock()).as("the holding thread re-enters its own hold").isTrue();
            lock.unlock();
            assertThat(pending).as("acquireAsync() while this thread holds the lock").isNotDone();
            long threadToken = lock.fencingToken();
            lock.unlock();
            LockHandle handle = await(pending, waitBound(Duration.ZERO), "acquireAsync() after the thread unlocked");
            assertThat(handle.fencingToken()).isGreaterThan(threadToken);
            assertThat(lock.tryLock()).as("the thread's tryLock() while its handle holds").isFalse();
            handle.close();
            assertThat(lock.tryLock()).as("the thread's tryLock() after the handle was closed").isTrue();
            lock.unlock();
        }

        @Test
        @DisplayName("300 asynchronous waiters on one lock block no thread, are served one at a time with growing "
                + "tokens, and each handle is closed by the executor that completed it")
        void manyWaitersBlockNoThread() throws Exception {
            int waiters = 300;
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("async-many");
            DistributedLock holder = open().getLock("async-many");
            holder.lock();
            ExclusionChecker checker = new ExclusionChecker();
            List<Long> tokens = new CopyOnWriteArrayList<>();
            List<Throwable> failures = new CopyOnWriteArrayList<>();
            int threadsBefore = liveThreads();
            List<CompletableFuture<Void>> done = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                String owner = "handle-" + i;
                done.add(lock.acquireAsync().thenAccept(handle -> {
                    try {
                        long token = handle.fencingToken();
                        checker.acquired("async-many", owner, token);
                        tokens.add(token);
                        checker.releasing("async-many", owner);
                        handle.close();
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }));
            }
            int threadsWaiting = liveThreads();
            assertThat(done).as("waiters completed while another provider holds the lock")
                    .noneMatch(CompletableFuture::isDone);
            assertThat(providerThreads(provider)).as("the provider's own threads with %d waiters", waiters)
                    .isLessThanOrEqualTo(5);
            assertThat(threadsWaiting - threadsBefore)
                    .as("threads added to the JVM by %d asynchronous waiters", waiters).isLessThan(waiters / 10);
            holder.unlock();
            await(CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)),
                    Duration.ofSeconds(60).plus(slack()), "all asynchronous waiters served");
            assertThat(failures).isEmpty();
            checker.assertClean();
            assertThat(checker.report().acquisitions()).isEqualTo(waiters);
            assertThat(tokens).as("tokens in the order the handles were granted").isSorted()
                    .doesNotHaveDuplicates();
        }

        @Test
        @DisplayName("threads and handles of several providers never overlap")
        void threadsAndHandlesNeverOverlap() throws Exception {
            String name = "async-mixed";
            int rounds = 20;
            ExclusionChecker checker = new ExclusionChecker();
            AtomicInteger counter = new AtomicInteger();
            List<Future<Void>> workers = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                LockProvider provider = open();
                DistributedLock lock = provider.getLock(name);
                for (int t = 0; t < 2; t++) {
                    String owner = provider.clientId() + "#" + t;
                    boolean async = t == 1;
                    workers.add(actor("mixed-p" + p + "-t" + t).submit(() -> {
                        for (int i = 0; i < rounds; i++) {
                            LockHandle handle = async ? lock.acquireAsync().get() : lock.acquire();
                            try {
                                checker.acquired(name, owner, handle.fencingToken());
                                int read = counter.get();
                                Thread.yield();
                                counter.set(read + 1);
                                checker.releasing(name, owner);
                            } finally {
                                handle.close();
                            }
                        }
                        return null;
                    }));
                }
            }
            for (Future<Void> worker : workers) {
                await(worker, Duration.ofSeconds(60).plus(slack()), "worker of the mixed run");
            }
            checker.assertClean();
            assertThat(counter.get()).isEqualTo(4 * rounds);
        }

        @Test
        @DisplayName("cancelling a waiting future abandons the wait: the lock goes to the next owner")
        void cancelledWaitLeavesNothing() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("async-cancel");
            DistributedLock holder = open().getLock("async-cancel");
            DistributedLock third = open().getLock("async-cancel");
            holder.lock();
            CompletableFuture<LockHandle> cancelled = lock.acquireAsync();
            CompletableFuture<LockHandle> next = lock.acquireAsync();
            assertThat(cancelled.cancel(true)).isTrue();
            holder.unlock();
            LockHandle handle = await(next, waitBound(Duration.ZERO), "the waiter queued behind the cancelled one");
            assertThat(cancelled).isCancelled();
            handle.close();
            assertThat(third.tryLock()).as("a third provider's tryLock() after every handle was closed").isTrue();
            third.unlock();
        }

        @Test
        @DisplayName("a future cancelled at the moment of the grant never leaves a hold (20 races)")
        void cancelRacingTheGrantLeavesNothing() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("async-race");
            DistributedLock holder = open().getLock("async-race");
            DistributedLock checker = open().getLock("async-race");
            for (int round = 0; round < 20; round++) {
                holder.lock();
                CompletableFuture<LockHandle> waiting = lock.acquireAsync();
                CountDownLatch go = new CountDownLatch(1);
                Future<Boolean> cancel = actor("canceller-" + round).submit(() -> {
                    go.await();
                    return waiting.cancel(true);
                });
                go.countDown();
                holder.unlock();
                boolean wasCancelled = await(cancel, opBound(), "cancel()");
                if (!wasCancelled) {
                    await(waiting, opBound(), "the handle granted before the cancel").close();
                }
                awaitTrue("round " + round + ": another provider takes the lock after the cancelled or closed "
                        + "acquisition", waitBound(Duration.ZERO), checker::tryLock);
                checker.unlock();
            }
        }

        @Test
        @DisplayName("tryAcquireAsync(wait) fails with TimeoutException while the lock is held and leaves nothing; "
                + "bad waits are refused")
        void tryAcquireAsyncTimesOut() throws Exception {
            DistributedLock lock = open().getLock("async-timeout");
            DistributedLock holder = open().getLock("async-timeout");
            holder.lock();
            Duration wait = Duration.ofMillis(200);
            long start = System.nanoTime();
            CompletableFuture<LockHandle> timed = lock.tryAcquireAsync(wait);
            Throwable failure = awaitFailure(timed, waitBound(wait), "tryAcquireAsync(200 ms) of a held lock");
            assertThat(failure).isInstanceOf(java.util.concurrent.TimeoutException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("time until the timeout")
                    .isGreaterThanOrEqualTo(wait);
            assertThat(awaitFailure(lock.tryAcquireAsync(Duration.ZERO), opBound(),
                    "tryAcquireAsync(0) of a held lock")).isInstanceOf(java.util.concurrent.TimeoutException.class);
            assertThatThrownBy(() -> lock.tryAcquireAsync(Duration.ofMillis(-1)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> lock.tryAcquireAsync(null)).isInstanceOf(NullPointerException.class);
            holder.unlock();
            LockHandle handle = await(lock.tryAcquireAsync(Duration.ZERO), opBound(),
                    "tryAcquireAsync(0) of a free lock");
            handle.close();
        }

        @Test
        @DisplayName("a handle whose hold is deleted in the store is told once through whenLost(); closing it "
                + "then throws LockLostException; a closed handle's whenLost() is cancelled")
        void handleToldOfItsLoss() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("async-lost");
            LockHandle handle = await(lock.acquireAsync(), opBound(), "acquireAsync()");
            CompletableFuture<LockLostException> lost = handle.whenLost();
            assertThat(lost).isNotDone();
            long token = handle.fencingToken();
            forceRelease(namespace(), "async-lost");
            LockLostException loss = await(lost, lossBound(provider), "whenLost() after the forced release");
            assertThat(loss.getMessage()).contains("async-lost").contains("token " + token);
            assertThat(handle.isValid()).isFalse();
            assertThatThrownBy(handle::fencingToken).isInstanceOf(LockLostException.class);
            assertThatThrownBy(handle::close).isInstanceOf(LockLostException.class);
            handle.close(); // once
            assertLostOnce(provider, "async-lost");

            LockHandle next = await(lock.acquireAsync(), opBound(), "acquireAsync() after the loss");
            CompletableFuture<LockLostException> ended = next.whenLost();
            next.close();
            awaitTrue("whenLost() of a closed handle is cancelled", opBound(), ended::isCancelled);
        }

        @Test
        @DisplayName("closing the provider fails its waiting futures with IllegalStateException and releases its "
                + "handles")
        void closeEndsWaitsAndHandles() throws Exception {
            LockProvider provider = open();
            DistributedLock lock = provider.getLock("async-close");
            DistributedLock other = open().getLock("async-close");
            LockHandle handle = await(lock.acquireAsync(), opBound(), "acquireAsync()");
            CompletableFuture<LockHandle> waiting = lock.acquireAsync();
            CompletableFuture<LockLostException> lost = handle.whenLost();
            provider.close();
            Throwable failure = awaitFailure(waiting, opBound(), "the waiting future when the provider closed");
            assertThat(failure).isInstanceOf(IllegalStateException.class);
            assertThat(lost).as("whenLost() of a handle released by close()").isCancelled();
            assertThat(handle.isValid()).isFalse();
            awaitTrue("another provider takes the lock the closed provider released", opBound(), other::tryLock);
            other.unlock();
            assertThatThrownBy(lock::acquireAsync).isInstanceOf(IllegalStateException.class);
        }

        private Throwable awaitFailure(CompletableFuture<?> future, Duration bound, String what)
                throws InterruptedException {
            Object value;
            try {
                value = await(future, bound, what);
            } catch (InterruptedException | AssertionError e) {
                throw e;
            } catch (Throwable failed) {
                return failed;
            }
            throw new AssertionError(what + " completed with " + value + "; expected it to fail");
        }

        private int providerThreads(LockProvider provider) {
            String prefix = "locksmith-" + provider.clientId().substring(0, 8);
            return (int) Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith(prefix)).count();
        }

        private int liveThreads() {
            return ManagementFactory.getThreadMXBean().getThreadCount();
        }
    }

    private void inject(Fault fault) {
        StoreControl control = storeControl().orElseThrow();
        scope().activeFaults.add(fault);
        fault.inject(control);
    }

    private void heal(Fault fault) {
        StoreControl control = storeControl().orElseThrow();
        fault.heal(control);
        scope().activeFaults.remove(fault);
    }

    /** One attempt that treats a store failure as "not yet", for polling while a store comes back. */
    private static boolean attempt(DistributedLock lock) {
        try {
            return lock.tryLock();
        } catch (LockBackendException e) {
            return false;
        }
    }

    private Duration baseLease() {
        return baseOptions().namespace("x").build().leaseTime();
    }

    private Duration operationTimeout() {
        return baseOptions().namespace("x").build().operationTimeout();
    }

    /** The bound for one call that should not wait for another owner. */
    private Duration opBound() {
        return operationTimeout().plus(slack());
    }

    /** The bound for a call that waits up to {@code wait}, or for a hand-off to a waiter when zero. */
    private Duration waitBound(Duration wait) {
        return wait.plus(operationTimeout()).plus(slack());
    }

    private static Duration renewInterval(LockProvider provider) {
        return provider.options().renewInterval();
    }

    /** How long after a hold stops being guaranteed the provider may take to report it lost. */
    private Duration lossBound(LockProvider provider) {
        LockOptions o = provider.options();
        return o.leaseTime().plus(o.renewInterval()).plus(o.operationTimeout()).plus(slack());
    }

    private LossRecorder losses(LockProvider provider) {
        Scope s = scope();
        synchronized (s.losses) {
            LossRecorder recorder = s.losses.get(provider);
            if (recorder == null) {
                throw new IllegalArgumentException("provider was not opened by this test");
            }
            return recorder;
        }
    }

    private void awaitLoss(LockProvider provider, String name) throws InterruptedException {
        LossRecorder recorder = losses(provider);
        awaitTrue("the listener hears that the hold of '" + name + "' was lost", lossBound(provider),
                () -> recorder.count(name) > 0);
    }

    /** Waits for the loss report if needed, then checks no second report for the same hold follows. */
    private void assertLostOnce(LockProvider provider, String name) throws InterruptedException {
        awaitLoss(provider, name);
        Thread.sleep(renewInterval(provider).multipliedBy(2).plusMillis(100).toMillis());
        assertThat(losses(provider).count(name)).as("loss reports for '%s': %s", name, losses(provider).all())
                .isEqualTo(1);
    }

    private Actor actor(String name) {
        Actor actor = new Actor(name);
        scope().actors.add(actor);
        return actor;
    }

    private static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    }

    private static void assertWithin(long startNanos, Duration bound, String what) {
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);
        assertThat(took).as("%s took %d ms, more than the bound of %d ms", what, took.toMillis(), bound.toMillis())
                .isLessThanOrEqualTo(bound);
    }

    private static boolean eventually(Duration timeout, Check condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            boolean met;
            try {
                met = condition.test();
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) {
                throw sneaky(e);
            }
            if (met) {
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            Thread.sleep(10);
        }
    }

    private static void awaitTrue(String what, Duration timeout, Check condition)
            throws InterruptedException {
        if (!eventually(timeout, condition)) {
            fail("timed out after " + timeout.toMillis() + " ms waiting until " + what);
        }
    }

    private static <T> T await(Future<T> future, Duration bound, String what) throws InterruptedException {
        try {
            return future.get(bound.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(what + " did not finish within " + bound.toMillis() + " ms");
        } catch (ExecutionException e) {
            throw sneaky(e.getCause());
        }
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable t) throws E {
        throw (E) t;
    }

    /** Renders a name for messages with control characters and surrogates escaped, long names shortened. */
    static String show(String name) {
        StringBuilder b = new StringBuilder("'");
        int shown = 0;
        for (int i = 0; i < name.length() && shown < 40; i++, shown++) {
            char c = name.charAt(i);
            if (Character.isISOControl(c) || Character.isSurrogate(c)
                    && !(Character.isHighSurrogate(c) && i + 1 < name.length()
                            && Character.isLowSurrogate(name.charAt(i + 1)))
                    && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(name.charAt(i - 1)))) {
                b.append(String.format("\\u%04X", (int) c));
            } else {
                b.append(c);
            }
        }
        b.append('\'');
        if (name.length() > 40) {
            b.append(" (").append(name.length()).append(" chars)");
        }
        return b.toString();
    }

    /** What a waiting thread saw: whether it got the lock, its interrupt status, and its hold count. */
    private record Outcome(boolean acquired, boolean interrupted, int holdCount) {
    }

    /** A listener that remembers every reported loss. */
    private static final class LossRecorder implements LockListener {
        private final List<String> events = new CopyOnWriteArrayList<>();
        private final List<String> names = new CopyOnWriteArrayList<>();

        @Override
        public void onLost(String lockName, String reason) {
            names.add(lockName);
            events.add(lockName + ": " + reason);
        }

        long count(String name) {
            return names.stream().filter(name::equals).count();
        }

        List<String> all() {
            return List.copyOf(events);
        }
    }

    /**
     * One test thread that runs the calls given to it in order, so that a hold taken in one call is still the
     * same thread's in the next; every wait on it is bounded, so a hanging call fails the test instead of
     * hanging it. A platform or a virtual thread, as {@link TestThreads} says.
     */
    private static final class Actor {
        private final String name;
        private final AtomicReference<Thread> thread = new AtomicReference<>();
        private final ExecutorService executor;

        Actor(String name) {
            this.name = name;
            this.executor = Executors.newSingleThreadExecutor(r -> {
                Thread t = TestThreads.worker("contract-" + name, r);
                thread.set(t);
                return t;
            });
        }

        <T> Future<T> submit(Callable<T> body) {
            return executor.submit(body);
        }

        <T> T call(Duration bound, Callable<T> body) throws InterruptedException {
            return await(submit(body), bound, name + "'s call");
        }

        void run(Duration bound, Executable body) throws InterruptedException {
            await(submit(() -> {
                try {
                    body.execute();
                } catch (Throwable t) {
                    throw sneaky(t);
                }
                return null;
            }), bound, name + "'s call");
        }

        /** Runs {@code body} and returns what it threw, or null if it returned normally. */
        Throwable failureOrNull(Duration bound, Executable body) throws InterruptedException {
            return await(submit(() -> {
                try {
                    body.execute();
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            }), bound, name + "'s call");
        }

        /** Runs {@code body}, which must throw, and returns what it threw. */
        Throwable failureOf(Duration bound, Executable body) throws InterruptedException {
            Throwable thrown = failureOrNull(bound, body);
            if (thrown == null) {
                throw new AssertionError(name + "'s call returned normally; expected it to throw");
            }
            return thrown;
        }

        void interrupt() {
            Thread t = thread.get();
            if (t != null) {
                t.interrupt();
            }
        }

        /**
         * Waits, at most {@code bound}, until the thread is parked in its provider's line for a lock name, behind
         * another owner of the same provider: the machinery's gate parks it with the gate as its blocker.
         */
        void awaitInLine(Duration bound) throws InterruptedException {
            boolean inLine = eventually(bound, () -> {
                Thread t = thread.get();
                Object blocker = t == null ? null : LockSupport.getBlocker(t);
                return blocker != null && blocker.getClass().getName().equals("io.locksmith.internal.Gate");
            });
            assertThat(inLine).as("%s parked in its provider's line within %d ms", name, bound.toMillis()).isTrue();
        }

        /** Waits, at most {@code bound}, until the thread is parked (best effort: it may be parked elsewhere). */
        void awaitWaiting(Duration bound) throws InterruptedException {
            awaitWaiting(bound, () -> false);
        }

        /** Waits until the thread parks, or {@code waitingElsewhere} says it waits in a way a state cannot show. */
        void awaitWaiting(Duration bound, BooleanSupplier waitingElsewhere)
                throws InterruptedException {
            eventually(bound, () -> {
                Thread t = thread.get();
                return t != null && (t.getState() == Thread.State.WAITING
                        || t.getState() == Thread.State.TIMED_WAITING || waitingElsewhere.getAsBoolean());
            });
        }

        void shutDown(Duration bound) throws InterruptedException {
            executor.shutdownNow();
            if (!executor.awaitTermination(bound.toNanos(), TimeUnit.NANOSECONDS)) {
                Thread t = thread.get();
                AssertionError stuck = new AssertionError("test thread " + name + " still runs "
                        + bound.toMillis() + " ms after its providers were closed");
                if (t != null) {
                    stuck.setStackTrace(t.getStackTrace());
                }
                throw stuck;
            }
        }
    }

    /** A condition polled until it holds; it may throw, which ends the wait with that failure. */
    @FunctionalInterface
    private interface Check {
        boolean test() throws Exception;
    }
}
