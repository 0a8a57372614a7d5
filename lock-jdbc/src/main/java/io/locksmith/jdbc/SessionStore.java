package io.locksmith.jdbc;

import io.locksmith.LockInfo;
import io.locksmith.TimeSource;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.OwnerIds;
import io.locksmith.spi.StoreEvents;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session mode: a hold is a row lock ({@code SELECT … FOR UPDATE}) inside a transaction kept open on a
 * connection of its own for as long as the hold lasts.
 *
 * <p>The database queues the waiters and decides who is next; {@code tryAcquire}'s {@code wait} becomes the
 * statement's lock wait (NOWAIT for a zero wait). If the holder's connection dies, the database rolls the
 * transaction back and the next waiter gets the lock at once. Release is a rollback, so nothing a hold did is
 * ever committed: the fencing token comes from a counter a rollback never gives back (a sequence, or an
 * AUTO_INCREMENT on MySQL/MariaDB), drawn after the row is locked and committed on a connection of its own
 * ({@link TokenCounter}), so tokens grow in the order of the holds, also across holders whose connection died
 * and across a crash of the database.
 *
 * <p>Leases: the database knows nothing of them, so this store ends a hold itself (rolls back) when its lease
 * runs out without renewal; renewal checks that the connection is still alive and reports dead ones as gone.
 * A holder process that hangs keeps its lock until its connection dies, which never breaks exclusion. Holds are
 * kept by name with the owner id they were taken for: release and renewal act on a hold only for that owner id,
 * and a lease end reports the loss with it, so nothing late about an earlier hold touches a newer one.
 *
 * <p>A thread blocked in a lock wait does not see {@link Thread#interrupt()}: a watchdog polls the blocked
 * threads every {@value #WATCHDOG_MILLIS} ms and cancels the statement of an interrupted one, which then
 * reports busy with its interrupt status still set, so the machinery decides what the interrupt means.
 */
final class SessionStore implements LockStore {

    private static final Logger log = LoggerFactory.getLogger(SessionStore.class);
    private static final long WATCHDOG_MILLIS = 10;

    private final LockTable table;
    private final String namespace;
    private final TimeSource time;
    private final TokenCounter tokens;
    private final Map<String, SessionHold> holds = new ConcurrentHashMap<>();
    private final Map<Thread, Waiter> waiting = new ConcurrentHashMap<>();
    private final ScheduledThreadPoolExecutor scheduler;
    private final Object watchdogLock = new Object();
    private ScheduledFuture<?> watchdog;
    private volatile StoreEvents events;

    SessionStore(LockTable table, String namespace, TimeSource time) {
        this.table = table;
        this.namespace = namespace;
        this.time = time;
        this.tokens = new TokenCounter(table);
        this.scheduler = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "locksmith-jdbc-session");
            t.setDaemon(true);
            return t;
        });
        scheduler.setRemoveOnCancelPolicy(true);
    }

    @Override
    public String address() {
        return table.address() + " [session mode]";
    }

    @Override
    public void start(StoreEvents events) {
        this.events = events;
    }

    @Override
    public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
        SessionHold existing = holds.get(name);
        if (existing != null) {
            if (!OwnerIds.isLaterRun(owner, existing.owner)) {
                // The same run again (which never asks once it holds: a repeated attempt), or a late attempt of an
                // earlier run: the hold stays.
                return Acquisition.busy();
            }
            // An earlier hold the machinery already gave up (its lease ended first on the client's clock): the
            // machinery runs one acquisition of a name at a time, so this later run is the one that needs the
            // name, and the earlier hold's row lock would keep it out.
            if (holds.remove(name, existing)) {
                end(existing);
            }
        }
        byte[] key = LockTable.key(namespace, name);
        // With the interrupt status already set, one attempt only: a blocked wait would be cancelled at once.
        Duration lockWait = Thread.currentThread().isInterrupted() ? Duration.ZERO : wait;
        Duration limit = lockWait.plus(table.timeout());
        int queryTimeout = LockTable.seconds(limit);
        long start = System.nanoTime();
        Connection connection = null;
        boolean kept = false;
        try {
            try {
                connection = table.borrow(limit);
            } catch (SQLException e) {
                if (Thread.currentThread().isInterrupted()) {
                    // an interrupt ended the wait for a pooled connection; nothing reached the database
                    return Acquisition.busy();
                }
                throw e;
            }
            Dialect dialect = table.dialect();
            for (int attempt = 0; attempt < 3; attempt++) {
                connection.setAutoCommit(false);
                Waiter waiter = new Waiter();
                boolean locked;
                try {
                    locked = dialect.lockRow(connection, table.name(), key, lockWait, queryTimeout,
                            statement -> waiter.execute(statement));
                } catch (SQLException e) {
                    if (waiter.cancelled || dialect.isLockNotAvailable(e)) {
                        connection.rollback();
                        return Acquisition.busy();
                    }
                    throw e;
                }
                if (!locked) {
                    // The first use of this name: create its row (committed at once), then lock it.
                    connection.rollback();
                    connection.setAutoCommit(true);
                    table.insertIfAbsent(connection, key, namespace, name);
                    continue;
                }
                long token;
                try {
                    token = tokens.next();
                    dialect.recordSessionHold(connection, table.name(), key, owner, token, table.holderColumn(),
                            queryTimeout);
                } catch (SQLException e) {
                    if (!waiter.cancelled) {
                        throw e;
                    }
                    token = -1; // a cancel meant for the lock wait hit this statement
                }
                if (waiter.cancelled) {
                    connection.rollback();
                    return Acquisition.busy();
                }
                SessionHold hold = new SessionHold(name, owner, connection, time.nanoTime() + lease.toNanos());
                holds.put(name, hold);
                kept = true;
                scheduleExpiry(hold);
                return Acquisition.acquired(token);
            }
            throw new SQLException("the row of '" + name + "' disappeared three times between insert and lock");
        } catch (SQLException | RuntimeException e) {
            throw table.failure("acquiring '" + name + "'", start, e);
        } finally {
            if (connection != null && !kept) {
                giveBack(connection);
            }
        }
    }

    @Override
    public boolean release(String name, String owner) {
        SessionHold hold = holds.get(name);
        // only the hold of this owner id: a late release must leave a newer hold of the name alone
        if (hold == null || !hold.owner.equals(owner) || !holds.remove(name, hold)) {
            return false;
        }
        hold.cancelExpiry();
        long start = System.nanoTime();
        try {
            hold.connection.rollback();
        } catch (SQLException e) {
            boolean dead = LockTable.isDead(hold.connection);
            LockTable.closeQuietly(hold.connection);
            if (dead) {
                // the database rolled back when the connection died: the lock was free since then
                return false;
            }
            throw table.failure("releasing '" + name + "'", start, e);
        }
        giveBack(hold.connection);
        return true;
    }

    @Override
    public Set<String> renew(Map<String, String> owners, Duration lease) {
        Set<String> gone = new HashSet<>();
        long start = System.nanoTime();
        long deadline = time.nanoTime() + lease.toNanos();
        for (Map.Entry<String, String> entry : owners.entrySet()) {
            String name = entry.getKey();
            SessionHold hold = holds.get(name);
            if (hold == null || !hold.owner.equals(entry.getValue())) {
                gone.add(name); // that hold ended; a newer hold of the name is not the one asked about
                continue;
            }
            if (System.nanoTime() - start > table.timeout().toNanos()) {
                throw table.failure("renewing " + owners.size() + " lock(s)", start,
                        new SQLException("checking the connections took longer than the operation timeout"));
            }
            if (isAlive(hold.connection)) {
                hold.extendTo(deadline);
            } else {
                gone.add(name);
                if (holds.remove(name, hold)) {
                    end(hold);
                }
            }
        }
        return gone;
    }

    @Override
    public boolean isLocked(String name) {
        if (holds.containsKey(name)) {
            return true;
        }
        byte[] key = LockTable.key(namespace, name);
        return table.call("checking '" + name + "'", connection -> {
            Dialect dialect = table.dialect();
            connection.setAutoCommit(false);
            // A row that SKIP LOCKED skips is locked by some session. The probe holds the row for one statement,
            // so an acquirer's NOWAIT at that very instant may see it busy, as with any other short visitor.
            try (PreparedStatement probe = connection.prepareStatement("SELECT lock_key FROM " + table.name()
                    + " WHERE lock_key = ?" + dialect.skipLocked())) {
                probe.setQueryTimeout(table.queryTimeoutSeconds());
                probe.setBytes(1, key);
                try (ResultSet free = probe.executeQuery()) {
                    if (free.next()) {
                        return false;
                    }
                }
            }
            try (PreparedStatement exists = connection.prepareStatement("SELECT COUNT(*) FROM " + table.name()
                    + " WHERE lock_key = ?")) {
                exists.setQueryTimeout(table.queryTimeoutSeconds());
                exists.setBytes(1, key);
                try (ResultSet rows = exists.executeQuery()) {
                    return rows.next() && rows.getLong(1) > 0;
                }
            }
        });
    }

    /**
     * Reads the hold from the database, as another process sees it: the holder's record in the row on MySQL,
     * MariaDB and H2, the backend holding the row lock on PostgreSQL (see {@link Dialect#sessionHolder}). The
     * lease of a session hold lives in its holder, so none is reported; nor a last token, which is the table's
     * counter for every name alike.
     */
    @Override
    public LockInfo inspect(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("inspecting '" + name + "'", connection -> {
            Dialect.SessionHolder holder = table.dialect().sessionHolder(connection, table.name(), key,
                    table.holderColumn(), table.queryTimeoutSeconds());
            return holder == null ? LockInfo.free(name, null)
                    : LockInfo.held(name, holder.owner(), holder.acquiredAt(), null, holder.token());
        });
    }

    /**
     * Ends the database connection whose transaction holds the row, as a DBA killing a session would: the
     * database rolls the transaction back, which frees the row for the next waiter, and the holder learns at its
     * next renewal or unlock. Returns once the database shows that connection no longer holding, so another
     * client can acquire at once.
     */
    @Override
    public boolean forceRelease(String name) {
        byte[] key = LockTable.key(namespace, name);
        long start = System.nanoTime();
        Connection connection = null;
        try {
            connection = table.borrow(table.timeout());
            Dialect dialect = table.dialect();
            Dialect.SessionHolder holder = dialect.sessionHolder(connection, table.name(), key, table.holderColumn(),
                    table.queryTimeoutSeconds());
            if (holder == null) {
                return false;
            }
            if (holder.connectionId() == null) {
                throw new UnsupportedOperationException(address() + " cannot force the release of '" + name
                        + "': its lock table has no holder column, so the connection holding it is unknown; add"
                        + " the column with ALTER TABLE " + table.name() + " ADD COLUMN holder BIGINT");
            }
            long id = holder.connectionId();
            dialect.terminate(connection, id, table.queryTimeoutSeconds());
            // Terminating only signals the connection; its rollback, which frees the row, follows shortly.
            long pause = 1;
            while (true) {
                Dialect.SessionHolder now = dialect.sessionHolder(connection, table.name(), key, table.holderColumn(),
                        table.queryTimeoutSeconds());
                if (now == null || !Long.valueOf(id).equals(now.connectionId())) {
                    return true;
                }
                if (System.nanoTime() - start > table.timeout().toNanos()) {
                    throw new SQLException("connection " + id + " still held the lock after it was terminated");
                }
                Thread.sleep(pause);
                pause = Math.min(50, pause * 2);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw table.failure("waiting for the forced release of '" + name + "'", start, e);
        } catch (UnsupportedOperationException e) {
            throw e;
        } catch (SQLException | RuntimeException e) {
            throw table.failure("force-releasing '" + name + "'", start, e);
        } finally {
            if (connection != null) {
                table.giveBack(connection);
            }
        }
    }

    @Override
    public void close() {
        for (Waiter waiter : waiting.values()) {
            waiter.cancel();
        }
        scheduler.shutdownNow();
        for (SessionHold hold : holds.values()) {
            if (holds.remove(hold.name, hold)) {
                end(hold);
            }
        }
        tokens.close();
        table.close();
    }

    /** The connection holding {@code name} in {@code namespace} for this store, if any: for tests. */
    Connection connectionOf(String namespace, String name) {
        SessionHold hold = namespace.equals(this.namespace) ? holds.get(name) : null;
        return hold == null ? null : hold.connection;
    }

    // ---------------------------------------------------------------- holds

    private void scheduleExpiry(SessionHold hold) {
        long delay = Math.max(0, hold.deadline - time.nanoTime());
        try {
            hold.setExpiry(scheduler.schedule(() -> expire(hold), delay, TimeUnit.NANOSECONDS));
        } catch (RejectedExecutionException closing) {
            // closing: close() ends every hold
        }
    }

    private void expire(SessionHold hold) {
        if (holds.get(hold.name) != hold) {
            return;
        }
        if (time.nanoTime() - hold.deadline < 0) {
            scheduleExpiry(hold); // renewed meanwhile
            return;
        }
        if (holds.remove(hold.name, hold)) {
            end(hold);
            StoreEvents sink = events;
            if (sink != null) {
                // names the hold's owner id: a newer hold of the name, taken meanwhile, is not the one lost
                sink.holdLost(hold.name, hold.owner,
                        "its lease ended without renewal, so its transaction was rolled back");
            }
        }
    }

    /** Ends a hold that is no longer wanted: rollback and give the connection back, quietly. */
    private void end(SessionHold hold) {
        hold.cancelExpiry();
        try {
            hold.connection.rollback();
        } catch (SQLException e) {
            log.debug("{}: rollback of the hold of '{}' failed: {}", address(), hold.name, e.toString());
        }
        giveBack(hold.connection);
    }

    private void giveBack(Connection connection) {
        try {
            if (!connection.isClosed()) {
                connection.rollback();
                table.dialect().resetSession(connection);
            }
        } catch (SQLException | RuntimeException e) {
            log.debug("{}: resetting a connection failed: {}", address(), e.toString());
        }
        table.giveBack(connection);
    }

    private boolean isAlive(Connection connection) {
        try {
            return connection.isValid(table.queryTimeoutSeconds());
        } catch (SQLException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------- interrupts

    private void watch() {
        if (waiting.isEmpty()) {
            synchronized (watchdogLock) {
                if (waiting.isEmpty() && watchdog != null) {
                    watchdog.cancel(false);
                    watchdog = null;
                }
            }
            return;
        }
        waiting.forEach((thread, waiter) -> {
            if (thread.isInterrupted()) {
                waiter.cancel();
            }
        });
    }

    private void startWatchdog() {
        synchronized (watchdogLock) {
            if (watchdog == null) {
                try {
                    watchdog = scheduler.scheduleWithFixedDelay(this::watch, WATCHDOG_MILLIS, WATCHDOG_MILLIS,
                            TimeUnit.MILLISECONDS);
                } catch (RejectedExecutionException closing) {
                    // closing: close() cancels the waiters
                }
            }
        }
    }

    /** One blocking lock wait, cancellable from the watchdog. */
    private final class Waiter {
        private PreparedStatement statement;
        private boolean done;
        volatile boolean cancelled;

        ResultSet execute(PreparedStatement statement) throws SQLException {
            Thread me = Thread.currentThread();
            synchronized (this) {
                this.statement = statement;
            }
            waiting.put(me, this);
            startWatchdog();
            try {
                return statement.executeQuery();
            } finally {
                waiting.remove(me);
                synchronized (this) {
                    done = true; // a cancel in progress finishes before this, so it cannot hit a later statement
                }
            }
        }

        synchronized void cancel() {
            if (done || cancelled || statement == null) {
                return;
            }
            cancelled = true;
            try {
                statement.cancel();
            } catch (SQLException | RuntimeException e) {
                log.debug("{}: cancelling a lock wait failed: {}", address(), e.toString());
            }
        }
    }

    /** A held row lock: its owner id, its connection (with the open transaction) and when its lease ends. */
    private static final class SessionHold {
        final String name;
        final String owner;
        final Connection connection;
        volatile long deadline;
        private ScheduledFuture<?> expiry;

        SessionHold(String name, String owner, Connection connection, long deadline) {
            this.name = name;
            this.owner = owner;
            this.connection = connection;
            this.deadline = deadline;
        }

        synchronized void setExpiry(ScheduledFuture<?> expiry) {
            this.expiry = expiry;
        }

        synchronized void cancelExpiry() {
            if (expiry != null) {
                expiry.cancel(false);
                expiry = null;
            }
        }

        void extendTo(long newDeadline) {
            if (newDeadline - deadline > 0) {
                deadline = newDeadline;
            }
        }
    }
}
