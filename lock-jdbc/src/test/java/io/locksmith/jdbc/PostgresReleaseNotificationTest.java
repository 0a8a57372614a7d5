package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Lease mode's wake-ups on PostgreSQL: a release that has waiters notifies them through LISTEN/NOTIFY, a killed
 * listening connection wakes the waiters to look for themselves and is listened on again, and closing the store
 * ends the listening thread. Every wait here is bounded generously and asserts that something happened, not how
 * fast.
 */
@DisplayName("JDBC lease mode on PostgreSQL: waiters are woken by LISTEN/NOTIFY")
class PostgresReleaseNotificationTest {

    private static final JdbcTarget TARGET = JdbcTarget.POSTGRES;
    private static final String TABLE = "locksmith_notify_test";
    private static final Duration LEASE = Duration.ofSeconds(60);
    private static final Duration SLACK = Duration.ofSeconds(20);
    private static final String THREAD_PREFIX = "locksmith-jdbc-listen-";

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "nt" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
        closeAfter.clear();
    }

    private LockOptions.Builder options() {
        return LockOptions.builder().namespace(namespace).operationTimeout(Duration.ofSeconds(5));
    }

    private LeaseStore store() {
        HikariDataSource pool = TARGET.pool(Duration.ofSeconds(5), 4);
        LeaseStore store = (LeaseStore) JdbcLockProviders.builder(pool).mode(Mode.LEASE).table(TABLE)
                .options(options().build()).closing(pool, TARGET.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return store;
    }

    private static void awaitTrue(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + SLACK.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + SLACK.toMillis() + " ms waiting until " + what);
            }
            Thread.sleep(10);
        }
    }

    /**
     * Subscribes to the releases of {@code name} and waits until the listener listens. The store learns its
     * database at its first operation, as the machinery's waiters have made one before they subscribe.
     */
    private static LockStore.Subscription subscribed(LeaseStore store, String name, Runnable onRelease)
            throws InterruptedException {
        store.isLocked(name);
        LockStore.Subscription subscription = store.subscribe(name, onRelease);
        assertThat(subscription).as("PostgreSQL pushes releases").isNotNull();
        awaitTrue("the store listens", () -> store.listener().listening());
        return subscription;
    }

    /** The backend pids of the connections listening on this test's channel. */
    private Set<Long> listeningPids() {
        try (Connection admin = TARGET.admin().getConnection();
             PreparedStatement select = admin.prepareStatement("SELECT pid FROM pg_stat_activity WHERE query = ?")) {
            select.setString(1, "LISTEN \"" + LeaseStore.channel(namespace) + "\"");
            try (ResultSet rows = select.executeQuery()) {
                Set<Long> pids = new HashSet<>();
                while (rows.next()) {
                    pids.add(rows.getLong(1));
                }
                return pids;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Set<Thread> listenThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(thread -> thread.getName().startsWith(THREAD_PREFIX) && thread.isAlive())
                .collect(Collectors.toSet());
    }

    @Test
    @DisplayName("a release by another provider's connection runs the subscribed callback when a waiter claimed")
    void releaseWakesTheSubscriber() throws Exception {
        LeaseStore waiters = store();
        LeaseStore holders = store();
        LeaseStore.LeaseHold held = holders.newHold("job", "a.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        LeaseStore.LeaseHold waiting = waiters.newHold("job", "b.1");
        Acquisition answer = waiters.tryAcquire(waiting, LEASE, Duration.ZERO, () -> { });
        assertThat(answer.isClaimed()).isTrue();
        assertThat(answer.retryAfter()).as("the busy answer carries the holder's lease left")
                .hasValueSatisfying(left -> assertThat(left).isPositive().isLessThanOrEqualTo(LEASE));

        AtomicInteger wakeUps = new AtomicInteger();
        subscribed(waiters, "job", wakeUps::incrementAndGet);
        // the listener wakes every subscriber once when it begins to listen: count from here
        int before = wakeUps.get();
        assertThat(holders.release(held)).isTrue();
        awaitTrue("the callback ran after the release", () -> wakeUps.get() > before);
        assertThat(waiters.tryAcquire(waiting, LEASE, Duration.ZERO, () -> { }).isAcquired()).isTrue();
        assertThat(waiters.release(waiting)).isTrue();
    }

    @Test
    @DisplayName("while a claim lives, a release wakes the claimant alone; the release after its grant wakes the others")
    void releaseUnderAClaimWakesTheClaimantAlone() throws Exception {
        LeaseStore claimants = store();
        LeaseStore others = store();
        LeaseStore holders = store();
        LeaseStore.LeaseHold held = holders.newHold("job", "a.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();

        AtomicInteger claimantWakeUps = new AtomicInteger();
        Runnable claimantWaker = claimantWakeUps::incrementAndGet;
        subscribed(claimants, "job", claimantWaker);
        LeaseStore.LeaseHold claiming = claimants.newHold("job", "b.1");
        assertThat(claimants.tryAcquire(claiming, LEASE, Duration.ZERO, claimantWaker).isClaimed()).isTrue();

        AtomicInteger otherWakeUps = new AtomicInteger();
        Runnable otherWaker = otherWakeUps::incrementAndGet;
        subscribed(others, "job", otherWaker);
        LeaseStore.LeaseHold other = others.newHold("job", "c.1");
        Acquisition refused = others.tryAcquire(other, LEASE, Duration.ZERO, otherWaker);
        assertThat(refused.isAcquired() || refused.isClaimed()).as("the younger waiter's answer").isFalse();
        assertThat(refused.retryAfter()).as("a waiter the claimant's wake-ups leave asleep looks again soon anyway")
                .hasValueSatisfying(left -> assertThat(left).isLessThanOrEqualTo(LeaseStore.UNCLAIMED_RECHECK));

        // the marker, released after the job, is heard after it on the same connection: once its callback ran,
        // the job's release has been delivered to the other waiter's listener too
        Marker marker = Marker.ready(others, holders);
        int claimantBefore = claimantWakeUps.get();
        int otherBefore = otherWakeUps.get();
        assertThat(holders.release(held)).isTrue();
        awaitTrue("the claimant is woken", () -> claimantWakeUps.get() > claimantBefore);
        marker.releaseAndAwait();
        assertThat(otherWakeUps.get()).as("wake-ups of the waiter that does not hold the claim")
                .isEqualTo(otherBefore);

        // the claimant's grant ends its claim: its release wakes the others, one of which claims next
        assertThat(claimants.tryAcquire(claiming, LEASE, Duration.ZERO, claimantWaker).isAcquired()).isTrue();
        assertThat(claimants.release(claiming)).isTrue();
        awaitTrue("the other waiter is woken by the release after the claimant's turn",
                () -> otherWakeUps.get() > otherBefore);
        assertThat(others.tryAcquire(other, LEASE, Duration.ZERO, otherWaker).isAcquired()).isTrue();
        assertThat(others.release(other)).isTrue();
        marker.abandon();
    }

    @Test
    @DisplayName("an uncontended release notifies nobody")
    void uncontendedReleaseNotifiesNobody() throws Exception {
        LeaseStore waiters = store();
        LeaseStore holders = store();
        AtomicInteger wakeUps = new AtomicInteger();
        subscribed(waiters, "quiet", wakeUps::incrementAndGet);
        int before = wakeUps.get();
        for (int i = 0; i < 5; i++) {
            LeaseStore.LeaseHold hold = holders.newHold("quiet", "a." + i);
            assertThat(holders.tryAcquire(hold, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
            assertThat(holders.release(hold)).isTrue();
        }
        // a notification for another row proves the listener delivered everything sent before it
        Marker marker = Marker.ready(waiters, holders);
        int beforeMarker = wakeUps.get();
        marker.releaseAndAwait();
        assertThat(wakeUps.get()).as("wake-ups of the uncontended lock").isEqualTo(before).isEqualTo(beforeMarker);
        marker.abandon();
    }

    /**
     * The row "marker", held by {@code holders} and claimed by a run of {@code waiters}, which subscribe to it: its
     * release notifies, and the waiters' listening connection hears it after everything sent before it.
     */
    private record Marker(LeaseStore waiters, LeaseStore holders, CountDownLatch heard, LeaseStore.LeaseHold hold,
            LeaseStore.LeaseHold waiter) {

        static Marker ready(LeaseStore waiters, LeaseStore holders) throws InterruptedException {
            CountDownLatch heard = new CountDownLatch(1);
            subscribed(waiters, "marker", heard::countDown);
            LeaseStore.LeaseHold hold = holders.newHold("marker", "m.1");
            assertThat(holders.tryAcquire(hold, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
            LeaseStore.LeaseHold waiter = waiters.newHold("marker", "n.1");
            assertThat(waiters.tryAcquire(waiter, LEASE, Duration.ZERO, () -> { }).isClaimed()).isTrue();
            return new Marker(waiters, holders, heard, hold, waiter);
        }

        void releaseAndAwait() throws InterruptedException {
            assertThat(holders.release(hold)).isTrue();
            assertThat(heard.await(SLACK.toMillis(), TimeUnit.MILLISECONDS)).as("the marker's callback ran").isTrue();
        }

        void abandon() {
            waiters.abandon(waiter);
        }
    }

    @Test
    @DisplayName("a killed listening connection wakes the waiters, and the store listens again")
    void killedListenerWakesWaitersAndReconnects() throws Exception {
        LeaseStore waiters = store();
        LeaseStore holders = store();
        AtomicInteger wakeUps = new AtomicInteger();
        subscribed(waiters, "job", wakeUps::incrementAndGet);
        awaitTrue("the listening connection shows in pg_stat_activity", () -> listeningPids().size() == 1);
        long killed = listeningPids().iterator().next();
        int before = wakeUps.get();

        try (Connection admin = TARGET.admin().getConnection();
             PreparedStatement terminate = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
            terminate.setInt(1, Math.toIntExact(killed));
            terminate.executeQuery().close();
        }
        awaitTrue("the waiters are woken to look for themselves", () -> wakeUps.get() > before);
        awaitTrue("another connection listens", () -> {
            Set<Long> pids = listeningPids();
            return !pids.isEmpty() && !pids.contains(killed) && waiters.listener().listening();
        });

        // and releases are heard again
        LeaseStore.LeaseHold held = holders.newHold("job", "a.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        LeaseStore.LeaseHold waiting = waiters.newHold("job", "b.1");
        assertThat(waiters.tryAcquire(waiting, LEASE, Duration.ZERO, () -> { }).isClaimed()).isTrue();
        int beforeRelease = wakeUps.get();
        assertThat(holders.release(held)).isTrue();
        awaitTrue("the callback ran after the release", () -> wakeUps.get() > beforeRelease);
        waiters.abandon(waiting);
    }

    @Test
    @DisplayName("closing the store ends its listening thread and gives its connection back")
    void closeEndsTheListeningThread() throws Exception {
        Set<Thread> before = listenThreads();
        LeaseStore store = store();
        subscribed(store, "job", () -> { });
        Set<Thread> started = listenThreads();
        started.removeAll(before);
        assertThat(started).as("the store's listening thread").hasSize(1);
        store.close();
        assertThat(started.iterator().next().isAlive()).as("its thread after close()").isFalse();
        assertThat(listenThreads()).as("listening threads after close()").isSubsetOf(before);
        awaitTrue("nobody listens on the channel", () -> listeningPids().isEmpty());
    }

    @Test
    @DisplayName("lock(): a waiter of another provider gets the lock after the holder's unlock()")
    void waiterOfAnotherProviderGetsTheLock() throws Exception {
        LockProvider holder = provider();
        LockProvider waiter = provider();
        DistributedLock held = holder.getLock("job");
        held.lock();
        CountDownLatch acquired = new CountDownLatch(1);
        Thread waiting = new Thread(() -> {
            DistributedLock lock = waiter.getLock("job");
            lock.lock();
            acquired.countDown();
            lock.unlock();
        });
        waiting.start();
        awaitTrue("the waiter claims the next turn", () -> claimant(namespace, "job") != null);
        held.unlock();
        assertThat(acquired.await(SLACK.toMillis(), TimeUnit.MILLISECONDS)).as("the waiter acquired").isTrue();
        waiting.join(SLACK.toMillis());
    }

    private LockProvider provider() {
        LeaseStore store = store();
        closeAfter.remove(store);
        LockProvider provider = LockStores.newProvider(store, options().leaseTime(LEASE).build());
        closeAfter.add(provider);
        return provider;
    }

    private static String claimant(String namespace, String name) {
        try {
            return TARGET.claimant(TABLE, namespace, name);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
