package io.locksmith.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedReadWriteLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockHandle;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.local.LocalLockServer;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import io.locksmith.spi.RenewResult;
import io.locksmith.spi.StoreEvents;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The shared machinery, driven through the public API over the real in-JVM store with decorated calls. */
class StoreLockProviderTest {

    private final LocalLockServer server = LocalLockServer.named("machinery-" + UUID.randomUUID());
    private final BlockingQueue<String> losses = new LinkedBlockingQueue<>();
    private final LockOptions options = LockOptions.builder()
            .leaseTime(Duration.ofSeconds(30))
            .operationTimeout(Duration.ofSeconds(1))
            .listener((name, reason) -> losses.add(name + ": " + reason))
            .build();
    private final List<LockProvider> providers = new ArrayList<>();

    @AfterEach
    void closeProviders() {
        providers.forEach(LockProvider::close);
        assertThat(server.heldKeys()).as("locks left in the store").isEmpty();
    }

    private LockProvider provider(LockOptions opts, Function<LockStore<?>, LockStore<?>> decorate) {
        LockProvider provider = LockStores.newProvider(decorate.apply(server.newStore(opts)), opts);
        providers.add(provider);
        return provider;
    }

    private LockProvider provider() {
        return provider(options, Function.identity());
    }

    @Test
    void aReleaseWhoseAnswerWasLostEndsTheHoldAndItsRetrySucceeds() {
        AtomicBoolean failNextRelease = new AtomicBoolean(true);
        LockProvider provider = provider(options, store -> new ForwardingStore(store) {
            @Override
            public boolean release(Object hold) {
                boolean released = super.release(hold);
                if (failNextRelease.getAndSet(false)) {
                    throw new LockBackendException("response timed out (the release went through)");
                }
                return released;
            }
        });
        DistributedLock lock = provider.getLock("retry");
        lock.lock();
        assertThatThrownBy(lock::unlock).isInstanceOf(LockBackendException.class)
                .hasMessageContaining("may or may not have been applied").hasMessageContaining("'retry'");
        assertThat(lock.isHeldByCurrentThread()).as("a release of unknown outcome ends the hold").isFalse();
        // another client may hold it now: no re-entry
        assertThat(provider().getLock("retry").tryLock()).isTrue();
        assertThat(lock.tryLock()).as("the releasing thread must not re-enter a lock another client holds").isFalse();
        lock.unlock(); // the user's own retry: the release went through, so it returns normally
        assertThat(losses).as("a released lock is not a lost one").isEmpty();
        providers.get(1).getLock("retry").unlock();
    }

    @Test
    void anAsynchronousAttemptAtTheStoreWhenTheProviderClosesGivesItsGrantBackBeforeTheStoreCloses()
            throws Exception {
        CountDownLatch atStore = new CountDownLatch(1);
        CountDownLatch answer = new CountDownLatch(1);
        AtomicBoolean storeClosed = new AtomicBoolean();
        LockProvider provider = provider(options, store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(Object hold, Duration lease, Duration wait, Runnable wakeUp) {
                atStore.countDown();
                try {
                    answer.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return super.tryAcquire(hold, lease, wait, wakeUp);
            }

            @Override
            public boolean release(Object hold) {
                if (storeClosed.get()) {
                    // as a JDBC store whose pool is closed: nothing reaches the store any more
                    throw new LockBackendException("the store's client is closed");
                }
                return super.release(hold);
            }

            @Override
            public void close() {
                storeClosed.set(true);
                super.close();
            }
        });
        provider.getLock("closing").acquireAsync();
        assertThat(atStore.await(5, TimeUnit.SECONDS)).as("the asynchronous attempt reached the store").isTrue();
        Thread closer = new Thread(provider::close, "closer");
        closer.start();
        // the attempt answers once close() is under way: waiting for it, or (without the wait) past the store's close
        awaitTrue(() -> storeClosed.get() || closer.getState() == Thread.State.TIMED_WAITING, Duration.ofSeconds(5));
        answer.countDown();
        closer.join(10_000);
        assertThat(closer.isAlive()).as("close() returned").isFalse();
        // closeProviders() checks that the store holds nothing: the grant was given back through the open store
    }

    @Test
    void anInterruptibleReentryWithTheFlagSetThrowsLikeReentrantLock() throws Exception {
        DistributedLock lock = provider().getLock("flag");
        lock.lock();
        Thread.currentThread().interrupt();
        assertThatThrownBy(lock::lockInterruptibly).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).as("the flag is cleared by the throw, as ReentrantLock does").isFalse();
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> lock.tryLock(1, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        assertThat(lock.getHoldCount()).isEqualTo(1);
        lock.unlock();
    }

