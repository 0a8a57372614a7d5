package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A renewal round that is out while its lock is released and taken again by the same provider: the masters answer
 * about the old hold (gone), and the round must not give the new hold up on their word.
 */
@DisplayName("redlock renewal racing a release and a new acquisition")
class RedlockRenewalRaceTest {

    @Test
    @DisplayName("a renewal round about a released hold leaves the next hold of the same name alone")
    void renewalOfAReleasedHoldKeepsTheNewOne() throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        CountDownLatch reacquired = new CountDownLatch(1);
        CountDownLatch asked = new CountDownLatch(TestNodes.COUNT);
        CountDownLatch answered = new CountDownLatch(TestNodes.COUNT);
        Set<String> owners = ConcurrentHashMap.newKeySet();
        AtomicReference<RedlockStore.Hold> taken = new AtomicReference<>();
        LockOptions options = LockOptions.builder().namespace(TestNodes.namespace())
                .leaseTime(Duration.ofSeconds(30)).storeWrapper(store -> keepingTheHold(store, taken)).build();
        try (TestNodes.Opened opened = TestNodes.open(TestNodes.COUNT, options, Duration.ofSeconds(5),
                i -> store -> new ForwardingStore(store) {
                    @Override
                    public Acquisition tryAcquire(RedisNodeStore.Attempt attempt, Duration lease) {
                        owners.add(attempt.hold().owner());
                        return delegate.tryAcquire(attempt, lease);
                    }

                    @Override
                    public Set<RedisNodeStore.Attempt> renewAttempts(List<RedisNodeStore.Attempt> attempts,
                            Duration lease) {
                        // asked while the first hold exists, answers once it is released, returns after the second
                        asked.countDown();
                        await(released);
                        Set<RedisNodeStore.Attempt> gone = delegate.renewAttempts(attempts, lease);
                        answered.countDown();
                        await(reacquired);
                        return gone;
                    }
                })) {
            DistributedLock lock = opened.provider().getLock("race");
            lock.lock();
            long first = lock.fencingToken();
            assertThat(owners).as("owner ids the masters were asked for").hasSize(1);
            String owner = owners.iterator().next();
            assertThat(owner).startsWith(opened.provider().clientId() + ".");
            RedlockStore.Hold firstHold = taken.get();
            assertThat(firstHold.owner).isEqualTo(owner);
            CompletableFuture<RenewResult<RedlockStore.Hold>> round = CompletableFuture.supplyAsync(
                    () -> opened.store().renew(List.of(firstHold), options.leaseTime()));
            assertThat(asked.await(10, TimeUnit.SECONDS)).as("every master asked to renew").isTrue();
            lock.unlock();
            released.countDown();
            assertThat(answered.await(10, TimeUnit.SECONDS)).as("every master answered").isTrue();
            lock.lock();
            assertThat(lock.fencingToken()).isGreaterThan(first);
            reacquired.countDown();
            assertThat(round.get(10, TimeUnit.SECONDS).gone()).as("the round's answer about the first hold")
                    .containsExactly(firstHold);
            assertThat(taken.get()).as("the second hold").isNotSameAs(firstHold);

            assertThat(TestNodes.heldAnywhere(TestNodes.COUNT, options.namespace()))
                    .as("the new hold on the masters after the round").containsExactly("race");
            assertThat(lock.isHeldByCurrentThread()).isTrue();
            lock.unlock(); // would throw LockLostException had the round released the new hold
        }
    }

    /** Passes every call on, and keeps the hold of the last acquisition the store granted in {@code taken}. */
    @SuppressWarnings("unchecked") // the provider's store is the Redlock store
    private static LockStore<?> keepingTheHold(LockStore<?> store, AtomicReference<RedlockStore.Hold> taken) {
        return new ForwardingLockStore<>((LockStore<RedlockStore.Hold>) store) {
            @Override
            public Acquisition tryAcquire(RedlockStore.Hold hold, Duration lease, Duration wait, Runnable wakeUp) {
                Acquisition answer = super.tryAcquire(hold, lease, wait, wakeUp);
                if (answer.isAcquired()) {
                    taken.set(hold);
                }
                return answer;
            }
        };
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test did not get there in time");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
