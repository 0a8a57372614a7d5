package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The validity rule on 3 real masters with a time source the test moves: master 0 "takes" a chosen time to
 * answer, as measured by the provider's clock. The store tells how long a hold is valid; the provider's renewer
 * (every 50 ms of real time here) keeps that clock and ends the hold when it runs out unrenewed.
 */
@DisplayName("redlock validity with an injected time source")
class RedlockValidityTest {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final long DRIFT = Validity.drift(LEASE.toNanos());
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final AtomicLong acquireTakes = new AtomicLong();
    /** How long master 0's next renewal takes; used once. */
    private final AtomicLong nextRenewalTakes = new AtomicLong();
    /** Renewal calls master 0 answered: each renewal round makes one. */
    private final AtomicInteger renewals = new AtomicInteger();
    /**
     * What masters 1 and 2 do with a renewal: pass it on, fail it (no answer), answer that the key is gone, or
     * ("fail-1") master 1 fails while master 2 passes it on.
     */
    private final AtomicReference<String> othersRenew = new AtomicReference<>("pass");
    private final List<String> losses = new CopyOnWriteArrayList<>();
    private String namespace;
    private TestNodes.Opened opened;

    @BeforeEach
    void open() {
        TestNodes.servers();
        namespace = TestNodes.namespace();
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(LEASE)
                .renewInterval(Duration.ofMillis(50)).operationTimeout(Duration.ofSeconds(1)).timeSource(now::get)
                .listener((name, reason) -> losses.add(name)).build();
        opened = TestNodes.open(3, options, Duration.ofMillis(500),
                i -> i == 0 ? slowOnTheClock() : unreliableRenewal(i));
    }

