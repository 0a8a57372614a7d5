package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisNodes;
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
 */
@DisplayName("redlock split vote")
class RedlockSplitVoteTest {

    @Test
    @DisplayName("both release everything, one wins on retry, the other after it; no key is left behind")
    void splitVoteResolves() throws Exception {
        String namespace = TestNodes.namespace();
        String name = "split";
        String key = RedisNodes.lockKey(namespace, name);
        TestNodes.call(2, jedis -> {
            jedis.hset(key, "intruder", "1");
            return jedis.pexpire(key, 60_000);
        });
        CountDownLatch aOnNode0 = new CountDownLatch(1);
        CountDownLatch bOnNode1 = new CountDownLatch(1);
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(5))
                .operationTimeout(Duration.ofSeconds(2)).build();
        // A's first request to master 1 waits for B's, and B's first request to master 0 waits for A's
        TestNodes.Opened a = TestNodes.open(3, options, Duration.ofSeconds(1),
                i -> i == 0 ? after(null, aOnNode0) : i == 1 ? after(bOnNode1, null) : UnaryOperator.identity());
        TestNodes.Opened b = TestNodes.open(3, options, Duration.ofSeconds(1),
                i -> i == 1 ? after(null, bOnNode1) : i == 0 ? after(aOnNode0, null) : UnaryOperator.identity());
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

    /** A node store whose first acquisition waits for {@code before} and then counts down {@code done}. */
    private static UnaryOperator<RedisNodes.NodeStore> after(CountDownLatch before, CountDownLatch done) {
        AtomicBoolean first = new AtomicBoolean(true);
        return store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(String name, RedisNodes.Attempt attempt, Duration lease) {
                boolean gated = first.getAndSet(false);
                try {
                    if (gated && before != null && !before.await(10, TimeUnit.SECONDS)) {
                        throw new AssertionError("the other client's request never came");
                    }
                    return delegate.tryAcquire(name, attempt, lease);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(e);
                } finally {
                    if (gated && done != null) {
                        done.countDown();
                    }
                }
            }
        };
    }
}
