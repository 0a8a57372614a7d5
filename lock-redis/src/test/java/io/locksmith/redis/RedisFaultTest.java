package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisHold;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisLockStore;
import io.locksmith.redis.internal.RedisStoreProbe;
import io.locksmith.spi.LockStores;
import io.locksmith.tests.FencedResource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What a Redis server's failures do to holders and waiters, on a redis-server process the test controls. */
@DisplayName("Redis failures")
class RedisFaultTest {

    private static final Duration SLACK = Duration.ofSeconds(5);

    @RegisterExtension
    static final OwnRedis REDIS = new OwnRedis();

    private final List<LockProvider> providers = new ArrayList<>();
    private final List<String> losses = new CopyOnWriteArrayList<>();
    private ExecutorService threads;
    private String namespace;


    @BeforeEach
    void setUp() {
        namespace = TestRedis.freshNamespace();
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        providers.forEach(LockProvider::close);
    }

    private LockOptions.Builder options() {
        return LockOptions.builder()
                .namespace(namespace)
                .operationTimeout(Duration.ofSeconds(1))
                .listener((name, reason) -> losses.add(name));
    }

    private LockProvider open(LockOptions options) {
        LockProvider provider = LockProvider.open(REDIS.server().uri(), options);
        providers.add(provider);
        return provider;
    }

    @Test
    @DisplayName("FLUSHALL under a holder: the loss is reported within one renewal period, and it can lock again")
    void flushAllIsALoss() {
        LockOptions options = options().leaseTime(Duration.ofSeconds(30)).renewInterval(Duration.ofSeconds(1)).build();
        DistributedLock lock = open(options).getLock("flushed");
        lock.lock();
        REDIS.admin().call(jedis -> jedis.flushAll());
        Await.until("the holder is told of the loss", options.renewInterval().plus(options.operationTimeout())
                .plus(SLACK), () -> losses.contains("flushed"));
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
        assertThat(lock.tryLock()).as("the same thread locks again after the loss").isTrue();
        lock.unlock();
        assertThat(losses).containsExactly("flushed");
    }

    @Test
    @DisplayName("every client connection closed by the server (CLIENT KILL) before each call: lock(), unlock() and "
            + "tryLock() succeed at once, the call on the stale kept connection repeated on a fresh one")
    void droppedBeforeEachCall() {
        DistributedLock lock = open(options().build()).getLock("dropped");
        lock.lock();
        REDIS.admin().dropConnections();
        lock.unlock();
        REDIS.admin().dropConnections();
        lock.lock();
        REDIS.admin().dropConnections();
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        lock.unlock();
        REDIS.admin().dropConnections();
        assertThat(lock.tryLock()).as("tryLock() on a free lock after the connections were dropped").isTrue();
        REDIS.admin().dropConnections();
        lock.unlock();
        assertThat(losses).isEmpty();
    }

    @Test
    @DisplayName("paused (SIGSTOP) longer than the lease: the holder learns of the loss, the next holder's token "
            + "is higher, and the fenced resource rejects the old holder's write")
    void pausedPastTheLease() {
        LockOptions options = options().leaseTime(Duration.ofSeconds(2)).build();
        DistributedLock first = open(options).getLock("fenced");
        DistributedLock second = open(options).getLock("fenced");
        FencedResource<String> resource = new FencedResource<>();

        first.lock();
        long firstToken = first.fencingToken();
        assertThat(resource.write(firstToken, "first")).isTrue();
        REDIS.server().pause();
        try {
            Await.until("the holder is told of the loss while the server is paused",
                    options.leaseTime().plus(options.renewInterval()).plus(SLACK), () -> losses.contains("fenced"));
        } finally {
            REDIS.server().resume();
        }
        assertThat(first.isHeldByCurrentThread()).isFalse();

        assertThat(second.tryLock()).as("another provider acquires once the server answers again").isTrue();
        long secondToken = second.fencingToken();
        assertThat(secondToken).isGreaterThan(firstToken);
        assertThat(resource.write(secondToken, "second")).isTrue();
        assertThat(resource.write(firstToken, "first, late")).as("the old holder's late write").isFalse();
        assertThat(resource.read()).contains("second");
        assertThatThrownBy(first::unlock).isInstanceOf(LockLostException.class);
        second.unlock();
    }