    @Test
    void aRenewalThatFindsTheKeyGoneBecauseOfTheOwnersOwnReleaseReportsNoLoss() throws Exception {
        // a lease so long that the scheduler stays out of the way: the test runs the round itself
        LockOptions slow = options.toBuilder().leaseTime(Duration.ofHours(1)).build();
        CountDownLatch releaseDone = new CountDownLatch(1);
        CountDownLatch answerMayReturn = new CountDownLatch(1);
        LockProvider provider = provider(slow, store -> new ForwardingStore(store) {
            @Override
            public boolean release(Object hold) {
                boolean released = super.release(hold);
                releaseDone.countDown();
                try {
                    answerMayReturn.await(); // the store has deleted the hold; its answer is still on the way
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return released;
            }
        });
        DistributedLock lock = provider.getLock("own-release");
        AtomicReference<Throwable> unlockFailure = new AtomicReference<>();
        Thread owner = new Thread(() -> {
            lock.lock();
            try {
                lock.unlock();
            } catch (Throwable t) {
                unlockFailure.set(t);
            }
        });
        owner.start();
        assertThat(releaseDone.await(10, TimeUnit.SECONDS)).isTrue();
        ((StoreLockProvider<?>) provider).renewAll(); // finds the key gone while the release is in flight
        answerMayReturn.countDown();
        owner.join(10_000);
        assertThat(owner.isAlive()).isFalse();
        assertThat(unlockFailure.get()).as("unlock() of a hold it released itself").isNull();
        assertThat(losses).as("a released hold is not a lost one").isEmpty();
        assertThat(provider().getLock("own-release").tryLock()).isTrue();
        providers.get(1).getLock("own-release").unlock();
    }

    @Test
    void aRenewalDuringAReleaseThatFindsNothingStillEndsInOneLossReport() throws Exception {
        LockOptions slow = options.toBuilder().leaseTime(Duration.ofHours(1)).build();
        CountDownLatch releaseStarted = new CountDownLatch(1);
        CountDownLatch releaseMayRun = new CountDownLatch(1);
        LockProvider provider = provider(slow, store -> new ForwardingStore(store) {
            @Override
            public boolean release(Object hold) {
                releaseStarted.countDown();
                try {
                    releaseMayRun.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return super.release(hold);
            }
        });
        DistributedLock lock = provider.getLock("expired");
        AtomicReference<Throwable> unlockFailure = new AtomicReference<>();
        Thread owner = new Thread(() -> {
            lock.lock();
            try {
                lock.unlock();
            } catch (Throwable t) {
                unlockFailure.set(t);
            }
        });
        owner.start();
        assertThat(releaseStarted.await(10, TimeUnit.SECONDS)).isTrue();
        server.forceRelease(slow.namespace(), "expired"); // gone before the release reaches the store
        ((StoreLockProvider<?>) provider).renewAll();
        releaseMayRun.countDown();
        owner.join(10_000);
        assertThat(owner.isAlive()).isFalse();
        assertThat(unlockFailure.get()).isInstanceOf(LockLostException.class);
        assertThat(losses.poll(5, TimeUnit.SECONDS)).startsWith("expired: ");
        assertThat(losses.poll(200, TimeUnit.MILLISECONDS)).as("reported once").isNull();
    }

    @Test
    void aFirstReleaseThatFindsNothingReportsTheLoss() throws Exception {
        DistributedLock lock = provider().getLock("gone");
        lock.lock();
        server.forceRelease(options.namespace(), "gone");
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class).hasMessageContaining("'gone'");
        assertThatThrownBy(lock::unlock).isNotInstanceOf(LockLostException.class)
                .isInstanceOf(IllegalMonitorStateException.class);
        assertThat(losses.poll(5, TimeUnit.SECONDS)).startsWith("gone: ").contains("no longer had it");
        assertThat(losses.poll(200, TimeUnit.MILLISECONDS)).isNull();
    }

    @Test
    void anInterruptAtTheMomentOfGrantLeavesNothingHeld() {
        LockProvider provider = provider(options, store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(Object hold, Duration lease, Duration wait, Runnable wakeUp) {
                Acquisition outcome = super.tryAcquire(hold, lease, wait, wakeUp);
                Thread.currentThread().interrupt(); // the interrupt lands while the grant is on its way back
                return outcome;
            }
        });
        DistributedLock lock = provider.getLock("grant");
        assertThatThrownBy(lock::lockInterruptibly).isInstanceOf(InterruptedException.class)
                .hasMessageContaining("released");
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThat(server.heldKeys()).isEmpty();
        assertThat(Thread.interrupted()).as("InterruptedException clears the flag").isFalse();
    }

