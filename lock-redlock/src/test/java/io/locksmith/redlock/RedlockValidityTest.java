package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.spi.Acquisition;
import io.locksmith.redis.internal.RedisNodes;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The validity rule on 3 real masters with a time source the test moves: master 0 "takes" a chosen time to
 * answer, as measured by the provider's clock.
 */
@DisplayName("redlock validity with an injected time source")
class RedlockValidityTest {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final long DRIFT = Validity.drift(LEASE.toNanos());

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final AtomicLong acquireTakes = new AtomicLong();
    private final AtomicLong renewTakes = new AtomicLong();
    /** What masters 1 and 2 do with a renewal: pass it on, fail it (no answer), or answer that the key is gone. */
    private final AtomicReference<String> othersRenew = new AtomicReference<>("pass");
    private String namespace;
    private TestNodes.Opened opened;

    @BeforeEach
    void open() {
        TestNodes.servers();
        namespace = TestNodes.namespace();
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(LEASE)
                .operationTimeout(Duration.ofSeconds(1)).timeSource(now::get).build();
        opened = TestNodes.open(3, options, Duration.ofMillis(500), i -> i == 0 ? slowOnTheClock() : unreliableRenewal());
    }

    private UnaryOperator<RedisNodes.NodeStore> slowOnTheClock() {
        return store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(String name, RedisNodes.Attempt attempt, Duration lease) {
                Acquisition a = delegate.tryAcquire(name, attempt, lease);
                now.addAndGet(acquireTakes.get());
                return a;
            }

            @Override
            public Set<String> renewAttempts(Map<String, RedisNodes.Attempt> holds, Duration lease) {
                Set<String> gone = delegate.renewAttempts(holds, lease);
                now.addAndGet(renewTakes.get());
                return gone;
            }
        };
    }

    private UnaryOperator<RedisNodes.NodeStore> unreliableRenewal() {
        return store -> new ForwardingStore(store) {
            @Override
            public Set<String> renewAttempts(Map<String, RedisNodes.Attempt> holds, Duration lease) {
                return switch (othersRenew.get()) {
                    case "fail" -> throw new LockBackendException("no answer (injected)");
                    case "gone" -> Set.copyOf(holds.keySet());
                    default -> delegate.renewAttempts(holds, lease);
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
    @DisplayName("a renewal whose quorum answers after the validity ended gives the hold up on every master")
    void lateRenewalLosesTheHold() {
        try (TestNodes.Opened o = opened) {
            RedlockStore store = o.store();
            String owner = "owner-under-test";
            assertThat(store.tryAcquire("renewed", owner, LEASE, Duration.ZERO).isAcquired()).isTrue();
            renewTakes.set(LEASE.toNanos() / 2);
            assertThat(store.renew(Map.of("renewed", owner), LEASE)).as("renewal within validity").isEmpty();
            assertThat(TestNodes.heldAnywhere(3, namespace)).containsExactly("renewed");
            renewTakes.set(LEASE.toNanos());
            assertThat(store.renew(Map.of("renewed", owner), LEASE)).as("renewal after the validity ended")
                    .containsExactly("renewed");
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }

    @Test
    @DisplayName("a renewal round without a quorum in time keeps the hold while it is valid; a later round renews it")
    void unansweredRenewalIsRetriedWithinTheValidity() {
        try (TestNodes.Opened o = opened) {
            RedlockStore store = o.store();
            String owner = "owner-under-test";
            long t0 = now.get();
            assertThat(store.tryAcquire("kept", owner, LEASE, Duration.ZERO).isAcquired()).isTrue();
            othersRenew.set("fail");
            now.set(t0 + LEASE.toNanos() / 4);
            assertThat(store.renew(Map.of("kept", owner), LEASE)).as("1 of 3 answered, validity left").isEmpty();
            assertThat(TestNodes.heldAnywhere(3, namespace)).containsExactly("kept");
            othersRenew.set("pass");
            now.set(t0 + LEASE.toNanos() / 2);
            assertThat(store.renew(Map.of("kept", owner), LEASE)).as("quorum again").isEmpty();
            othersRenew.set("fail");
            now.set(t0 + LEASE.toNanos() + LEASE.toNanos() / 4);
            assertThat(store.renew(Map.of("kept", owner), LEASE))
                    .as("past the first validity, within the renewed one: the second round did extend it").isEmpty();
            now.set(t0 + LEASE.toNanos() / 2 + LEASE.toNanos());
            assertThat(store.renew(Map.of("kept", owner), LEASE)).as("the renewed validity has ended")
                    .containsExactly("kept");
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }

    @Test
    @DisplayName("a renewal that a majority answers with 'gone' loses the hold at once, validity or not")
    void majoritySaysGone() {
        try (TestNodes.Opened o = opened) {
            RedlockStore store = o.store();
            String owner = "owner-under-test";
            assertThat(store.tryAcquire("denied", owner, LEASE, Duration.ZERO).isAcquired()).isTrue();
            othersRenew.set("gone");
            assertThat(store.renew(Map.of("denied", owner), LEASE)).containsExactly("denied");
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }
}