    private UnaryOperator<RedisNodeStore> slowOnTheClock() {
        return store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(RedisNodeStore.Attempt attempt, Duration lease) {
                Acquisition a = delegate.tryAcquire(attempt, lease);
                now.addAndGet(acquireTakes.get());
                return a;
            }

            @Override
            public Set<RedisNodeStore.Attempt> renewAttempts(List<RedisNodeStore.Attempt> attempts, Duration lease) {
                Set<RedisNodeStore.Attempt> gone = delegate.renewAttempts(attempts, lease);
                now.addAndGet(nextRenewalTakes.getAndSet(0));
                renewals.incrementAndGet();
                return gone;
            }
        };
    }

    private UnaryOperator<RedisNodeStore> unreliableRenewal(int node) {
        return store -> new ForwardingStore(store) {
            @Override
            public Set<RedisNodeStore.Attempt> renewAttempts(List<RedisNodeStore.Attempt> attempts, Duration lease) {
                String mode = othersRenew.get();
                if (mode.equals("fail-1")) {
                    mode = node == 1 ? "fail" : "pass";
                }
                return switch (mode) {
                    case "fail" -> throw new LockBackendException("no answer (injected)");
                    case "gone" -> Set.copyOf(attempts);
                    default -> delegate.renewAttempts(attempts, lease);
                };
            }
        };
    }

    @Test
    @DisplayName("an acquisition that took longer than the lease fails although every master said yes, "
            + "and is released on every master")
    void tooSlowIsAFailure() {
        try (TestNodes.Opened o = opened) {
            acquireTakes.set(LEASE.toNanos() + 1);
            assertThat(o.provider().getLock("slow").tryLock()).isFalse();
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
            assertThat(o.store().attempts()).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("the boundary: elapsed = lease - drift fails, 1 ms less succeeds")
    void boundary() {
        try (TestNodes.Opened o = opened) {
            acquireTakes.set(LEASE.toNanos() - DRIFT);
            assertThat(o.provider().getLock("edge").tryLock()).as("no validity left").isFalse();
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
            acquireTakes.set(LEASE.toNanos() - DRIFT - 1_000_000);
            var lock = o.provider().getLock("edge");
            assertThat(lock.tryLock()).as("1 ms of validity left").isTrue();
            assertThat(TestNodes.heldAnywhere(3, namespace)).containsExactly("edge");
            lock.unlock();
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }

    @Test
    @DisplayName("a hold is valid for the lease less the drift, counted from the start of the round that took or "
            + "renewed it, however long the round took")
    void validityCountsFromTheRound() {
        try (TestNodes.Opened o = opened) {
            RedlockStore store = o.store();
            RedlockStore.Hold hold = store.newHold("counted", "owner-under-test");
            acquireTakes.set(LEASE.toNanos() / 2);
            Acquisition acquired = store.tryAcquire(hold, LEASE, Duration.ZERO, null);
            assertThat(acquired.isAcquired()).isTrue();
            assertThat(acquired.validFor()).as("validity of the acquisition").hasValue(LEASE.minusNanos(DRIFT));
            nextRenewalTakes.set(LEASE.toNanos() / 2);
            RenewResult<RedlockStore.Hold> renewed = store.renew(List.of(hold), LEASE);
            assertThat(renewed.gone()).isEmpty();
            assertThat(renewed.validFor()).as("validity of the renewal").hasValue(LEASE.minusNanos(DRIFT));
            assertThat(store.release(hold)).isTrue();
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }

    @Test
    @DisplayName("a renewal whose quorum answers after the validity ended gives the hold up on every master")
    void lateRenewalLosesTheHold() {
        try (TestNodes.Opened o = opened) {
            DistributedLock lock = o.provider().getLock("renewed");
            lock.lock();
            nextRenewalTakes.set(LEASE.toNanos() / 2);
            awaitRounds(3);
            assertThat(nextRenewalTakes.get()).as("the slow round ran").isZero();
            assertThat(lock.isHeldByCurrentThread()).as("held after a renewal within validity").isTrue();
            assertThat(TestNodes.heldAnywhere(3, namespace)).containsExactly("renewed");
            assertThat(losses).isEmpty();

            nextRenewalTakes.set(LEASE.toNanos());
            await("the hold is lost after a renewal that took the whole lease", () -> losses.contains("renewed"));
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            await("the hold is released on every master", () -> TestNodes.heldAnywhere(3, namespace).isEmpty());
            assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
            assertThat(losses).containsExactly("renewed");
        }
    }

    @Test
    @DisplayName("a renewal round without a quorum in time keeps the hold while it is valid; a later round renews it")
    void unansweredRenewalIsRetriedWithinTheValidity() {
        try (TestNodes.Opened o = opened) {
            long t0 = now.get();
            DistributedLock lock = o.provider().getLock("kept");
            lock.lock();
            othersRenew.set("fail");
            now.set(t0 + LEASE.toNanos() / 4);
            awaitRounds(3);
            assertThat(lock.isHeldByCurrentThread()).as("1 of 3 answered, validity left").isTrue();
            assertThat(TestNodes.heldAnywhere(3, namespace)).containsExactly("kept");
            othersRenew.set("pass");
            now.set(t0 + LEASE.toNanos() / 2);
            awaitRounds(3);
            assertThat(lock.isHeldByCurrentThread()).as("quorum again").isTrue();
            othersRenew.set("fail");
            now.set(t0 + LEASE.toNanos() + LEASE.toNanos() / 4);
            awaitRounds(3);
            assertThat(lock.isHeldByCurrentThread())
                    .as("past the first validity, within the renewed one: the second round did extend it").isTrue();
            assertThat(losses).isEmpty();
            now.set(t0 + LEASE.toNanos() / 2 + LEASE.toNanos());
            await("the hold is lost once the renewed validity has ended", () -> losses.contains("kept"));
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            await("the hold is released on every master", () -> TestNodes.heldAnywhere(3, namespace).isEmpty());
            assertThat(losses).containsExactly("kept");
        }
    }

    @Test
    @DisplayName("a round without a quorum in time renews nothing and names nothing gone: the store fails it")
    void unansweredRenewalFails() {
        try (TestNodes.Opened o = opened) {
            RedlockStore store = o.store();
            RedlockStore.Hold hold = store.newHold("unanswered", "owner-under-test");
            assertThat(store.tryAcquire(hold, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
            othersRenew.set("fail");
            assertThatThrownBy(() -> store.renew(List.of(hold), LEASE)).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("renew 1 lock(s): not confirmed by a quorum of 2");
            assertThat(TestNodes.heldAnywhere(3, namespace)).as("kept on the masters").containsExactly("unanswered");
            othersRenew.set("pass");
            nextRenewalTakes.set(LEASE.toNanos());
            assertThatThrownBy(() -> store.renew(List.of(hold), LEASE)).as("a quorum, but after the validity")
                    .isInstanceOf(LockBackendException.class).hasMessageContaining("with validity left");
            store.leaseEnded(hold);
            assertThat(TestNodes.heldAnywhere(3, namespace)).as("after the machinery ended the hold").isEmpty();
        }
    }

    @Test
    @DisplayName("a renewal that a majority answers with 'gone' loses the hold at once, validity or not")
    void majoritySaysGone() {
        try (TestNodes.Opened o = opened) {
            RedlockStore store = o.store();
            RedlockStore.Hold hold = store.newHold("denied", "owner-under-test");
            assertThat(store.tryAcquire(hold, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
            othersRenew.set("gone");
            assertThat(store.renew(List.of(hold), LEASE).gone()).containsExactly(hold);
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }

    @Test
    @DisplayName("a batch where a majority says one hold is gone and another is merely unconfirmed: the first is "
            + "gone, the second kept as it is, not given up")
    void mixedBatchKeepsTheUnconfirmed() {
        try (TestNodes.Opened o = opened) {
            RedlockStore store = o.store();
            RedlockStore.Hold gone = store.newHold("gone-by-majority", "owner-under-test");
            RedlockStore.Hold unconfirmed = store.newHold("unconfirmed", "owner-under-test");
            assertThat(store.tryAcquire(gone, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
            assertThat(store.tryAcquire(unconfirmed, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
            RedisKeys keys = new RedisKeys(namespace);
            // master 1 does not answer; masters 0 and 2 deny the first hold, only master 2 denies the second
            TestNodes.call(0, jedis -> jedis.del(keys.lock("gone-by-majority")));
            TestNodes.call(2, jedis -> jedis.del(keys.lock("gone-by-majority"), keys.lock("unconfirmed")));
            othersRenew.set("fail-1");
            RenewResult<RedlockStore.Hold> result = store.renew(List.of(gone, unconfirmed), LEASE);
            assertThat(result.gone()).as("gone").containsExactly(gone);
            assertThat(result.kept()).as("kept as it is").containsExactly(unconfirmed);
            assertThat(TestNodes.heldAnywhere(3, namespace)).as("the gone hold is released everywhere; the kept one "
                    + "stays where it was").containsExactly("unconfirmed");
            store.leaseEnded(unconfirmed);
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }

    /** Waits until master 0 answered {@code rounds} more renewals: the last but one round ran whole after the call. */
    private void awaitRounds(int rounds) {
        int target = renewals.get() + rounds;
        await(rounds + " more renewal rounds", () -> renewals.get() >= target);
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within " + WAIT.toMillis() + " ms: " + what);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for: " + what, e);
            }
        }
    }
}