    @Test
    void anInterruptedThreadStillLocksAndUnlocksAndKeepsItsFlag() {
        LockProvider provider = provider(options, store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(Object hold, Duration lease, Duration wait, Runnable wakeUp) {
                assertThat(Thread.currentThread().isInterrupted()).as("flag hidden from the store").isFalse();
                return super.tryAcquire(hold, lease, wait, wakeUp);
            }

            @Override
            public boolean release(Object hold) {
                assertThat(Thread.currentThread().isInterrupted()).as("flag hidden from the store").isFalse();
                return super.release(hold);
            }
        });
        DistributedLock lock = provider.getLock("flag");
        Thread.currentThread().interrupt();
        try {
            lock.lock();
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
            lock.unlock();
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
            assertThat(server.heldKeys()).isEmpty();
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void aStoreDownForLongerThanTheLeaseCostsOneFailedCallPerRound() throws Exception {
        AtomicInteger renewCalls = new AtomicInteger();
        LockOptions fast = options.toBuilder().leaseTime(Duration.ofMillis(900)).build();
        LockProvider provider = provider(fast, store -> new ForwardingStore(store) {
            @Override
            public int renewBatchSize() {
                return 10;
            }

            @Override
            public RenewResult<Object> renew(List<Object> holds, Duration lease) {
                renewCalls.incrementAndGet();
                return super.renew(holds, lease);
            }
        });
        List<DistributedLock> locks = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            DistributedLock lock = provider.getLock("down-" + i);
            lock.lock();
            locks.add(lock);
        }
        server.kill();
        try {
            for (int i = 0; i < 50; i++) {
                assertThat(losses.poll(10, TimeUnit.SECONDS)).as("loss %d", i).isNotNull().contains("renewal failed");
            }
            // 5 batches a round: a round that meets a dead store stops after its first failed call
            assertThat(renewCalls.get()).isLessThan(5 * 3);
            assertThat(locks).noneMatch(DistributedLock::isHeldByCurrentThread);
            for (DistributedLock lock : locks) {
                assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
            }
        } finally {
            server.start();
        }
    }

    @Test
    void anEndlessWaitIsNotAnOverflow() throws Exception {
        DistributedLock lock = provider().getLock("endless");
        assertThat(lock.tryLock(Long.MAX_VALUE, TimeUnit.DAYS)).isTrue();
        lock.unlock();
        assertThat(lock.tryLock(Duration.ofSeconds(Long.MAX_VALUE), Duration.ofSeconds(Long.MAX_VALUE))).isTrue();
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        lock.unlock();
    }

