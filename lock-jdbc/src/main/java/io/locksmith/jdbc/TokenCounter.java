package io.locksmith.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session mode's fencing tokens, drawn on a connection of their own in autocommit.
 *
 * <p>A holder's transaction never commits, so a token drawn inside it is on disk only once some later commit or
 * background flush writes the counter's advance: a database killed before that hands the same tokens out again
 * after its restart. Drawn here, each token's statement has committed before the holder sees the token.
 *
 * <p>One connection, kept while the store is open, serves every draw of the store in turn: a draw is one short
 * statement, and a connection borrowed per draw could wait forever for a pool that holders have emptied, each
 * of them holding its row lock while it waits for its token. A dead connection (a restarted database, a server
 * that ended an idle session) is replaced once per draw. Where waiters poll (H2), a claimant's grant ends its claim
 * to the turn on this connection too, for the same reason.
 */
final class TokenCounter implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TokenCounter.class);
    /** Draws between two clean-ups of the counter's rows where the counter is a table (MySQL, MariaDB). */
    private static final int TRIM_EVERY = 64;

    private final LockTable table;
    private final ReentrantLock lock = new ReentrantLock();
    private Connection connection; // guarded by lock
    private int draws; // guarded by lock
    private boolean closed; // guarded by lock

    TokenCounter(LockTable table) {
        this.table = table;
    }

    /**
     * The next token, committed. Waits for other threads' draws at most the operation timeout, and not
     * interruptibly: an acquisition that holds its row lock already finishes (the interrupt status stays set).
     */
    long next() throws SQLException {
        return onConnection(connection -> {
            long token = table.drawToken(connection);
            if (++draws % TRIM_EVERY == 0) {
                table.trimTokens(connection, token);
            }
            return token;
        });
    }

    /**
     * The next token, committed, and the live read holds of the row of {@code key}, counted after the draw (see
     * {@link LockTable#drawTokenCountingReaders}); as {@link #next()} otherwise.
     */
    LockTable.Draw nextCountingReaders(byte[] key) throws SQLException {
        return onConnection(connection -> {
            LockTable.Draw draw = table.drawTokenCountingReaders(connection, key);
            if (++draws % TRIM_EVERY == 0) {
                table.trimTokens(connection, draw.token());
            }
            return draw;
        });
    }

    /**
     * Runs one short piece of autocommit work about session-mode read holds on this connection (a read hold's row
     * written, renewed or deleted, the readers a waiting writer counts): like a draw, it must not wait for a pool
     * that holders may have emptied, and the writer that counts readers holds its row lock meanwhile. Run again
     * once on a new connection if this one died, so the work must be safe to repeat.
     */
    <T> T run(LockTable.SqlWork<T> work) throws SQLException {
        return onConnection(work);
    }

    /**
     * Ends a run's claim to a turn (see {@link LockTable#claimTurn}), on this connection, which needs no pooled
     * connection of its own: a claimant that was granted the lock holds one already, and the pool may have no
     * other.
     */
    void dropClaim(byte[] claimKey, String owner) throws SQLException {
        onConnection(connection -> {
            table.dropClaimTurn(connection, claimKey, owner);
            return null;
        });
    }

    /** Runs one short statement's work on the connection, in turn with other threads, replacing a dead one once. */
    private <T> T onConnection(LockTable.SqlWork<T> work) throws SQLException {
        if (!lockUninterruptibly(table.timeout().toNanos())) {
            throw new SQLTimeoutException("other threads' statements on the token connection took longer than the"
                    + " operation timeout");
        }
        try {
            if (closed) {
                throw new SQLException("the lock provider is closed");
            }
            for (int attempt = 1; ; attempt++) {
                boolean fresh = connection == null;
                if (fresh) {
                    connection = table.borrow(table.timeout()); // in autocommit, as every borrowed connection
                }
                try {
                    return work.run(connection);
                } catch (SQLException e) {
                    boolean dead = LockTable.isDead(connection);
                    drop();
                    if (!dead || fresh || attempt > 1) {
                        throw e;
                    }
                    log.debug("{}: the token connection died ({}); running on a new one", table.address(),
                            e.toString());
                }
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            drop();
        } finally {
            lock.unlock();
        }
    }

    private boolean lockUninterruptibly(long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void drop() {
        if (connection != null) {
            table.giveBack(connection);
            connection = null;
        }
    }
}
