package io.locksmith.jdbc;

import io.locksmith.LockInfo;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import io.locksmith.spi.StoreEvents;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session mode: a hold is a row lock ({@code SELECT … FOR UPDATE}) inside a transaction kept open on a
 * connection of its own for as long as the hold lasts.
 *
 * <p>The database queues the waiters and decides who is next; {@code tryAcquire}'s {@code wait} becomes the
 * statement's lock wait (NOWAIT for a zero wait). If the holder's connection dies, the database rolls the
 * transaction back and the next waiter gets the lock at once. A waiting run also claims the next turn in a row of
 * its own, as lease mode does in the lock's row ({@link LockTable#claimTurn}, {@link LockStore#GRANTS_PAST_A_CLAIM}):
 * a waiter is outside the database's queue whenever one attempt's lock wait has ended and the next has not begun,
 * and H2's row locks never wait here at all (an H2 lock wait swallows interrupts), so its waiters poll.
 *
 * <p>Release is a rollback, so nothing a hold did is ever committed: the fencing token comes from a counter a
 * rollback never gives back (a sequence, or an AUTO_INCREMENT on MySQL/MariaDB), drawn after the row is locked and
 * committed on a connection of its own ({@link TokenCounter}), so tokens grow in the order of the holds, also
 * across holders whose connection died and across a crash of the database.
 *
 * <p>The store's record of a run ({@link SessionHold}) carries the connection whose transaction holds the row,
 * so release, renewal and the end of a lease act on exactly that transaction and never on a newer hold of the
 * name. Once a run has ended (released, its lease ended, or it gave up waiting), no attempt of it takes the lock
 * any more: one that the database answers afterwards (a late or delayed attempt) rolls back at once.
 *
 * <p>Leases: the database knows nothing of them. The machinery's lease clock tells the store when a hold's lease
 * ended unrenewed ({@link #leaseEnded}), and the store rolls that hold's transaction back; renewal checks that
 * each hold's connection is still alive, and a dead one is reported lost at once. A holder process that hangs
 * keeps its lock until its connection dies, which never breaks exclusion.
 *
 * <p>Read holds (read-write locks) keep no transaction: a read is granted in a short transaction that locks the
 * row like a write, draws a token, writes the read's row in the readers' table (with a lease of its own, renewed
 * like a lease-mode read hold) and commits, which ends the row lock. A write counts the live reader rows after it
 * locked the row, on the token connection in autocommit (fresh at every look, whatever the isolation level; in the
 * statement that draws its token where the draw is a query, {@link LockTable#drawTokenCountingReaders}), and
 * while some live keeps its transaction as "pending", so no new reader gets past its row lock, until they are
 * gone. A downgrade writes its row beside its own write's row lock. See docs/jdbc.md, read holds in session mode.
 *
 * <p>A thread blocked in a lock wait does not see {@link Thread#interrupt()} (the drivers block in socket reads):
 * a watchdog polls the blocked threads every {@value #WATCHDOG_MILLIS} ms and cancels the statement of an
 * interrupted one, which then reports busy with its interrupt status still set, so the machinery decides what the
 * interrupt means. The watchdog's thread runs only while some lock wait is blocked, and serves nothing else: a
 * thread shared with slower work (a renewal round waiting for a database that is down) could not keep
 * {@code lockInterruptibly()} prompt.
 */
final class SessionStore implements LockStore<SessionStore.SessionHold> {

    private static final Logger log = LoggerFactory.getLogger(SessionStore.class);
    private static final long WATCHDOG_MILLIS = 10;
    /** How long the watchdog's thread outlives the last blocked lock wait. */
    private static final long WATCHDOG_IDLE_MILLIS = 1000;

    private final LockTable table;
    private final String namespace;
    private final TokenCounter tokens;
    /** Holds whose transaction is open, for {@link #close} only: calls about a hold find it in the hold itself. */
    private final Set<SessionHold> openTransactions = ConcurrentHashMap.newKeySet();
    private final Map<Thread, Waiter> waiting = new ConcurrentHashMap<>();
    private final ScheduledThreadPoolExecutor watchdogThread;
    private final Object watchdogLock = new Object();
    private ScheduledFuture<?> watchdog; // guarded by watchdogLock
    private volatile StoreEvents<SessionHold> events;
    private volatile boolean closed;

    SessionStore(LockTable table, String namespace) {
        this.table = table;
        this.namespace = namespace;
        this.tokens = new TokenCounter(table);
        this.watchdogThread = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "locksmith-jdbc-lock-wait-watchdog");
            t.setDaemon(true);
            return t;
        });
        watchdogThread.setRemoveOnCancelPolicy(true);
        watchdogThread.setKeepAliveTime(WATCHDOG_IDLE_MILLIS, TimeUnit.MILLISECONDS);
        watchdogThread.allowCoreThreadTimeOut(true);
    }

    @Override
    public String address() {
        return table.address() + " [session mode]";
    }

    @Override
    public void start(StoreEvents<SessionHold> events) {
        this.events = events;
    }

    @Override
    public SessionHold newHold(String name, String owner) {
        return new SessionHold(name, LockTable.key(namespace, name), owner, false, null);
    }

    /** Read holds are rows of the readers' table with leases of their own; see the class comment. */
    @Override
    public boolean supportsSharedHolds() {
        return true;
    }

    @Override
    public SessionHold newSharedHold(String name, String owner, SessionHold ownWrite) {
        return new SessionHold(name, LockTable.key(namespace, name), owner, true, ownWrite);
    }

    @Override
    public Acquisition tryAcquire(SessionHold hold, Duration lease, Duration wait, Runnable wakeUp) {
        if (!hold.mayAcquire()) {
            // The run holds already (a repeated attempt) or has ended (a late attempt): it takes nothing.
            return Acquisition.busy();
        }
        String name = hold.name;
        if (hold.shared || hold.pendingConnection() != null) {
            Acquisition past = tryWithoutRowLock(hold, lease);
            if (past != null) {
                return past;
            }
        }
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
            if (hold.shared && !table.readerRows()) {
                throw new SQLException(table.readerRowsMissing(), "42S02");
            }
            Dialect dialect = table.dialect();
            for (int attempt = 0; attempt < 3; attempt++) {
                connection.setAutoCommit(false);
                Waiter waiter = new Waiter();
                boolean locked;
                try {
                    // NOWAIT never blocks: only a lock wait needs the watchdog
                    locked = table.lockRow(connection, hold.key, lockWait, queryTimeout,
                            lockWait.isZero() ? PreparedStatement::execute : waiter::execute);
                } catch (SQLException e) {
                    if (waiter.cancelled || dialect.isLockNotAvailable(e)) {
                        connection.rollback();
                        if (waiter.cancelled) {
                            return Acquisition.busy();
                        }
                        if (waitedInQueue(dialect, lockWait, start, wakeUp)) {
                            return Acquisition.queued();
                        }
                        return busy(connection, hold, lease, wakeUp);
                    }
                    throw e;
                }
                if (!locked) {
                    // The first use of this name: create its row (committed at once), then lock it.
                    connection.rollback();
                    connection.setAutoCommit(true);
                    table.insertIfAbsent(connection, hold.key, namespace, name);
                    continue;
                }
                if (hold.shared) {
                    return grantRead(connection, hold, lease, waiter);
                }
                long token;
                boolean recorded;
                int readers = 0; // live read holds, counted after the row was locked
                try {
                    if (table.readerRows()) {
                        LockTable.Draw draw = tokens.nextCountingReaders(hold.key);
                        token = draw.token();
                        readers = draw.readers();
                    } else {
                        token = tokens.next();
                    }
                    recorded = table.recordSessionHold(connection, hold.key,
                            dialect.locksBlock() ? null : hold.claimKey(namespace), hold.owner, token, queryTimeout);
                } catch (SQLException e) {
                    if (!waiter.cancelled) {
                        throw e;
                    }
                    token = -1; // a cancel meant for the lock wait hit this statement
                    recorded = true;
                }
                if (!recorded) {
                    // the row was free, but another run's claim to the turn has seen its grants pass
                    connection.rollback();
                    return busy(connection, hold, lease, wakeUp);
                }
                if (!waiter.cancelled) {
                    // no lock wait on this connection any more: what the hold does later (rollback, validity
                    // checks) returns within the operation timeout
                    LockTable.setNetworkTimeout(connection, table.timeout());
                }
                if (readers > 0 && !waiter.cancelled) {
                    if (wakeUp == null) {
                        return Acquisition.busy(); // the caller does not wait: the row goes back
                    }
                    // Read holds live: keep the row (no new reader gets past its lock) and look again later.
                    if (!hold.keepPending(connection, token)) {
                        return Acquisition.busy(); // the run ended meanwhile: the rollback below frees the row
                    }
                    kept = true;
                    openTransactions.add(hold);
                    if (closed) {
                        end(hold);
                    }
                    return Acquisition.busy(); // looked at again after the machinery's backoff
                }
                if (waiter.cancelled || !hold.keep(connection, token)) {
                    // interrupted, or the run ended while the database answered: the rollback below frees the row
                    return Acquisition.busy();
                }
                kept = true;
                openTransactions.add(hold);
                if (hold.mayHaveClaimed) {
                    dropClaim(hold); // the claimant's grant ends its claim
                }
                if (closed) {
                    end(hold); // close() may have missed it
                    return Acquisition.busy();
                }
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

    /**
     * The attempts that need no row lock of their own: a downgrade (the run's own write holds the row), and a
     * writer that holds the row already and waits for the last readers to leave. Null when the attempt must take
     * the row lock after all (the transaction that held it has ended).
     */
    private Acquisition tryWithoutRowLock(SessionHold hold, Duration lease) {
        long start = System.nanoTime();
        try {
            if (hold.shared) {
                Connection ownWrite = hold.ownWrite == null ? null : hold.ownWrite.connection();
                if (ownWrite == null) {
                    return null;
                }
                if (!table.readerRows()) {
                    throw new SQLException(table.readerRowsMissing(), "42S02");
                }
                return downgrade(hold, ownWrite, lease);
            }
            Connection pending = hold.pendingConnection();
            LockTable.LiveReaders readers = tokens.run(c -> table.liveReaders(c, hold.key));
            if (readers.count() > 0) {
                return Acquisition.busy(readers.longestLeft());
            }
            if (!isAlive(pending)) {
                // the database ended the transaction, and its row lock with it: the run starts over
                Connection dead = hold.dropPending();
                if (dead != null) {
                    openTransactions.remove(hold);
                    LockTable.closeQuietly(dead);
                    table.giveBack(dead);
                }
                return null;
            }
            if (!hold.promote()) {
                return Acquisition.busy(); // ended meanwhile; its end rolled the transaction back
            }
            if (hold.mayHaveClaimed) {
                dropClaim(hold);
            }
            return Acquisition.acquired(hold.heldToken());
        } catch (SQLException | RuntimeException e) {
            throw table.failure("acquiring '" + hold.name + "'", start, e);
        }
    }

    /**
     * A downgrade: the run's own write holds the row, so no other writer can be in; the read's row is written on
     * the token connection, and counts as held once the write's transaction is seen alive after it (a write lost
     * before the read's row was written may have let another writer in). Null if the write's transaction has
     * ended: the read then takes the row lock like any other.
     */
    private Acquisition downgrade(SessionHold hold, Connection ownWrite, Duration lease) throws SQLException {
        hold.mayHaveRow = true;
        tokens.run(c -> {
            table.upsertReader(c, hold.key, hold.owner, lease);
            return null;
        });
        if (!isAlive(ownWrite)) {
            deleteRow(hold);
            return null;
        }
        if (!hold.keepRead()) {
            deleteRow(hold);
            return Acquisition.busy();
        }
        return Acquisition.acquired(hold.ownWrite.heldToken());
    }

    /**
     * A read's grant, in the transaction that holds the row lock: a token drawn from the counter, the read's row
     * written, then a commit that ends the row lock. No writer holds the row meanwhile, and the next one locks it
     * after the commit, draws a greater token and counts this row; every earlier writer drew a smaller token.
     */
    private Acquisition grantRead(Connection connection, SessionHold hold, Duration lease, Waiter waiter)
            throws SQLException {
        long token;
        try {
            token = tokens.next();
            hold.mayHaveRow = true; // before the statements: a commit whose answer is lost may have applied
            table.upsertReader(connection, hold.key, hold.owner, lease);
            connection.commit();
        } catch (SQLException e) {
            if (!waiter.cancelled) {
                throw e;
            }
            return Acquisition.busy(); // a cancel meant for the lock wait hit these statements: interrupted
        }
        if (waiter.cancelled || closed || !hold.keepRead()) {
            // interrupted, closing, or the run ended while the database answered: the grant is undone
            deleteRow(hold);
            return Acquisition.busy();
        }
        if (hold.mayHaveClaimed) {
            dropClaim(hold); // the claimant's grant ends its claim
        }
        return Acquisition.acquired(token);
    }

    /** Deletes the row of a read run whatever its lease, on the token connection. */
    private void deleteRow(SessionHold hold) throws SQLException {
        tokens.run(c -> {
            table.deleteReader(c, hold.key, hold.owner);
            return null;
        });
    }

    /**
     * The answer to an attempt that found the lock busy, on the connection the attempt rolled back. Where the
     * database queues lock waits itself ({@link Dialect#locksBlock}), its queue serves waiters in turn. Where row
     * locks never wait (H2), waiters poll, and a run that will wait claims the next turn (see
     * {@link LockTable#claimTurn}), so that a provider passing the lock among its own threads cannot starve it.
     *
     * <p>Blocking databases keep no claims: a claim outlives its claimant by up to its lease, and a waiter killed
     * while it held one would keep the lock from everybody that long, where session mode otherwise frees a dead
     * client's locks the moment the database drops its connection (the JDBC torture run measures that bound).
     */
    private Acquisition busy(Connection connection, SessionHold hold, Duration lease, Runnable wakeUp)
            throws SQLException {
        if (wakeUp == null || table.dialect().locksBlock()) {
            return Acquisition.busy(); // the caller does not wait, or the database queues it
        }
        connection.setAutoCommit(true);
        hold.mayHaveClaimed = true; // before the statement: one whose answer is lost may still have claimed
        boolean held = table.claimTurn(connection, hold.claimKey(namespace), namespace, hold.name, hold.owner, lease);
        return held ? Acquisition.claimed(null) : Acquisition.busy();
    }

    /**
     * Whether a locking read that found the row locked had waited in the database's lock queue for (most of) the
     * wait it was given, so that the waiter should go straight back into the queue ({@link Acquisition#queued()}):
     * not after a NOWAIT, nor after a lock wait the database ended early (a deadlock victim), which back off as
     * usual. MySQL and MariaDB wait whole seconds, so half the wait asked for is the bar.
     */
    private static boolean waitedInQueue(Dialect dialect, Duration lockWait, long start, Runnable wakeUp) {
        return wakeUp != null && dialect.locksBlock() && !lockWait.isZero()
                && System.nanoTime() - start >= lockWait.toNanos() / 2;
    }

    /** Ends the claim of a run that may have claimed a turn; quietly, since an unended claim lapses with its lease. */
    private void dropClaim(SessionHold hold) {
        hold.mayHaveClaimed = false;
        try {
            tokens.dropClaim(hold.claimKey(namespace), hold.owner);
        } catch (SQLException | RuntimeException e) {
            log.debug("{}: ending the claim of {} failed (it lapses with its lease): {}", address(), hold,
                    e.toString());
        }
    }

    @Override
    public boolean release(SessionHold hold) {
        if (hold.shared) {
            hold.endRead();
            boolean released = false;
            if (hold.mayHaveRow) {
                long start = System.nanoTime();
                try {
                    released = tokens.run(c -> table.endReader(c, hold.key, hold.owner));
                } catch (SQLException | RuntimeException e) {
                    throw table.failure("releasing '" + hold.name + "'", start, e);
                }
            }
            if (hold.mayHaveClaimed) {
                dropClaim(hold);
            }
            return released;
        }
        Connection connection = hold.end();
        if (connection == null) {
            if (hold.mayHaveClaimed) {
                dropClaim(hold); // a run that waited and holds nothing
            }
            return false; // not held: released or ended already, or never acquired
        }
        openTransactions.remove(hold);
        long start = System.nanoTime();
        try {
            connection.rollback();
        } catch (SQLException e) {
            boolean dead = LockTable.isDead(connection);
            LockTable.closeQuietly(connection);
            if (dead) {
                // the database rolled back when the connection died: the lock was free since then
                return false;
            }
            throw table.failure("releasing '" + hold.name + "'", start, e);
        }
        giveBack(connection);
        return true;
    }

    /**
     * Checks that each hold's connection is still alive; the transaction lives as long as it does, so nothing
     * needs extending. A dead connection's hold is reported lost at once, so that a renewal cut short by the
     * operation timeout does not hide it, and is among the holds this call returns as gone.
     */
    @Override
    public RenewResult<SessionHold> renew(List<SessionHold> holds, Duration lease) {
        Set<SessionHold> gone = new HashSet<>();
        long start = System.nanoTime();
        List<SessionHold> reads = holds.stream().filter(hold -> hold.shared).toList();
        if (!reads.isEmpty()) {
            try {
                tokens.run(c -> {
                    for (SessionHold read : reads) {
                        if (!table.renewReader(c, read.key, read.owner, lease)) {
                            gone.add(read);
                        }
                    }
                    return null;
                });
            } catch (SQLException e) {
                throw table.failure("renewing " + reads.size() + " read hold(s)", start, e);
            }
        }
        for (SessionHold hold : holds) {
            if (hold.shared) {
                continue;
            }
            Connection connection = hold.connection();
            if (connection == null) {
                gone.add(hold); // released or ended
                continue;
            }
            if (System.nanoTime() - start > table.timeout().toNanos()) {
                throw table.failure("renewing " + holds.size() + " lock(s)", start,
                        new SQLException("checking the connections took longer than the operation timeout"));
            }
            if (!isAlive(connection)) {
                gone.add(hold);
                if (end(hold)) {
                    StoreEvents<SessionHold> sink = events;
                    if (sink != null) {
                        sink.holdLost(hold, "its connection to the database failed, so the database rolled its"
                                + " transaction back");
                    }
                }
            }
        }
        return RenewResult.gone(gone);
    }

    /** Rolls back the transaction of a hold whose lease the machinery ended, and gives its connection back. */
    @Override
    public void leaseEnded(SessionHold hold) {
        if (hold.shared) {
            hold.endRead(); // its row's lease ended with it
        } else {
            end(hold);
        }
    }

    /**
     * Ends a run that stopped waiting: a late answer to one of its attempts then takes nothing. A writer that held
     * the row while readers remained gives it back; a read run deletes the row an unanswered grant may have written.
     */
    @Override
    public void abandon(SessionHold hold) {
        if (hold.shared) {
            hold.endRead();
            if (hold.mayHaveRow) {
                long start = System.nanoTime();
                try {
                    deleteRow(hold);
                } catch (SQLException | RuntimeException e) {
                    throw table.failure("giving up the read of '" + hold.name + "'", start, e);
                }
            }
        } else {
            end(hold);
        }
        if (hold.mayHaveClaimed) {
            dropClaim(hold);
        }
    }

    @Override
    public OptionalInt semaphorePermits(String name) {
        return table.semaphorePermits(namespace, name);
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        table.setSemaphorePermits(namespace, name, permits);
    }

    @Override
    public boolean isLocked(String name) {
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
                        return hasReaders(connection, key); // no writer
                    }
                }
            }
            try (PreparedStatement exists = connection.prepareStatement("SELECT COUNT(*) FROM " + table.name()
                    + " WHERE lock_key = ?")) {
                exists.setQueryTimeout(table.queryTimeoutSeconds());
                exists.setBytes(1, key);
                try (ResultSet rows = exists.executeQuery()) {
                    return rows.next() && rows.getLong(1) > 0 || hasReaders(connection, key);
                }
            }
        });
    }

    /** Whether live read holds of the row of {@code key} exist. */
    private boolean hasReaders(Connection connection, byte[] key) throws SQLException {
        return table.readerRows() && table.liveReaders(connection, key).count() > 0;
    }

    /**
     * Reads the hold from the database, as another process sees it: the holder's record in the row on MySQL,
     * MariaDB and H2, the backend holding the row lock on PostgreSQL (see {@link LockTable#sessionHolder}). The
     * lease of a session hold lives in its holder, so none is reported; nor a last token, which is the table's
     * counter for every name alike.
     */
    @Override
    public LockInfo inspect(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("inspecting '" + name + "'", connection -> {
            LockTable.SessionHolder holder = table.sessionHolder(connection, key);
            if (holder == null) {
                LockInfo readers = table.readerRows() ? table.readersInfo(connection, name, key, null) : null;
                return readers != null ? readers : LockInfo.free(name, null);
            }
            return LockInfo.held(name, holder.owner(), holder.acquiredAt(), null, holder.token());
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
            boolean readers = table.readerRows() && table.deleteLiveReaders(connection, key) > 0;
            LockTable.SessionHolder holder = table.sessionHolder(connection, key);
            if (holder == null) {
                return readers;
            }
            if (holder.connectionId() == null) {
                throw new UnsupportedOperationException(address() + " cannot force the release of '" + name
                        + "': its lock table has no holder column, so the connection holding it is unknown; add"
                        + " the column with ALTER TABLE " + table.name() + " ADD COLUMN holder BIGINT");
            }
            long id = holder.connectionId();
            table.terminate(connection, id);
            // Terminating only signals the connection; its rollback, which frees the row, follows shortly.
            long pause = 1;
            while (true) {
                LockTable.SessionHolder now = table.sessionHolder(connection, key);
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
        closed = true;
        for (Waiter waiter : waiting.values()) {
            waiter.cancel();
        }
        watchdogThread.shutdownNow();
        // holds the machinery could not release in time: their transactions end with the store
        for (SessionHold hold : openTransactions) {
            end(hold);
        }
        tokens.close();
        table.close();
    }

    // ---------------------------------------------------------------- holds

    /** Ends {@code hold}'s run, quietly; returns whether it held a transaction, which this rolled back. */
    private boolean end(SessionHold hold) {
        Connection connection = hold.end();
        if (connection == null) {
            return false;
        }
        openTransactions.remove(hold);
        giveBack(connection); // rolls back
        return true;
    }

    private void giveBack(Connection connection) {
        try {
            if (!connection.isClosed()) {
                // a failed first use leaves the connection in autocommit, where Connector/J and pgjdbc refuse a
                // rollback (Connector/J with SQLSTATE 08003, after which HikariCP evicts the connection)
                if (!connection.getAutoCommit()) {
                    connection.rollback();
                }
                table.resetSession(connection);
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
                    watchdog = watchdogThread.scheduleWithFixedDelay(this::watch, WATCHDOG_MILLIS, WATCHDOG_MILLIS,
                            TimeUnit.MILLISECONDS);
                } catch (RejectedExecutionException closing) {
                    // closing: close() cancels the waiters
                }
            }
        }
    }

    /**
     * One blocking lock wait, cancellable from the watchdog. A lock, not a monitor, guards it: the waiting thread
     * may wait for a cancel that is on the wire.
     */
    private final class Waiter {
        private final ReentrantLock lock = new ReentrantLock();
        private PreparedStatement statement; // guarded by lock
        private boolean done; // guarded by lock
        volatile boolean cancelled;

        void execute(PreparedStatement statement) throws SQLException {
            Thread me = Thread.currentThread();
            lock.lock();
            try {
                this.statement = statement;
            } finally {
                lock.unlock();
            }
            waiting.put(me, this);
            startWatchdog();
            try {
                statement.execute();
            } finally {
                waiting.remove(me);
                lock.lock();
                try {
                    done = true; // a cancel in progress finishes before this, so it cannot hit a later statement
                } finally {
                    lock.unlock();
                }
            }
        }

        void cancel() {
            lock.lock();
            try {
                if (done || cancelled || statement == null) {
                    return;
                }
                cancelled = true;
                statement.cancel();
            } catch (SQLException | RuntimeException e) {
                log.debug("{}: cancelling a lock wait failed: {}", address(), e.toString());
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * One acquisition run: the name (for messages), its key, computed once per run, the run's owner id, and whether
     * it is a read; once a write acquired, the connection whose open transaction holds the row lock (also while it
     * waits for readers to leave, "pending"); once a read acquired, that its row is live. A run ends once, and then
     * never holds.
     */
    static final class SessionHold {
        final String name;
        final byte[] key;
        final String owner;
        final boolean shared;
        /** A read run's own write hold of the name (a downgrade), or null. */
        final SessionHold ownWrite;
        /** Set before the run's first claim statement, so that its grant, release and abandon end a claim. */
        volatile boolean mayHaveClaimed;
        /** Set before a read run first writes its row, so that its release and abandon delete it. */
        volatile boolean mayHaveRow;
        private byte[] claimKey; // guarded by this
        private Connection connection; // guarded by this
        private boolean pending; // guarded by this: connection holds the row, but readers remained
        private long token; // guarded by this: the write's token
        private boolean readHeld; // guarded by this
        private boolean ended; // guarded by this

        SessionHold(String name, byte[] key, String owner, boolean shared, SessionHold ownWrite) {
            this.name = name;
            this.key = key;
            this.owner = owner;
            this.shared = shared;
            this.ownWrite = ownWrite;
        }

        /** The key of the row keeping the name's claim (see {@link LockTable#claimTurn}), computed once per run. */
        synchronized byte[] claimKey(String namespace) {
            if (claimKey == null) {
                claimKey = LockTable.claimKey(namespace, name);
            }
            return claimKey;
        }

        /** Whether an attempt may take the lock for this run: it neither holds nor has ended. */
        synchronized boolean mayAcquire() {
            return (connection == null || pending) && !readHeld && !ended;
        }

        /** Keeps {@code held}, whose transaction now holds the row, unless the run holds or has ended meanwhile. */
        synchronized boolean keep(Connection held, long heldToken) {
            if (!mayAcquire() || connection != null) {
                return false;
            }
            connection = held;
            token = heldToken;
            return true;
        }

        /**
         * Keeps {@code held}, whose transaction holds the row while readers remain, as pending, unless the run
         * holds or has ended meanwhile.
         */
        synchronized boolean keepPending(Connection held, long heldToken) {
            if (!keep(held, heldToken)) {
                return false;
            }
            pending = true;
            return true;
        }

        /** The connection of a pending write, or null. */
        synchronized Connection pendingConnection() {
            return pending ? connection : null;
        }

        /** Makes a pending write held; false if the run ended meanwhile. */
        synchronized boolean promote() {
            if (!pending || ended) {
                return false;
            }
            pending = false;
            return true;
        }

        /** Forgets a pending write whose transaction has ended, so the run can take the row again; its connection. */
        synchronized Connection dropPending() {
            if (!pending) {
                return null;
            }
            Connection dropped = connection;
            connection = null;
            pending = false;
            return dropped;
        }

        /** The token of the write this run holds. */
        synchronized long heldToken() {
            return token;
        }

        /** Marks a read run as holding, unless it holds or has ended meanwhile. */
        synchronized boolean keepRead() {
            if (!mayAcquire() || connection != null) {
                return false;
            }
            readHeld = true;
            return true;
        }

        /** Ends a read run; returns whether it held. */
        synchronized boolean endRead() {
            boolean held = readHeld;
            readHeld = false;
            ended = true;
            return held;
        }

        /**
         * Ends the run; returns the connection of its open transaction (held or pending), which the caller ends,
         * if it had one.
         */
        synchronized Connection end() {
            Connection held = connection;
            connection = null;
            pending = false;
            ended = true;
            return held;
        }

        /** The connection whose transaction holds the row, or null if the run does not hold (or is pending). */
        synchronized Connection connection() {
            return pending ? null : connection;
        }

        @Override
        public synchronized String toString() {
            return "SessionHold{'" + name + "', owner=" + owner + (shared ? ", read" : "")
                    + (connection != null ? pending ? ", pending" : ", held" : "") + (readHeld ? ", held" : "")
                    + (ended ? ", ended" : "") + '}';
        }
    }
}