    @Test
    @DisplayName("killed (SIGKILL) while a thread waits in lock(): it fails with LockBackendException instead of "
            + "waiting for the holder's lease, and waits and locks again once the server is back")
    void killedWhileWaiting() throws Exception {
        LockOptions options = options().leaseTime(Duration.ofSeconds(60)).build();
        DistributedLock held = open(options).getLock("killed");
        RedisLockStore redis = TestRedis.store(REDIS.server(), options);
        CountingStore<RedisHold> store = new CountingStore<>(redis);
        LockProvider waiting = LockStores.newProvider(store, options);
        providers.add(waiting);
        DistributedLock wanted = waiting.getLock("killed");
        held.lock();
        Future<Void> waiter = threads.submit(() -> {
            wanted.lock();
            return null;
        });
        Await.until("the waiter waits for a wake-up after two busy answers", SLACK, () -> store.busyAnswers.get() == 2
                && REDIS.admin().subscribers(new RedisKeys(namespace).channel("killed")) == 1);

        REDIS.server().kill();
        try {
            assertThatThrownBy(() -> waiter.get(SLACK.toSeconds() + 5, TimeUnit.SECONDS))
                    .as("lock() of the waiter after the server died")
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(LockBackendException.class);
        } finally {
            REDIS.server().restart();
        }

        // The restarted server is empty. A new holder takes the lock; the waiting provider's subscriber has
        // reconnected, so its waiter is woken by the release, not by the end of the 60 s lease.
        DistributedLock next = open(options).getLock("killed");
        Await.until("a provider locks the restarted server", SLACK, () -> {
            try {
                return next.tryLock();
            } catch (LockBackendException e) {
                return false;
            }
        });
        Await.until("the waiting provider's subscriber is idle again", SLACK, () -> RedisStoreProbe.wakeupsIdle(redis));
        int before = store.acquireAttempts.get();
        int busyBefore = store.busyAnswers.get();
        Future<Void> again = threads.submit(() -> {
            wanted.lock();
            wanted.unlock();
            return null;
        });
        Await.until("the waiter waits again after two busy answers", SLACK,
                () -> store.busyAnswers.get() == busyBefore + 2 && REDIS.admin().subscribers(new RedisKeys(namespace).channel("killed")) == 1);
        next.unlock();
        again.get(SLACK.toSeconds() + 5, TimeUnit.SECONDS);
        assertThat(store.acquireAttempts.get()).as("attempts of the second wait").isEqualTo(before + 3);
    }

    @Test
    @DisplayName("an acquisition whose answer was lost (server paused) is cancelled once the server answers, "
            + "long before its 30 s lease would end")
    void lostAnswerIsCancelled() {
        LockOptions options = options().build();
        RedisLockStore store = TestRedis.store(REDIS.server(), options);
        LockProvider provider = LockStores.newProvider(store, options);
        providers.add(provider);
        DistributedLock lock = provider.getLock("unanswered");
        DistributedLock other = open(options).getLock("unanswered");

        REDIS.server().pause();
        try {
            assertThatThrownBy(() -> lock.tryLock(Duration.ZERO, Duration.ofSeconds(30)))
                    .isInstanceOf(LockBackendException.class);
            assertThat(RedisStoreProbe.pendingCancellations(store)).as("cancellations waiting for the server")
                    .isEqualTo(1);
        } finally {
            REDIS.server().resume();
        }
        Await.until("the cancellation reached the server", SLACK,
                () -> RedisStoreProbe.pendingCancellations(store) == 0);
        assertThat(REDIS.admin().heldNames(namespace)).as("locks held after the cancellation").isEmpty();
        assertThat(other.tryLock()).as("another provider acquires").isTrue();
        other.unlock();
    }
}
