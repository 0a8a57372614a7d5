package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import io.locksmith.spi.StoreEvents;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each acquisition run has a hold object of its own, made by the store with the run's owner id, and every call
 * about a hold names that object: a late or repeated call about an earlier hold (a release retried after its
 * answer was lost, an attempt applied after the client gave up, the end of an earlier lease, a loss report) never
 * acts on a newer hold of the same name.
 */
@DisplayName("JDBC holds are named by the store's own hold object")
class JdbcHoldIdentityTest {

    private static final String TABLE = "locksmith_hold_identity_test";
    private static final Duration LONG_LEASE = Duration.ofSeconds(60);

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "hi" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
    }

    static List<Arguments> targetsAndModes() {
        List<Arguments> all = new ArrayList<>();
        for (JdbcTarget target : JdbcTarget.BACKENDS) {
            for (Mode mode : Mode.values()) {
                all.add(Arguments.of(target, mode));
            }
        }
        return all;
    }

    private LockOptions.Builder options() {
        return LockOptions.builder()
                .namespace(namespace)
                .leaseTime(Duration.ofSeconds(10))
                // 5 s: a provider's first connection (driver and H2 start-up) must fit on a busy machine
                .operationTimeout(Duration.ofSeconds(5))
                .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100));
    }

    private LockStore<?> newStore(JdbcTarget target, Mode mode, LockOptions options) {
        HikariDataSource pool = target.pool(options.operationTimeout(), 8);
        LockStore<?> store = JdbcLockProviders.builder(pool).mode(mode).table(TABLE).options(options)
                .closing(pool, target.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return store;
    }

    /** A store whose holds the test passes around as plain objects, each made by the store's own newHold. */
    @SuppressWarnings("unchecked")
    private LockStore<Object> store(JdbcTarget target, Mode mode, LockOptions options) {
        return (LockStore<Object>) newStore(target, mode, options);
    }

    private static boolean acquired(LockStore<Object> store, Object hold) {
        Acquisition acquisition = store.tryAcquire(hold, LONG_LEASE, Duration.ZERO, null);
        return acquisition.isAcquired();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("release, renewal and lease end of an earlier hold leave a newer hold of the name alone")
    void lateCallsLeaveTheNewerHoldAlone(JdbcTarget target, Mode mode) {
        LockStore<Object> store = store(target, mode, options().build());
        LockStore<Object> other = store(target, mode, options().build());
        Object first = store.newHold("name", "c.1");
        assertThat(acquired(store, first)).as("first hold").isTrue();
        assertThat(store.release(first)).as("its release").isTrue();
        Object newer = store.newHold("name", "c.2");
        assertThat(acquired(store, newer)).as("the newer hold").isTrue();

        assertThat(store.release(first)).as("a late release of the first hold").isFalse();
        assertThat(store.renew(List.of(first), LONG_LEASE).gone()).as("a late renewal of the first hold")
                .containsExactly(first);
        store.leaseEnded(first);
        assertThat(acquired(store, first)).as("a late attempt of the first hold's run").isFalse();
        assertThat(acquired(other, other.newHold("name", "d.1"))).as("another client's attempt after the late calls")
                .isFalse();
        assertThat(store.renew(List.of(newer), LONG_LEASE).gone()).as("renewal of the newer hold").isEmpty();
        assertThat(store.release(newer)).as("release of the newer hold").isTrue();
        Object theirs = other.newHold("name", "d.2");
        assertThat(acquired(other, theirs)).as("another client's attempt after that release").isTrue();
        assertThat(other.release(theirs)).isTrue();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("an attempt repeated with the hold of a run that holds does not take the lock again")
    void repeatedAttemptDoesNotTakeTheLockAgain(JdbcTarget target, Mode mode) {
        LockStore<Object> store = store(target, mode, options().build());
        LockStore<Object> other = store(target, mode, options().build());
        Object hold = store.newHold("repeated", "c.1");
        Acquisition first = store.tryAcquire(hold, LONG_LEASE, Duration.ZERO, null);
        assertThat(first.isAcquired()).isTrue();

        assertThat(store.tryAcquire(hold, LONG_LEASE, Duration.ZERO, null).isAcquired())
                .as("the same run's attempt again, while it holds").isFalse();
        assertThat(acquired(other, other.newHold("repeated", "d.1"))).as("another client's attempt").isFalse();
        if (mode == Mode.LEASE) {
            assertThat(store.inspect("repeated").fencingToken()).as("the hold's token")
                    .hasValue(first.fencingToken());
        }
        assertThat(store.release(hold)).as("release of the hold").isTrue();
        Object theirs = other.newHold("repeated", "d.2");
        assertThat(acquired(other, theirs)).as("another client's attempt after the release").isTrue();
        assertThat(other.release(theirs)).isTrue();
    }

    /**
     * A session-mode hold is a transaction on a connection of the run's own, and the database knows no lease: an
     * attempt the database answers after its run ended (released, given up, or its lease over) would hold the row
     * with nothing left to end it, so it must take nothing, even when the lock is free.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode: an attempt of a run that ended takes nothing, even when the lock is free")
    void attemptOfAnEndedRunTakesNothing(JdbcTarget target) {
        LockStore<Object> store = store(target, Mode.SESSION, options().build());
        LockStore<Object> other = store(target, Mode.SESSION, options().build());
        Object released = store.newHold("ended", "c.1");
        assertThat(acquired(store, released)).isTrue();
        assertThat(store.release(released)).isTrue();
        Object givenUp = store.newHold("ended", "c.2");
        store.abandon(givenUp);
        Object leaseOver = store.newHold("ended", "c.3");
        assertThat(acquired(store, leaseOver)).isTrue();
        store.leaseEnded(leaseOver);

        for (Object ended : List.of(released, givenUp, leaseOver)) {
            assertThat(acquired(store, ended)).as("an attempt of %s", ended).isFalse();
        }
        assertThat(store.isLocked("ended")).as("isLocked() after the late attempts").isFalse();
        Object theirs = other.newHold("ended", "d.1");
        assertThat(acquired(other, theirs)).as("another client's attempt").isTrue();
        assertThat(other.release(theirs)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("lease mode: one renewal extends each row only for the owner id of its own hold")
    void batchRenewalMatchesEachNameWithItsOwner(JdbcTarget target) {
        LockStore<Object> store = store(target, Mode.LEASE, options().build());
        Object a = store.newHold("a", "c.1");
        Object b = store.newHold("b", "c.2");
        Object c = store.newHold("c", "c.3");
        assertThat(acquired(store, a)).isTrue();
        assertThat(acquired(store, b)).isTrue();
        assertThat(acquired(store, c)).isTrue();

        Object aWithOwnerOfB = store.newHold("a", "c.2");
        Object bWithOwnerOfA = store.newHold("b", "c.1");
        assertThat(store.renew(List.of(aWithOwnerOfB, bWithOwnerOfA), LONG_LEASE).gone())
                .as("owner ids of this batch, each on the other's name")
                .containsExactlyInAnyOrder(aWithOwnerOfB, bWithOwnerOfA);
        Object cOfAnotherRun = store.newHold("c", "c.9");
        Object neverHeld = store.newHold("never-held", "c.4");
        assertThat(store.renew(List.of(a, b, cOfAnotherRun, neverHeld), LONG_LEASE).gone())
                .as("a batch of held and not held").containsExactlyInAnyOrder(cOfAnotherRun, neverHeld);
        Object earlierOfC = store.newHold("c", "c.0");
        assertThat(store.renew(List.of(earlierOfC, c), LONG_LEASE).gone())
                .as("a batch with an earlier and the current hold of one name").containsExactly(earlierOfC);
        assertThat(store.renew(List.of(c, b, a), LONG_LEASE).gone()).as("a batch of held names").isEmpty();
    }

    /**
     * The machinery's lease clock ends a session-mode hold and tells the store, which rolls that hold's
     * transaction back; the same thread then acquires again. A repeated lease end and a loss report about the
     * earlier hold, arriving while the newer hold exists (the interleaving a lease end racing a re-acquisition
     * can produce), must leave the newer hold held.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode: a late lease end or loss report of an earlier hold never touches a newer hold")
    void leaseEndActsOnItsOwnHold(JdbcTarget target) throws Exception {
        LockOptions options = options().build();
        Watched store = new Watched(newStore(target, Mode.SESSION, options));
        LockProvider provider = LockStores.newProvider(store, options);
        closeAfter.add(provider);
        LockProvider otherProvider = LockStores.newProvider(newStore(target, Mode.SESSION, options), options);
        closeAfter.add(otherProvider);
        DistributedLock lock = provider.getLock("expiring");
        DistributedLock theirs = otherProvider.getLock("expiring");

        assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(300))).as("a hold with a 300 ms lease").isTrue();
        Object first = store.lastGranted.get();
        assertThat(store.leaseEnded.await(60, TimeUnit.SECONDS)).as("the machinery ends the lease").isTrue();
        assertThat(store.endedHold.get()).as("the hold whose lease ended").isSameAs(first);
        // the store hears of the lease end before the machinery lets the next attempt in: wait for that
        assertThat(lock.tryLock(60, TimeUnit.SECONDS)).as("the same thread's tryLock after the lease ended").isTrue();
        assertThat(store.lastGranted.get()).as("the newer hold").isNotSameAs(first);

        store.replayLeaseEnded(first);
        store.events.get().holdLost(first, "a late loss report of the earlier hold");
        assertThat(lock.isHeldByCurrentThread()).as("the newer hold after the late calls").isTrue();
        assertThat(theirs.tryLock()).as("another provider's tryLock() after the late calls").isFalse();
        lock.unlock(); // throws LockLostException had the late calls ended the newer hold
        assertThat(theirs.tryLock()).as("another provider's tryLock() after the unlock").isTrue();
        theirs.unlock();
    }

    /** A store that tells the test which hold it granted last, which hold's lease ended, and the machinery's sink. */
    private static final class Watched extends ForwardingLockStore<Object> {
        final AtomicReference<Object> lastGranted = new AtomicReference<>();
        final AtomicReference<Object> endedHold = new AtomicReference<>();
        final CountDownLatch leaseEnded = new CountDownLatch(1);
        final AtomicReference<StoreEvents<Object>> events = new AtomicReference<>();

        @SuppressWarnings("unchecked")
        Watched(LockStore<?> store) {
            super((LockStore<Object>) store);
        }

        @Override
        public void start(StoreEvents<Object> sink) {
            events.set(sink);
            super.start(sink);
        }

        @Override
        public Acquisition tryAcquire(Object hold, Duration lease, Duration wait, Runnable wakeUp) {
            Acquisition acquisition = super.tryAcquire(hold, lease, wait, wakeUp);
            if (acquisition.isAcquired()) {
                lastGranted.set(hold);
            }
            return acquisition;
        }

        @Override
        public void leaseEnded(Object hold) {
            super.leaseEnded(hold);
            endedHold.compareAndSet(null, hold);
            leaseEnded.countDown();
        }

        void replayLeaseEnded(Object hold) {
            super.leaseEnded(hold);
        }
    }
}
