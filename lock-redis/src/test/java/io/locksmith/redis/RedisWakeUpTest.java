package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisHold;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisLockStore;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Waiting is event-driven: with a 60 s lease renewed by its holder, a waiter that gets the lock within the 20 s
 * bound of these tests can only have been woken by a message, and the counts of its attempts show it did not
 * poll.
 */
@DisplayName("Redis wake-ups over pub/sub")
class RedisWakeUpTest {

    private static final Duration LEASE = Duration.ofSeconds(60);
    private static final Duration BOUND = Duration.ofSeconds(20);

    @RegisterExtension
    static final OwnRedis REDIS = new OwnRedis();

    private final List<LockProvider> providers = new ArrayList<>();
    private ExecutorService threads;
    private LockOptions options;
    private RedisKeys keys;


    @BeforeEach
    void setUp() {
        String namespace = TestRedis.freshNamespace();
        options = LockOptions.builder().namespace(namespace).leaseTime(LEASE).build();
        keys = new RedisKeys(namespace);
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        providers.forEach(LockProvider::close);
    }

    private LockProvider open() {
        LockProvider provider = LockProvider.open(REDIS.server().uri(), options);
        providers.add(provider);
        return provider;
    }

    /** A provider whose store counts the machinery's calls. */
    private Counted counted() {
        CountingStore<RedisHold> store = new CountingStore<>(TestRedis.store(REDIS.server(), options));
        LockProvider provider = TestRedis.provider(store, options);
        providers.add(provider);
        return new Counted(store, provider);
    }

    private record Counted(CountingStore<RedisHold> store, LockProvider provider) {
    }

    private Future<Long> lockAndUnlock(DistributedLock lock) {
        return threads.submit(() -> {
            lock.lock();
            try {
                return lock.fencingToken();
            } finally {
                lock.unlock();
            }
        });
    }

    @Test
    @DisplayName("a waiter makes one attempt after the holder's unlock, none while it waits")
    void waiterRetriesOnceOnRelease() throws Exception {
        DistributedLock held = open().getLock("job");
        Counted waiting = counted();
        CountingStore<RedisHold> store = waiting.store();
        DistributedLock wanted = waiting.provider().getLock("job");
        held.lock();
        long holderToken = held.fencingToken();

        Future<Long> waiter = lockAndUnlock(wanted);
        // one attempt, the subscription, one more attempt (the release may have come before the subscription);
        // both answered busy, or the release could meet the second attempt still in flight
        Await.until("the waiter subscribed after two busy answers", BOUND,
                () -> store.busyAnswers.get() == 2 && REDIS.admin().subscribers(keys.channel("job")) == 1);
        Thread.sleep(1_000);
        assertThat(store.acquireAttempts.get()).as("attempts while the lock stays held for 1 s").isEqualTo(2);
        assertThat(waiter.isDone()).isFalse();

        held.unlock();
        assertThat(waiter.get(BOUND.toSeconds(), TimeUnit.SECONDS)).as("the waiter's token")
                .isGreaterThan(holderToken);
        assertThat(store.acquireAttempts.get()).as("attempts in all: two before the release, one after").isEqualTo(3);
        assertThat(store.subscriptions.get()).as("subscriptions of the waiter").isEqualTo(1);
        Await.until("the waiter's channel is unsubscribed", BOUND,
                () -> REDIS.admin().subscribers(keys.channel("job")) == 0);
    }

    @Test
    @DisplayName("one subscriber connection per provider serves all its waiting locks, and is given back after")
    void oneSubscriberConnectionPerProvider() throws Exception {
        LockProvider holder = open();
        LockProvider waiting = open();
        int locks = 5;
        List<DistributedLock> held = new ArrayList<>();
        List<Future<Long>> waiters = new ArrayList<>();
        for (int i = 0; i < locks; i++) {
            DistributedLock lock = holder.getLock("shared-" + i);
            lock.lock();
            held.add(lock);
            waiters.add(lockAndUnlock(waiting.getLock("shared-" + i)));
        }
        Await.until("every waiting lock's channel is subscribed once", BOUND, () -> {
            for (int i = 0; i < locks; i++) {
                if (REDIS.admin().subscribers(keys.channel("shared-" + i)) != 1) {
                    return false;
                }
            }
            return true;
        });
        assertThat(REDIS.admin().subscriberConnections()).as("connections in subscriber mode for %d waiting locks", locks)
                .isEqualTo(1);

        for (DistributedLock lock : held) {
            lock.unlock();
        }
        for (Future<Long> waiter : waiters) {
            waiter.get(BOUND.toSeconds(), TimeUnit.SECONDS);
        }
        Await.until("no channel of the namespace is subscribed and the connection left subscriber mode", BOUND,
                () -> REDIS.admin().channels(keys.lockPattern().replace("*}", "")).isEmpty()
                        && REDIS.admin().subscriberConnections() == 0);
    }

