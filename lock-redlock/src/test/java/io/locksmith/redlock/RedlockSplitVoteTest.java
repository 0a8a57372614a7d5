package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.spi.Acquisition;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Two clients race for one lock on 3 masters, the third held by somebody else: A's request reaches master 0
 * first and B's reaches master 1 first, so each gets one vote of the two it needs.
 *
 * <p>The schedule is forced, not hoped for: each client's first request to the master the other one won is held
 * back until the other one holds it, and each client's release of the master it won waits until the other one's
 * request there has been answered busy. Without the second gate, a client that split the vote could release its
 * master before the other client's request reached it, and the other client would win the round outright.
 */
@DisplayName("redlock split vote")
class RedlockSplitVoteTest {

    @Test
    @DisplayName("both release everything, one wins on retry, the other after it; no key is left behind")
    void splitVoteResolves() throws Exception {
        String namespace = TestNodes.namespace();
        String name = "split";
        String key = new RedisKeys(namespace).lock(name);
        TestNodes.call(2, jedis -> {
            jedis.hset(key, "intruder", "1");
            return jedis.pexpire(key, 60_000);
        });
        CountDownLatch aHoldsNode0 = new CountDownLatch(1);
        CountDownLatch bHoldsNode1 = new CountDownLatch(1);
        CountDownLatch aTriedNode1 = new CountDownLatch(1);
        CountDownLatch bTriedNode0 = new CountDownLatch(1);
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(5))
                .operationTimeout(Duration.ofSeconds(2)).build();
        // A's first request to master 1 waits until B holds it, B's first request to master 0 until A holds it;
        // each keeps its master until the other's request there has been answered
        TestNodes.Opened a = TestNodes.open(3, options, Duration.ofSeconds(1),
                i -> i == 0 ? gated(null, aHoldsNode0, bTriedNode0)
                        : i == 1 ? gated(bHoldsNode1, aTriedNode1, null) : UnaryOperator.identity());
        TestNodes.Opened b = TestNodes.open(3, options, Duration.ofSeconds(1),
                i -> i == 1 ? gated(null, bHoldsNode1, aTriedNode1)
                        : i == 0 ? gated(aHoldsNode0, bTriedNode0, null) : UnaryOperator.identity());
        ExecutorService threads = Executors.newFixedThreadPool(2);
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger wins = new AtomicInteger();
        try {
            List<Future<Boolean>> results = List.of(
                    threads.submit(() -> holdBriefly(a.provider().getLock(name), holders, overlaps, wins)),
                    threads.submit(() -> holdBriefly(b.provider().getLock(name), holders, overlaps, wins)));
            for (Future<Boolean> result : results) {
                assertThat(result.get(30, TimeUnit.SECONDS)).as("each client eventually acquires").isTrue();
            }
        } finally {
            threads.shutdownNow();
            a.close();
            b.close();
        }
        assertThat(a.store().splitVotes()).as("A's split votes").isGreaterThanOrEqualTo(1);
        assertThat(b.store().splitVotes()).as("B's split votes").isGreaterThanOrEqualTo(1);
        assertThat(a.store().attempts()).as("A's rounds").isGreaterThanOrEqualTo(2);
        assertThat(b.store().attempts()).as("B's rounds").isGreaterThanOrEqualTo(2);
        assertThat(overlaps.get()).as("moments both held the lock").isZero();
        assertThat(wins.get()).isEqualTo(2);
        TestNodes.call(2, jedis -> jedis.del(key));
        for (int i = 0; i < 3; i++) {
            assertThat(TestNodes.keys(i, namespace)).as("keys left on master %d", i)
                    .allMatch(k -> k.endsWith(":fence"));
        }
    }

    @Test
    @DisplayName("the delay after a split vote: twice the round, at least 1 ms, doubled for each one in a row, at most the retry delay")
    void splitVoteDelayBound() {
        long ms = TimeUnit.MILLISECONDS.toNanos(1);
        long retryDelay = 50 * ms;
        assertThat(RedlockStore.splitVoteBound(0, 100_000, retryDelay)).as("a fast round").isEqualTo(ms);
        assertThat(RedlockStore.splitVoteBound(0, 3 * ms, retryDelay)).as("a slow round").isEqualTo(6 * ms);
        assertThat(RedlockStore.splitVoteBound(1, 3 * ms, retryDelay)).as("the second in a row").isEqualTo(12 * ms);
        assertThat(RedlockStore.splitVoteBound(2, 3 * ms, retryDelay)).isEqualTo(24 * ms);
        assertThat(RedlockStore.splitVoteBound(3, 3 * ms, retryDelay)).isEqualTo(48 * ms);
        assertThat(RedlockStore.splitVoteBound(4, 3 * ms, retryDelay)).as("capped").isEqualTo(retryDelay);
        assertThat(RedlockStore.splitVoteBound(Integer.MAX_VALUE, 3 * ms, retryDelay)).isEqualTo(retryDelay);
        assertThat(RedlockStore.splitVoteBound(0, 200 * ms, retryDelay)).as("a round slower than the cap")
                .isEqualTo(retryDelay);
        assertThat(RedlockStore.splitVoteBound(0, 100_000, ms / 2)).as("a retry delay below 1 ms")
                .isEqualTo(ms / 2);
        assertThat(RedlockStore.splitVoteBound(5, 100_000, 0)).as("no retry delay").isZero();
    }

    private static boolean holdBriefly(DistributedLock lock, AtomicInteger holders, AtomicInteger overlaps,
            AtomicInteger wins) throws InterruptedException {
        if (!lock.tryLock(20, TimeUnit.SECONDS)) {
            return false;
        }
        try {
            if (holders.incrementAndGet() > 1) {
                overlaps.incrementAndGet();
            }
            wins.incrementAndGet();
            Thread.sleep(100);
            holders.decrementAndGet();
        } finally {
            lock.unlock();
        }
        return true;
    }

    /**
     * A node store whose first acquisition waits for {@code before} and then, answered, counts down {@code done},
     * and whose first release waits for {@code releaseAfter}; null: no such step.
     */
    private static UnaryOperator<RedisNodeStore> gated(CountDownLatch before, CountDownLatch done,
            CountDownLatch releaseAfter) {
        AtomicBoolean firstAcquire = new AtomicBoolean(true);
        AtomicBoolean firstRelease = new AtomicBoolean(true);
        return store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(RedisNodeStore.Attempt attempt, Duration lease) {
                boolean gated = firstAcquire.getAndSet(false);
                try {
                    if (gated) {
                        await(before, "the other client's request never took this master");
                    }
                    return delegate.tryAcquire(attempt, lease);
                } finally {
                    if (gated && done != null) {
                        done.countDown();
                    }
                }
            }

            @Override
            public boolean release(RedisNodeStore.Attempt attempt) {
                if (firstRelease.getAndSet(false)) {
                    await(releaseAfter, "the other client's request never reached this master");
                }
                return delegate.release(attempt);
            }
        };
    }

    private static void await(CountDownLatch latch, String failure) {
        if (latch == null) {
            return;
        }
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError(failure);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
