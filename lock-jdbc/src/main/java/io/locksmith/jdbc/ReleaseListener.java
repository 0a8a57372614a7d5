package io.locksmith.jdbc;

import io.locksmith.spi.LockStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL wake-ups of a lease-mode store: one connection listening on the namespace's channel, where
 * releases that have waiters notify the hex of their row's key (see {@link PostgreSqlDialect#releaseSql}), and one
 * daemon thread, {@code locksmith-jdbc-listen-N}, that reads the notifications and runs the callbacks subscribed to
 * that key. Only this class touches the PostgreSQL driver, so the other databases need no PostgreSQL jar.
 *
 * <p>A release while a claim to the next turn lives names the claimant after the key: it runs only the callbacks
 * whose waiter may be that claimant. The store tells, at each attempt, as which owner id a callback's waiter asks
 * ({@link #waitingAs}); a callback it has not told about runs for every release of its key.
 *
 * <p>The connection comes from the store's own {@link javax.sql.DataSource} and is kept from the first
 * subscription until the store closes: a DataSource the application hands in is the only way to its database
 * whose URL, credentials and TLS settings Locksmith knows, and a connection borrowed per read would hear nothing
 * between reads. So it costs the pool one connection (the URI form's pool has one more for it). Before it goes
 * back it stops listening and drops what the driver has buffered, so the pool's next borrower neither receives
 * notifications nor keeps them in memory.
 *
 * <p>While the connection is down (the database restarted, an operator ended the session, the network failed)
 * nothing is heard, so the thread wakes every subscriber at each reconnection attempt, with backoff from
 * {@value #FIRST_RETRY_MILLIS} ms to {@value #MAX_RETRY_MILLIS} ms: the waiters poll the table at that pace. Once
 * it listens again it wakes them once more, since a release between the failure, or the subscription, and the
 * LISTEN went unheard. A peer that vanished without closing the connection sends no error: after
 * {@value #CHECK_SECONDS} s without notifications the connection's validity is checked.
 */
final class ReleaseListener {

    private static final Logger log = LoggerFactory.getLogger(ReleaseListener.class);
    private static final AtomicInteger THREADS = new AtomicInteger();
    /** How long one read of notifications waits: how soon the thread sees that the store closed. */
    private static final int POLL_MILLIS = 250;
    private static final long CHECK_SECONDS = 10;
    private static final long FIRST_RETRY_MILLIS = 50;
    private static final long MAX_RETRY_MILLIS = 1000;

    private final LockTable table;
    private final String channel;
    /** The subscriptions by the hex of their row's key, as releases notify it. */
    private final Map<String, Set<Registration>> byKey = new ConcurrentHashMap<>();
    /** The same subscriptions by their callback, which the store's waiters pass to their attempts. */
    private final Map<Runnable, Registration> byCallback = new ConcurrentHashMap<>();
    private final Thread thread;
    private volatile boolean closed;
    private volatile boolean listening;

    private ReleaseListener(LockTable table, String channel) {
        this.table = table;
        this.channel = channel;
        this.thread = new Thread(this::run, "locksmith-jdbc-listen-" + THREADS.incrementAndGet());
        thread.setDaemon(true);
    }

    /** A listener on {@code channel} whose thread is started; it connects in the background. */
    static ReleaseListener start(LockTable table, String channel) {
        ReleaseListener listener = new ReleaseListener(table, channel);
        listener.thread.start();
        return listener;
    }

    /** Runs {@code onRelease} whenever the row of {@code key} (hex) may have become free, until closed. */
    LockStore.Subscription subscribe(String key, Runnable onRelease) {
        Registration registration = new Registration(key, onRelease);
        byCallback.put(onRelease, registration);
        byKey.compute(key, (k, registrations) -> {
            Set<Registration> all = registrations != null ? registrations : ConcurrentHashMap.newKeySet();
            all.add(registration);
            return all;
        });
        return registration;
    }

    /**
     * Tells that the waiter whose callback is {@code onRelease} now asks as {@code owner}: a release that names
     * another claimant does not run the callback. Nothing if the callback is not subscribed.
     */
    void waitingAs(Runnable onRelease, String owner) {
        Registration registration = byCallback.get(onRelease);
        if (registration != null) {
            registration.owner = owner;
        }
    }

    /** Whether the connection listens now (and the subscribers have been woken since it began). */
    boolean listening() {
        return listening;
    }

    /** Stops the thread, which gives the connection back, and waits for it within the operation timeout. */
    void close() {
        closed = true;
        thread.interrupt(); // ends a wait for a pooled connection or for the next attempt at once
        try {
            thread.join(table.timeout().toMillis() + POLL_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            log.warn("{}: the thread {} did not end within the operation timeout", table.address(),
                    thread.getName());
        }
    }

    private void run() {
        long retryMillis = FIRST_RETRY_MILLIS;
        boolean failedBefore = false;
        while (!closed) {
            Connection connection = null;
            try {
                connection = table.borrow(table.timeout());
                listen(connection);
                if (failedBefore) {
                    log.info("{}: listening for releases on channel {} again", table.address(), channel);
                }
                failedBefore = false;
                retryMillis = FIRST_RETRY_MILLIS;
                receive(connection);
            } catch (SQLException | RuntimeException e) {
                if (!closed && !failedBefore) {
                    log.warn("{}: listening for releases on channel {} failed, waiters poll until it is back: {}",
                            table.address(), channel, e.toString());
                }
                failedBefore = true;
            } finally {
                listening = false;
                if (connection != null) {
                    Thread.interrupted(); // close()'s interrupt is for waits, not for giving the connection back
                    stopListening(connection);
                }
            }
            if (closed) {
                return;
            }
            wakeAll();
            try {
                Thread.sleep(retryMillis);
            } catch (InterruptedException e) {
                return; // closed
            }
            retryMillis = Math.min(MAX_RETRY_MILLIS, retryMillis * 2);
        }
    }

    private void listen(Connection connection) throws SQLException {
        try (Statement listen = connection.createStatement()) {
            listen.setQueryTimeout(table.queryTimeoutSeconds());
            listen.execute("LISTEN \"" + channel + "\"");
        }
        wakeAll();
        listening = true;
    }

    /** Reads notifications until the store closes; throws when the connection fails. */
    private void receive(Connection connection) throws SQLException {
        PGConnection notifications = connection.unwrap(PGConnection.class);
        long quietSince = System.nanoTime();
        while (!closed) {
            PGNotification[] received = notifications.getNotifications(POLL_MILLIS);
            if (received != null && received.length > 0) {
                for (PGNotification notification : received) {
                    deliver(notification);
                }
                quietSince = System.nanoTime();
            } else if (System.nanoTime() - quietSince > TimeUnit.SECONDS.toNanos(CHECK_SECONDS)) {
                if (!connection.isValid(table.queryTimeoutSeconds())) {
                    throw new SQLException("the listening connection no longer answers");
                }
                quietSince = System.nanoTime();
            }
        }
    }

    private void deliver(PGNotification notification) {
        if (!channel.equals(notification.getName())) {
            return;
        }
        String payload = notification.getParameter();
        int space = payload.indexOf(' ');
        Set<Registration> registrations = byKey.get(space < 0 ? payload : payload.substring(0, space));
        if (registrations != null) {
            String claimant = space < 0 ? null : payload.substring(space + 1);
            for (Registration registration : registrations) {
                if (claimant == null || registration.mayBe(claimant)) {
                    registration.wake();
                }
            }
        }
    }

    private void wakeAll() {
        for (Set<Registration> registrations : byKey.values()) {
            for (Registration registration : registrations) {
                registration.wake();
            }
        }
    }

    /**
     * Stops listening and drops the notifications the driver has buffered, then gives the connection back; a dead
     * connection fails here, which makes the pool discard it.
     */
    private void stopListening(Connection connection) {
        try (Statement unlisten = connection.createStatement()) {
            unlisten.setQueryTimeout(table.queryTimeoutSeconds());
            unlisten.execute("UNLISTEN *");
            connection.unwrap(PGConnection.class).getNotifications();
        } catch (SQLException | RuntimeException e) {
            log.debug("{}: could not stop listening on a connection: {}", table.address(), e.toString());
        }
        table.giveBack(connection);
    }

    /** One subscription: a key and its callback, and the owner id its waiter last asked as. */
    private final class Registration implements LockStore.Subscription {
        private final String key;
        private final Runnable onRelease;
        /** The owner id of the waiter's current run, or null until the store tells it. */
        volatile String owner;

        Registration(String key, Runnable onRelease) {
            this.key = key;
            this.onRelease = onRelease;
        }

        /** Whether the waiter may be {@code claimant}, so that a release reserved for it must wake it. */
        boolean mayBe(String claimant) {
            String current = owner;
            return current == null || current.equals(claimant);
        }

        void wake() {
            try {
                onRelease.run();
            } catch (RuntimeException e) {
                log.warn("{}: a release callback failed: {}", table.address(), e.toString());
            }
        }

        @Override
        public void close() {
            byCallback.remove(onRelease, this);
            byKey.computeIfPresent(key, (k, registrations) -> {
                registrations.remove(this);
                return registrations.isEmpty() ? null : registrations;
            });
        }
    }
}