    @Test
    @DisplayName("after its connection is dropped, the subscriber subscribes again and the waiter is still woken")
    void resubscribesAfterDroppedConnection() throws Exception {
        DistributedLock held = open().getLock("dropped");
        DistributedLock wanted = open().getLock("dropped");
        held.lock();
        Future<Long> waiter = lockAndUnlock(wanted);
        Await.until("the waiter subscribed", BOUND, () -> REDIS.admin().subscribers(keys.channel("dropped")) == 1);

        REDIS.admin().dropSubscribers();
        Await.until("the subscription is back after the drop", BOUND,
                () -> REDIS.admin().subscribers(keys.channel("dropped")) == 1);
        held.unlock();
        waiter.get(BOUND.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    @DisplayName("a subscription the server confirms only after the subscriber stopped waiting wakes its listener then,"
            + " since a look made meanwhile may have missed a release")
    void lateConfirmationWakesTheListener() throws Exception {
        LockOptions quick = options.toBuilder().operationTimeout(Duration.ofMillis(200)).build();
        try (RedisLockStore store = TestRedis.store(REDIS.server(), quick)) {
            LockStore.Subscription running = store.subscribe("late-first", () -> { });
            Await.until("the subscriber's connection runs", BOUND,
                    () -> REDIS.admin().subscribers(keys.channel("late-first")) == 1);
            Semaphore woken = new Semaphore(0);
            LockStore.Subscription late;
            REDIS.server().pause();
            try {
                // frozen, the server cannot confirm it: subscribe() gives up after the 200 ms operation timeout
                late = store.subscribe("late", woken::release);
            } finally {
                REDIS.server().resume();
            }
            assertThat(woken.tryAcquire(BOUND.toSeconds(), TimeUnit.SECONDS))
                    .as("the listener is woken once the server has confirmed the subscription").isTrue();
            assertThat(REDIS.admin().subscribers(keys.channel("late"))).isEqualTo(1);
            late.close();
            running.close();
        }
    }

    @Test
    @DisplayName("a release while a claim lives wakes the claimant's waiter and not the other waiters, who look again "
            + "within a second; the claimant's grant wakes them")
    void releaseWakesTheClaimantAlone() throws Exception {
        try (RedisLockStore store = TestRedis.store(REDIS.server(), options)) {
            Semaphore bobWoken = new Semaphore(0);
            Semaphore carolWoken = new Semaphore(0);
            Semaphore probe = new Semaphore(0);
            Runnable bob = bobWoken::release;
            Runnable carol = carolWoken::release;
            List<LockStore.Subscription> subscriptions = List.of(store.subscribe("named", bob),
                    store.subscribe("named", carol), store.subscribe("named", probe::release));
            RedisHold holder = store.newHold("named", "a11ce");
            assertThat(store.tryAcquire(holder, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
            RedisHold bobs = store.newHold("named", "b0b");
            assertThat(store.tryAcquire(bobs, LEASE, BOUND, bob).isClaimed()).as("Bob waits and claims").isTrue();
            Acquisition carols = store.tryAcquire(store.newHold("named", "ca401"), LEASE, BOUND, carol);
            assertThat(carols.isClaimed()).as("Carol waits behind Bob's claim").isFalse();
            assertThat(carols.retryAfter()).as("Carol looks again within a second, not at the end of the 60 s lease")
                    .hasValue(Duration.ofSeconds(1));

            assertThat(store.release(holder)).isTrue();
            // one connection delivers a message to the channel's listeners in turn, the probe last
            assertThat(probe.tryAcquire(BOUND.toSeconds(), TimeUnit.SECONDS)).as("the release's message").isTrue();
            assertThat(bobWoken.availablePermits()).as("the claimant's waiter is woken").isEqualTo(1);
            assertThat(carolWoken.availablePermits()).as("the other waiter is not").isZero();

            assertThat(store.tryAcquire(bobs, LEASE, BOUND, bob).isAcquired()).as("Bob's turn").isTrue();
            assertThat(probe.tryAcquire(BOUND.toSeconds(), TimeUnit.SECONDS)).as("the grant's message").isTrue();
            assertThat(carolWoken.availablePermits()).as("Carol, woken to claim the next turn").isEqualTo(1);
            subscriptions.forEach(LockStore.Subscription::close);
        }
    }
}
