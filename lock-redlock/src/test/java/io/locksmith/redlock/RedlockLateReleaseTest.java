package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisNodeStore;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The rounds of one acquisition share its owner id. A release sent after a failed round can reach a master
 * late (a slow master, a retransmission), after a later round of the same owner took the lock there: it must
 * act on its own round only.
 */
@DisplayName("redlock releases name their round")
class RedlockLateReleaseTest {

    private static final String OWNER = "0123456789abcdef0123456789abcdef.1";

    @Test
    @DisplayName("the release of a failed round that reaches a master late leaves the next round's hold of the "
            + "same owner there")
    void lateReleaseOfAFailedRoundLeavesTheNextRound() throws Exception {
        String namespace = TestNodes.namespace();
        String name = "rounds";
        String key = new RedisKeys(namespace).lock(name);
        // somebody else holds the lock on masters 1 and 2: round 1 gets master 0 alone, fails, and releases it there
        // (a master that answered busy holds nothing of the round and is sent no release)
        for (int i = 1; i < 3; i++) {
            TestNodes.call(i, jedis -> {
                jedis.hset(key, "somebody-else", "1");
                return jedis.pexpire(key, 60_000);
            });
        }
        CountDownLatch deliver = new CountDownLatch(1);
        CountDownLatch delivered = new CountDownLatch(1);
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(30)).build();
        try (TestNodes.Opened opened = TestNodes.open(3, options, Duration.ofMillis(500),
                i -> i == 0 ? firstReleaseLate(deliver, delivered) : UnaryOperator.identity())) {
            RedlockStore store = opened.store();
            RedlockStore.Hold run = store.newHold(name, OWNER);
            assertThat(store.tryAcquire(run, options.leaseTime(), Duration.ZERO, null).isAcquired())
                    .as("round 1, while somebody else holds the lock").isFalse();
            for (int i = 0; i < 3; i++) {
                TestNodes.call(i, jedis -> jedis.del(key)); // somebody else releases
            }
            assertThat(store.tryAcquire(run, options.leaseTime(), Duration.ZERO, null).isAcquired())
                    .as("round 2 of the same run").isTrue();
            for (int i = 0; i < 3; i++) {
                assertThat(TestNodes.heldNames(i, namespace)).as("master %d after round 2", i).containsExactly(name);
            }

            deliver.countDown();
            assertThat(delivered.await(10, TimeUnit.SECONDS)).as("round 1's release reached master 0").isTrue();
            assertThat(TestNodes.heldNames(0, namespace)).as("master 0 after round 1's late release")
                    .containsExactly(name);

            assertThat(store.release(run)).isTrue();
            assertThat(TestNodes.heldAnywhere(3, namespace)).as("held after the hold's release").isEmpty();
        }
    }

    /** Master 0's first release is held back until {@code deliver}. */
    private static UnaryOperator<RedisNodeStore> firstReleaseLate(CountDownLatch deliver,
            CountDownLatch delivered) {
        AtomicBoolean first = new AtomicBoolean(true);
        return store -> new ForwardingStore(store) {
            @Override
            public boolean release(RedisNodeStore.Attempt attempt) {
                return late(() -> delegate.release(attempt));
            }

            private boolean late(BooleanSupplier release) {
                if (!first.getAndSet(false)) {
                    return release.getAsBoolean();
                }
                try {
                    if (!deliver.await(10, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the test did not let the release go in time");
                    }
                    return release.getAsBoolean();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                } finally {
                    delivered.countDown();
                }
            }
        };
    }
}
