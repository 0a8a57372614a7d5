package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockInfo;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisHold;
import io.locksmith.redis.internal.RedisKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link LockProvider#inspect} and {@link LockProvider#forceRelease} on one Redis server, as an operator's
 * provider (another process) sees and frees a lock an application's provider holds.
 */
@DisplayName("Redis inspect and forced release")
class RedisInspectTest {

    private static final Duration BOUND = Duration.ofSeconds(20);

    @RegisterExtension
    static final OwnRedis REDIS = new OwnRedis();

    private final List<LockProvider> providers = new ArrayList<>();
    private final List<String> lost = new CopyOnWriteArrayList<>();
    private String namespace;
    private RedisKeys keys;


    @BeforeEach
    void namespace() {
        namespace = TestRedis.freshNamespace();
        keys = new RedisKeys(namespace);
    }

    @AfterEach
    void closeProviders() {
        providers.forEach(LockProvider::close);
        assertThat(REDIS.admin().heldNames(namespace)).as("locks left held in the namespace").isEmpty();
    }

    /** Renewed every second with a 3 s lease, so a loss is seen within about a second. */
    private LockOptions.Builder options() {
        return LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(3))
                .listener((name, why) -> lost.add(name));
    }

    private LockProvider open(LockOptions options) {
        LockProvider provider = LockProvider.open(REDIS.server().uri(), options);
        providers.add(provider);
        return provider;
    }

    private LockProvider open() {
        return open(options().build());
    }

    @Nested
    @DisplayName("inspect")
    class Inspect {

        @Test
        @DisplayName("a name never locked is free and has no token")
        void neverLocked() {
            LockInfo info = open().inspect("never");
            assertThat(info.name()).isEqualTo("never");
            assertThat(info.isLocked()).isFalse();
            assertThat(info.owner()).isEmpty();
            assertThat(info.acquiredAt()).isEmpty();
            assertThat(info.leaseRemaining()).isEmpty();
            assertThat(info.fencingToken()).isEmpty();
        }

        @Test
        @DisplayName("a held lock shows its holder's client id, its token and at most the lease left; "
                + "released, the last token")
        void heldThenReleased() {
            LockProvider app = open();
            LockProvider operator = open();
            DistributedLock lock = app.getLock("job:nightly");
            lock.lock();
            long token = lock.fencingToken();

            for (LockProvider viewer : List.of(operator, app)) {
                LockInfo held = viewer.inspect("job:nightly");
                assertThat(held.isLocked()).as("%s", held).isTrue();
                assertThat(held.owner())
                        .hasValueSatisfying(owner -> assertThat(owner).startsWith(app.clientId() + "."));
                assertThat(held.fencingToken()).hasValue(token);
                assertThat(held.leaseRemaining()).hasValueSatisfying(left -> assertThat(left).isPositive()
                        .isLessThanOrEqualTo(app.options().leaseTime()));
                assertThat(held.acquiredAt()).as("Redis does not record when a hold began").isEmpty();
            }

            lock.unlock();
            LockInfo free = operator.inspect("job:nightly");
            assertThat(free.isLocked()).as("%s", free).isFalse();
            assertThat(free.owner()).isEmpty();
            assertThat(free.leaseRemaining()).isEmpty();
            assertThat(free.fencingToken()).as("the last token issued").hasValue(token);

            DistributedLock next = operator.getLock("job:nightly");
            next.lock();
            long nextToken = next.fencingToken();
            assertThat(nextToken).isGreaterThan(token);
            LockInfo again = app.inspect("job:nightly");
            assertThat(again.owner())
                    .hasValueSatisfying(owner -> assertThat(owner).startsWith(operator.clientId() + "."));
            assertThat(again.fencingToken()).hasValue(nextToken);
            next.unlock();
        }

        @Test
        @DisplayName("an explicit lease shows as the lease left, and once it ended the lock is free with its token")
        void leaseExpiry() throws Exception {
            LockProvider app = open();
            LockProvider operator = open();
            DistributedLock lock = app.getLock("short");
            Duration lease = Duration.ofMillis(800);
            assertThat(lock.tryLock(Duration.ZERO, lease)).isTrue();
            long token = lock.fencingToken();
            LockInfo held = operator.inspect("short");
            assertThat(held.owner())
                    .hasValueSatisfying(owner -> assertThat(owner).startsWith(app.clientId() + "."));
            assertThat(held.leaseRemaining()).hasValueSatisfying(left -> assertThat(left).isPositive()
                    .isLessThanOrEqualTo(lease));

            Await.until("inspect reports the expired hold free", BOUND, () -> !operator.inspect("short").isLocked());
            LockInfo expired = operator.inspect("short");
            assertThat(expired.owner()).isEmpty();
            assertThat(expired.leaseRemaining()).isEmpty();
            assertThat(expired.fencingToken()).as("the token of the expired hold").hasValue(token);
            assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
        }

        @Test
        @DisplayName("names with braces and percent signs are inspected under their own keys")
        void escapedNames() {
            LockProvider app = open();
            LockProvider operator = open();
            DistributedLock braces = app.getLock("a{b}%7B");
            braces.lock();
            assertThat(operator.inspect("a{b}%7B").owner())
                    .hasValueSatisfying(owner -> assertThat(owner).startsWith(app.clientId() + "."));
            assertThat(operator.inspect("a%7Bb%7D%7B").isLocked()).as("the name its key spells").isFalse();
            braces.unlock();
        }
    }

    @Nested
    @DisplayName("forceRelease")
    class ForceRelease {

        @Test
        @DisplayName("frees a held lock at once for another provider; the holder's listener and unlock() learn of it")
        void holderLosesTheLock() throws Exception {
            LockProvider app = open();
            LockProvider operator = open();
            LockProvider other = open();
            DistributedLock held = app.getLock("stuck");
            held.lock();
            long token = held.fencingToken();
            DistributedLock wanted = other.getLock("stuck");
            assertThat(wanted.tryLock()).as("another provider's tryLock() while held").isFalse();

            assertThat(operator.forceRelease("stuck")).as("forceRelease of a held lock").isTrue();
            LockInfo after = operator.inspect("stuck");
            assertThat(after.isLocked()).as("inspect right after forceRelease: %s", after).isFalse();
            assertThat(after.fencingToken()).hasValue(token);

            assertThat(wanted.tryLock()).as("another provider's tryLock() right after forceRelease").isTrue();
            assertThat(wanted.fencingToken()).isGreaterThan(token);
            Await.until("the holder's listener hears of the loss at its next renewal",
                    app.options().leaseTime().plus(BOUND), () -> lost.contains("stuck"));
            assertThat(held.isHeldByCurrentThread()).isFalse();
            assertThatThrownBy(held::unlock).isInstanceOf(LockLostException.class);
            assertThat(wanted.isHeldByCurrentThread()).as("the new holder keeps it after the loser's unlock()")
                    .isTrue();
            assertThat(operator.inspect("stuck").owner())
                    .hasValueSatisfying(owner -> assertThat(owner).startsWith(other.clientId() + "."));
            wanted.unlock();

            assertThat(operator.forceRelease("stuck")).as("forceRelease of a free lock").isFalse();
            assertThat(operator.forceRelease("never-used")).as("forceRelease of a name never locked").isFalse();
            assertThat(lost).as("losses heard").containsExactly("stuck");
        }

        @Test
        @DisplayName("a holder that releases before its next renewal gets LockLostException, and frees nothing")
        void unlockAfterForcedRelease() {
            LockProvider app = open(options().leaseTime(Duration.ofSeconds(60)).build());
            LockProvider operator = open();
            DistributedLock held = app.getLock("early");
            held.lock();
            assertThat(operator.forceRelease("early")).isTrue();
            DistributedLock next = operator.getLock("early");
            assertThat(next.tryLock()).isTrue();
            assertThatThrownBy(held::unlock).isInstanceOf(LockLostException.class);
            assertThat(operator.inspect("early").owner()).as("holder after the loser's unlock()")
                    .hasValueSatisfying(owner -> assertThat(owner).startsWith(operator.clientId() + "."));
            next.unlock();
        }

        /**
         * With a 60 s lease renewed by its holder, a waiter that gets the lock within the 20 s bound can only have
         * been woken by the forced release's message, and its attempt count shows it did not poll.
         */
        @Test
        @DisplayName("a waiter on another provider is woken by the forced release and acquires with one more attempt")
        void wakesTheWaiter() throws Exception {
            LockOptions longLease = options().leaseTime(Duration.ofSeconds(60)).build();
            LockProvider app = open(longLease);
            LockProvider operator = open();
            CountingStore<RedisHold> store = new CountingStore<>(TestRedis.store(REDIS.server(), longLease));
            LockProvider waiting = TestRedis.provider(store, longLease);
            providers.add(waiting);

            DistributedLock held = app.getLock("queued");
            held.lock();
            long token = held.fencingToken();
            DistributedLock wanted = waiting.getLock("queued");
            ExecutorService thread = Executors.newSingleThreadExecutor();
            try {
                Future<Long> waiter = thread.submit(() -> {
                    wanted.lock();
                    try {
                        return wanted.fencingToken();
                    } finally {
                        wanted.unlock();
                    }
                });
                // one attempt, the subscription, one more attempt (a release may come before the subscription);
                // both answered busy, or the release could meet the second attempt still in flight
                Await.until("the waiter subscribed after two busy answers", BOUND,
                        () -> store.busyAnswers.get() == 2 && REDIS.admin().subscribers(keys.channel("queued")) == 1);

                assertThat(operator.forceRelease("queued")).isTrue();
                assertThat(waiter.get(BOUND.toSeconds(), TimeUnit.SECONDS)).as("the waiter's token")
                        .isGreaterThan(token);
                assertThat(store.acquireAttempts.get()).as("attempts in all: two before the forced release, one after")
                        .isEqualTo(3);
            } finally {
                thread.shutdownNow();
            }
            assertThatThrownBy(held::unlock).isInstanceOf(LockLostException.class);
        }
    }
}