    @Test
    void readEntriesEndWithTheirHolds() throws Exception {
        LockProvider provider = provider();
        LockProvider operator = provider();
        DistributedReadWriteLock rw = provider.getReadWriteLock("rw-entries");
        rw.readLock().lock();
        rw.readLock().lock();
        Thread sibling = new Thread(() -> {
            rw.readLock().lock();
            rw.readLock().unlock();
        });
        sibling.start();
        sibling.join();
        LockHandle handle = rw.readLock().tryAcquireAsync(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
        assertThat(((StoreLockProvider<?>) provider).entryCounts()).as("entries: the thread's read, the handle's read")
                .containsExactly(2, 2);
        assertThat(operator.inspect("rw-entries").owner()).hasValueSatisfying(owner ->
                assertThat(owner).startsWith("readers "));
        handle.close();
        rw.readLock().unlock();
        rw.readLock().unlock();
        assertThat(((StoreLockProvider<?>) provider).entryCounts()).as("entries after every read ended")
                .containsExactly(0, 0);
        // a lost read hold keeps its entry until its thread hears of the loss
        rw.readLock().lock();
        assertThat(operator.forceRelease("rw-entries")).isTrue();
        ((StoreLockProvider<?>) provider).renewAll();
        assertThat(losses.poll(5, TimeUnit.SECONDS)).startsWith("rw-entries: ");
        assertThat(((StoreLockProvider<?>) provider).entryCounts()).containsExactly(1, 1);
        assertThatThrownBy(rw.readLock()::unlock).isInstanceOf(LockLostException.class);
        assertThat(((StoreLockProvider<?>) provider).entryCounts()).as("entries after the loss was reported")
                .containsExactly(0, 0);
        // with no read entry left, the write lock is taken without looking for one
        rw.writeLock().lock();
        rw.writeLock().unlock();
    }

    @Test
    void operatorsCanInspectAndForceARelease() throws Exception {
        DistributedLock lock = provider().getLock("stuck");
        LockProvider operator = provider();
        assertThat(operator.inspect("stuck").isLocked()).isFalse();
        lock.lock();
        long token = lock.fencingToken();
        var info = operator.inspect("stuck");
        assertThat(info.isLocked()).isTrue();
        assertThat(info.owner()).hasValueSatisfying(owner -> assertThat(owner).startsWith(providers.get(0).clientId() + "."));
        assertThat(info.fencingToken()).hasValue(token);
        assertThat(info.leaseRemaining()).hasValueSatisfying(left ->
                assertThat(left).isPositive().isLessThanOrEqualTo(options.leaseTime()));
        assertThat(info.acquiredAt()).isPresent();
        assertThat(operator.forceRelease("stuck")).isTrue();
        assertThat(operator.forceRelease("stuck")).isFalse();
        assertThat(operator.inspect("stuck").isLocked()).isFalse();
        assertThat(operator.inspect("stuck").fencingToken()).hasValue(token);
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
        assertThat(losses.poll(5, TimeUnit.SECONDS)).startsWith("stuck: ");
        assertThatThrownBy(() -> operator.inspect("bad\n")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aWaiterThatGivesUpWithdrawsFromTheStoreQueue() throws Exception {
        List<String> abandoned = new CopyOnWriteArrayList<>();
        LockProvider waiter = provider(options, store -> new ForwardingStore(store) {
            @Override
            public void abandon(Object hold) {
                abandoned.add(name(hold) + " by " + owner(hold));
            }
        });
        DistributedLock held = provider().getLock("queue-exit");
        held.lock();
        DistributedLock lock = waiter.getLock("queue-exit");
        assertThat(lock.tryLock()).isFalse();
        assertThat(lock.tryLock(50, TimeUnit.MILLISECONDS)).isFalse();
        // each acquisition run has its own owner id: the client id, a dot and a number
        assertThat(abandoned).hasSize(2).doesNotHaveDuplicates()
                .allSatisfy(entry -> assertThat(entry).startsWith("queue-exit by " + waiter.clientId() + "."));
        held.unlock();
        assertThat(lock.tryLock()).isTrue();
        lock.unlock();
        assertThat(abandoned).hasSize(2);
    }

    @Test
    void reentryCostsNoRoundTrip() {
        DistributedLock lock = provider().getLock("again");
        lock.lock();
        long before = server.operationCount();
        for (int i = 0; i < 100; i++) {
            assertThat(lock.tryLock()).isTrue();
            lock.lock();
        }
        assertThat(lock.getHoldCount()).isEqualTo(201);
        for (int i = 0; i < 200; i++) {
            lock.unlock();
        }
        assertThat(server.operationCount()).isEqualTo(before);
        lock.unlock();
        assertThat(server.operationCount()).isEqualTo(before + 1);
    }

    @Test
    void aHoldTheStoreKeepsAsItIsStaysValidOnlyUntilItsValidityEnds() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        // renewal rounds are run by the test; the scheduler's own (every 20 real minutes) stay out of the way
        LockOptions manual = options.toBuilder().leaseTime(Duration.ofHours(1)).timeSource(now::get).build();
        AtomicBoolean keep = new AtomicBoolean(true);
        LockProvider provider = provider(manual, store -> new ForwardingStore(store) {
            @Override
            public RenewResult<Object> renew(List<Object> holds, Duration lease) {
                RenewResult<Object> renewed = super.renew(holds, lease);
                return keep.get() ? RenewResult.of(Set.of(), Set.copyOf(holds), lease) : renewed;
            }
        });
        DistributedLock kept = provider.getLock("kept-as-is");
        DistributedLock alike = provider.getLock("kept-too");
        kept.lock();
        alike.lock();
        now.addAndGet(Duration.ofMinutes(40).toNanos());
        ((StoreLockProvider<?>) provider).renewAll(); // both kept as they are: valid until t0 + 60 min
        keep.set(false);
        now.addAndGet(Duration.ofMinutes(15).toNanos());
        assertThat(kept.isHeldByCurrentThread()).as("55 min in, within the first validity").isTrue();
        assertThat(alike.isHeldByCurrentThread()).isTrue();
        assertThat(losses).isEmpty();
        now.addAndGet(Duration.ofMinutes(10).toNanos());
        assertThat(kept.isHeldByCurrentThread()).as("65 min in: the round that kept it did not extend it").isFalse();
        assertThat(alike.isHeldByCurrentThread()).isFalse();
        Set<String> lost = new java.util.TreeSet<>();
        for (int i = 0; i < 2; i++) {
            String loss = losses.poll(10, TimeUnit.SECONDS);
            assertThat(loss).as("loss report %d", i + 1).isNotNull();
            lost.add(loss.substring(0, loss.indexOf(':')));
        }
        assertThat(lost).containsExactly("kept-as-is", "kept-too");
        assertThatThrownBy(kept::unlock).isInstanceOf(LockLostException.class);
        assertThatThrownBy(alike::unlock).isInstanceOf(LockLostException.class);
        // the in-JVM server ends leases by the real clock, an hour from now: free the keys for the leak check
        server.forceRelease(manual.namespace(), "kept-as-is");
        server.forceRelease(manual.namespace(), "kept-too");
    }

    @Test
    void renewalsAreBatchedAndNeedNoThreadPerLock() {
        List<Integer> batches = new CopyOnWriteArrayList<>();
        // a lease so long that the scheduler stays out of the way: the test runs the rounds itself
        LockOptions slow = options.toBuilder().leaseTime(Duration.ofHours(1)).build();
        LockProvider provider = provider(slow, store -> new ForwardingStore(store) {
            @Override
            public RenewResult<Object> renew(List<Object> holds, Duration lease) {
                batches.add(holds.size());
                return super.renew(holds, lease);
            }
        });
        int threadsBefore = Thread.activeCount();
        List<DistributedLock> locks = new ArrayList<>();
        for (int i = 0; i < 250; i++) {
            DistributedLock lock = provider.getLock("batch-" + i);
            lock.lock();
            locks.add(lock);
        }
        ((StoreLockProvider<?>) provider).renewAll();
        ((StoreLockProvider<?>) provider).renewAll();
        // each round renews all 250 holds in ceil(250 / 100) = 3 calls of at most 100 names
        assertThat(batches).hasSize(6).allMatch(size -> size <= 100);
        assertThat(batches.stream().mapToInt(Integer::intValue).sum()).isEqualTo(500);
        assertThat(Thread.activeCount() - threadsBefore).as("threads added by 250 holds").isLessThanOrEqualTo(1);
        assertThat(locks).allMatch(DistributedLock::isHeldByCurrentThread);
        assertThat(losses).isEmpty();
        locks.forEach(DistributedLock::unlock);
    }

    @Test
    void theSchedulerRenewsHoldsPastTheirLease() throws Exception {
        AtomicInteger renewals = new AtomicInteger();
        LockOptions fast = options.toBuilder().leaseTime(Duration.ofMillis(1500)).build();
        LockProvider provider = provider(fast, store -> new ForwardingStore(store) {
            @Override
            public RenewResult<Object> renew(List<Object> holds, Duration lease) {
                renewals.incrementAndGet();
                return super.renew(holds, lease);
            }
        });
        DistributedLock lock = provider.getLock("kept");
        lock.lock();
        awaitTrue(() -> renewals.get() >= 6, Duration.ofSeconds(20)); // at least three leases' worth of renewals
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        assertThat(provider().getLock("kept").tryLock()).isFalse();
        assertThat(losses).isEmpty();
        lock.unlock();
    }

    @Test
    void threadsOfOneProviderQueueLocallyInsteadOfPollingTheStore() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        LockProvider waiters = provider(options, store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(Object hold, Duration lease, Duration wait, Runnable wakeUp) {
                attempts.incrementAndGet();
                return super.tryAcquire(hold, lease, wait, wakeUp);
            }
        });
        DistributedLock held = provider().getLock("queue");
        held.lock();
        int threads = 5;
        CountDownLatch done = new CountDownLatch(threads);
        AtomicInteger acquired = new AtomicInteger();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                DistributedLock lock = waiters.getLock("queue");
                lock.lock();
                acquired.incrementAndGet();
                lock.unlock();
                done.countDown();
            });
            t.start();
        }
        awaitTrue(() -> attempts.get() >= 2, Duration.ofSeconds(10));
        Thread.sleep(300); // give the queued threads every chance to hit the store, which they must not
        assertThat(attempts.get()).as("store attempts while the lock is held elsewhere: the head's first try and "
                + "its re-check after subscribing").isEqualTo(2);
        held.unlock();
        assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(acquired.get()).isEqualTo(threads);
    }

    @Test
    void aHoldWhoseThreadDiedIsReleasedAndReported() throws Exception {
        LockOptions fast = options.toBuilder().leaseTime(Duration.ofMillis(600)).build();
        LockProvider provider = provider(fast, Function.identity());
        Thread owner = new Thread(() -> provider.getLock("orphan").lock());
        owner.start();
        owner.join();
        assertThat(losses.poll(10, TimeUnit.SECONDS)).startsWith("orphan: ").contains("ended without unlocking");
        assertThat(provider().getLock("orphan").tryLock()).isTrue();
        providers.get(1).getLock("orphan").unlock();
        assertThat(provider.getLock("orphan").tryLock()).as("the provider's own threads may lock it again").isTrue();
        provider.getLock("orphan").unlock();
    }

    @Test
    void lossesPushedByTheStoreEndTheHold() throws Exception {
        AtomicReference<StoreEvents<Object>> events = new AtomicReference<>();
        Map<String, Object> holds = new ConcurrentHashMap<>();
        LockProvider provider = provider(options, store -> new ForwardingStore(store) {
            @Override
            public void start(StoreEvents<Object> sink) {
                events.set(sink);
            }

            @Override
            public Acquisition tryAcquire(Object hold, Duration lease, Duration wait, Runnable wakeUp) {
                Acquisition answer = super.tryAcquire(hold, lease, wait, wakeUp);
                if (answer.isAcquired()) {
                    holds.put(name(hold), hold);
                }
                return answer;
            }
        });
        DistributedLock a = provider.getLock("session-a");
        DistributedLock b = provider.getLock("session-b");
        a.lock();
        Object earlier = holds.get("session-a");
        a.unlock();
        a.lock();
        b.lock();
        assertThat(holds.get("session-a")).isNotSameAs(earlier);
        events.get().holdLost(earlier, "a late event about an earlier hold of the same lock");
        assertThat(a.isHeldByCurrentThread()).as("a loss event names the hold, not only the lock").isTrue();
        events.get().holdLost(holds.get("session-a"), "node deleted");
        assertThat(losses.poll(5, TimeUnit.SECONDS)).isEqualTo("session-a: node deleted");
        assertThat(a.isHeldByCurrentThread()).isFalse();
        assertThat(b.isHeldByCurrentThread()).isTrue();
        events.get().allHoldsLost("session expired");
        assertThat(losses.poll(5, TimeUnit.SECONDS)).isEqualTo("session-b: session expired");
        assertThatThrownBy(b::fencingToken).isInstanceOf(LockLostException.class).hasMessageContaining("session expired");
        assertThatThrownBy(b::unlock).isInstanceOf(LockLostException.class);
        assertThatThrownBy(a::unlock).isInstanceOf(LockLostException.class).hasMessageContaining("node deleted");
        assertThat(losses).isEmpty();
        // the store still has them (this store did not really lose them): free them for the leak check
        server.forceRelease(options.namespace(), "session-a");
        server.forceRelease(options.namespace(), "session-b");
        a.lock();
        assertThat(a.getHoldCount()).isEqualTo(1);
        a.unlock();
    }

    @Test
    void anExplicitLeaseEndsByItselfAndIsReportedOnce() throws Exception {
        DistributedLock lock = provider().getLock("lease");
        assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(200))).isTrue();
        assertThat(losses.poll(10, TimeUnit.SECONDS)).startsWith("lease: ").contains("200 ms");
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
        assertThat(losses.poll(300, TimeUnit.MILLISECONDS)).isNull();
    }

    @Test
    void aStoreThatIsDownFailsCallsWithItsAddress() {
        DistributedLock lock = provider().getLock("down");
        server.kill();
        try {
            assertThatThrownBy(lock::lock).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("'down'").hasMessageContaining(server.toString());
            assertThatThrownBy(() -> lock.tryLock(100, TimeUnit.MILLISECONDS)).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("wait limit 100 ms");
        } finally {
            server.start();
        }
        lock.lock();
        lock.unlock();
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, Duration limit) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("condition not met within " + limit);
            }
            Thread.sleep(10);
        }
    }
}
