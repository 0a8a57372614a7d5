package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * FIFO fairness ({@code ?fairness=fifo}): waiters of different providers are served in order of arrival, a
 * provider's own next thread queues behind them, waiters that died lapse without holding the queue up for longer
 * than their own time, bounded-fairness providers do not pass queued waiters, and a waiter that gives up leaves
 * the queue. Orders are observed, never timed: each step waits for the queue to show what the previous one did.
 */
@DisplayName("Redis FIFO fairness across providers")
class RedisFifoTest {

    private static final Duration BOUND = Duration.ofSeconds(20);
    private static final String NAME = "fifo";

    @RegisterExtension
    static final OwnRedis REDIS = new OwnRedis();

    private final List<LockProvider> providers = new ArrayList<>();
    private ExecutorService threads;
    private LockOptions options;
    private RedisKeys keys;


    @BeforeEach
    void setUp() {
        options = LockOptions.builder().namespace(TestRedis.freshNamespace()).leaseTime(Duration.ofSeconds(60))
                .build();
        keys = new RedisKeys(options.namespace());
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        threads.shutdownNow();
        threads.awaitTermination(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        providers.forEach(LockProvider::close);
    }

    private LockProvider open(String fairness) {
        LockProvider provider = LockProvider.open(REDIS.server().uri() + "?fairness=" + fairness, options);
        providers.add(provider);
        return provider;
    }

    private long queued() {
        return REDIS.admin().call(jedis -> jedis.zcard(keys.queue(NAME)));
    }

    private List<String> queue() {
        return REDIS.admin().call(jedis -> jedis.zrange(keys.queue(NAME), 0, -1));
    }

    /** A thread that takes the lock, notes {@code who}, and gives it back. */
    private Future<?> takeInTurn(DistributedLock lock, String who, List<String> order) {
        return threads.submit(() -> {
            lock.lock();
            try {
                order.add(who);
            } finally {
                lock.unlock();
            }
        });
    }

    /** Puts a waiter that never looks again into the queue, as a process that died while waiting leaves it. */
    private void deadWaiter(String owner, long score, Duration left) {
        REDIS.admin().call(jedis -> {
            List<String> time = jedis.time();
            long now = Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
            jedis.zadd(keys.queue(NAME), score, owner);
            jedis.zadd(keys.queueDeadlines(NAME), now + left.toMillis(), owner);
            jedis.pexpire(keys.queue(NAME), 120_000);
            jedis.pexpire(keys.queueDeadlines(NAME), 120_000);
            return null;
        });
    }

    @Test
    @DisplayName("waiters of other providers get the lock in order of arrival, before the holder's own next thread")
    void waitersGoInOrderOfArrivalAndTheHolderQueuesBehindThem() throws Exception {
        LockProvider holder = open("fifo");
        DistributedLock held = holder.getLock(NAME);
        List<String> order = new CopyOnWriteArrayList<>();
        held.lock();
        Future<?> a = takeInTurn(open("fifo").getLock(NAME), "a", order);
        Await.until("a is queued", BOUND, () -> queued() == 1);
        Future<?> b = takeInTurn(open("fifo").getLock(NAME), "b", order);
        Await.until("b is queued behind a", BOUND, () -> queued() == 2);
        // the holder's next thread waits in its provider's own line while the lock is held there
        Future<?> next = takeInTurn(held, "holder's next thread", order);
        held.unlock();
        a.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        b.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        next.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(order).containsExactly("a", "b", "holder's next thread");
        assertThat(queued()).as("queued waiters after every one had its turn").isZero();
    }

    @Test
    @DisplayName("waiters that died lapse after their own time, and the live waiter behind them gets the lock")
    void deadWaitersLapseSideBySide() throws Exception {
        Duration left = Duration.ofSeconds(1);
        for (int i = 1; i <= 3; i++) {
            deadWaiter("dead-" + i, i, left);
        }
        DistributedLock lock = open("fifo").getLock(NAME);
        assertThat(lock.tryLock()).as("tryLock() while three waiters are ahead of it").isFalse();
        assertThat(lock.tryLock(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                .as("a waiter behind three that died").isTrue();
        assertThat(queue()).as("the queue once the dead waiters lapsed and the live one got the lock").isEmpty();
        lock.unlock();
    }

    @Test
    @DisplayName("a provider with bounded fairness does not pass a queued waiter, and takes a free lock once the"
            + " queue is empty")
    void boundedProvidersRespectTheQueue() {
        deadWaiter("queued", 1, Duration.ofSeconds(60));
        DistributedLock bounded = open("bounded").getLock(NAME);
        assertThat(bounded.tryLock()).as("a bounded provider's tryLock() on a free lock with a waiter queued")
                .isFalse();
        REDIS.admin().call(jedis -> jedis.zrem(keys.queue(NAME), "queued"));
        assertThat(bounded.tryLock()).as("once the queue is empty").isTrue();
        bounded.unlock();
    }

    @Test
    @DisplayName("a waiter that gives up leaves the queue, and the next in line is woken")
    void aWaiterThatGivesUpLeavesTheQueue() throws Exception {
        DistributedLock held = open("fifo").getLock(NAME);
        held.lock();
        DistributedLock impatient = open("fifo").getLock(NAME);
        CountDownLatch stopped = new CountDownLatch(1);
        Future<?> waiting = threads.submit(() -> {
            try {
                impatient.lockInterruptibly();
                impatient.unlock();
            } finally {
                stopped.countDown();
            }
            return null;
        });
        Await.until("the waiter is queued", BOUND, () -> queued() == 1);
        waiting.cancel(true); // interrupts lockInterruptibly(), which withdraws before it throws
        assertThat(stopped.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("the interrupted waiter stopped")
                .isTrue();
        assertThat(queue()).as("the queue after the waiter gave up").isEmpty();
        held.unlock();
    }

    @Test
    @DisplayName("the URI takes fairness=fifo or fairness=bounded and nothing else")
    void uriParameters() {
        assertThatThrownBy(() -> LockProvider.open(REDIS.server().uri() + "?fairness=lottery", options))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fairness must be bounded or fifo");
        assertThatThrownBy(() -> LockProvider.open(REDIS.server().uri() + "?timeout=5", options))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown query parameter 'timeout'");
        LockProvider upper = open("FIFO");
        assertThat(upper.getLock(NAME).tryLock()).isTrue();
        upper.getLock(NAME).unlock();
    }
}
