package io.locksmith.jdbc;

import io.locksmith.LockInfo;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Lease mode: one row per lock name with owner, expiry and fencing token; every operation is one short
 * autocommit statement, decided by its affected-row count.
 *
 * <p>Acquire is a compare-and-set {@code UPDATE … WHERE lock_key = ? AND (owner IS NULL OR expires_at <=
 * now)}: the database applies it atomically to the one row, so of two clients racing for a free lock exactly one
 * sees 1 affected row. Only when it affects nothing does the store read the row's token, which tells whether the
 * row is missing (and a waiter whether the lock changed hands since its last look); a missing row is inserted by an
 * insert-if-absent (INSERT IGNORE, ON CONFLICT DO NOTHING, MERGE) that never raises a duplicate-key error, and a new
 * row is free, so the compare-and-set is tried once more. "now" is always the database's clock, so exclusion does
 * not depend on the clients' clocks. No statement here locks a row for longer than itself, so no gap locks or lock
 * waits build up. A held row is busy even for its own owner id: an owner id names one acquisition run, which sends
 * no further attempt after one that may have been applied, so the same owner id arriving again is a late or
 * repeated statement and must not take the lock a second time.
 *
 * <p>The store's record of a run ({@link LeaseHold}) is the row's key, computed once per run, and the run's owner
 * id; the row itself is the hold, so the store keeps nothing else. Release clears the owner where the row is still
 * the hold's owner id's; the row stays, so the token keeps growing. Renewal extends a batch with one {@code UPDATE
 * … WHERE lock_key IN (…) AND ((lock_key = ? AND owner = ?) OR …)}: each row only for the owner id of its hold (the
 * IN list lets every database find the rows by their key), and reads back which rows it extended only when the
 * count falls short.
 *
 * <p><b>Turns across providers.</b> A provider hands a lock from thread to thread through its local gate, and
 * the other processes' waiters, which poll, would rarely find the row free. So the row keeps one claim to the next
 * turn ({@code claimant}, {@code claim_token}, {@code claim_until}): an attempt that finds the lock busy and will
 * wait claims it with a second statement (see {@link Dialect#claimUpdate}), and the compare-and-set itself refuses
 * others once {@value LockStore#GRANTS_PAST_A_CLAIM} grants have passed the claim (see
 * {@link Dialect#acquireUpdate}); an uncontended acquisition is still the one statement. The claim goes to the
 * waiter that has waited longest: each run keeps, as its ticket, the row's token when it first found the lock
 * busy, and a claim with an older ticket takes the place of a younger one, so a waiter that keeps losing the
 * race for a free claim (its backoff grown long) wins it at its next look once no older waiter is left. A claim
 * lives for the
 * claimant's lease from its last attempt, all on the database clock, and ends with the claimant's grant, its
 * release or its abandon. Old tables get the columns at the first use (see {@link LockTable}).
 *
 * <p><b>Wake-ups.</b> On PostgreSQL a release that has waiters notifies them in the same statement, and the
 * store's {@link ReleaseListener} runs the subscribed callbacks; a busy answer carries the holder's lease left,
 * so that a waiter looks again when the lease ends even though expiry and forced releases notify nobody. The
 * other databases cannot push: waiters poll with the provider's backoff.
 */
final class LeaseStore implements LockStore<LeaseStore.LeaseHold> {

    /** The longest PostgreSQL channel name (NAMEDATALEN - 1). */
    private static final int MAX_CHANNEL_LENGTH = 63;

    private final LockTable table;
    private final String namespace;
    /** The PostgreSQL channel of this namespace's releases; see {@link #channel}. */
    private final String channel;
    /** Guards {@link #listener} and {@link #closed}. */
    private final ReentrantLock listenerLock = new ReentrantLock();
    private ReleaseListener listener;
    private boolean closed;

    LeaseStore(LockTable table, String namespace) {
        this.table = table;
        this.namespace = namespace;
        this.channel = channel(namespace);
    }

    /**
     * The channel releases in {@code namespace} are notified on: one per namespace, named after it and cut to the
     * longest channel name. Every notification carries its row's key, so two namespaces that share a channel after
     * the cut only wake each other's waiters for nothing.
     */
    static String channel(String namespace) {
        String channel = "locksmith." + namespace;
        return channel.length() <= MAX_CHANNEL_LENGTH ? channel : channel.substring(0, MAX_CHANNEL_LENGTH);
    }

    @Override
    public String address() {
        return table.address() + " [lease mode]";
    }

    @Override
    public LeaseHold newHold(String name, String owner) {
        return new LeaseHold(name, LockTable.key(namespace, name), owner);
    }

    @Override
    public Acquisition tryAcquire(LeaseHold hold, Duration lease, Duration wait, Runnable wakeUp) {
        long start = System.nanoTime();
        Connection connection = null;
        try {
            try {
                connection = table.borrow(table.timeout());
            } catch (SQLException e) {
                if (Thread.currentThread().isInterrupted()) {
                    // an interrupt ended the wait for a pooled connection; nothing reached the database
                    return Acquisition.busy();
                }
                throw e;
            }
            long token = table.compareAndSet(connection, hold.key, hold.owner, lease);
            // a run whose last attempt claimed found the row then, and rows in use are never deleted; any other
            // reads the row's token, which tells whether the row exists and, to a waiter, whether the lock changed
            // hands since its last look
            long holderToken = -1;
            if (token < 0 && !hold.claimHeld) {
                holderToken = table.readToken(connection, hold.key);
                if (holderToken < 0 && table.insertIfAbsent(connection, hold.key, namespace, hold.name) > 0) {
                    // a new row is free, unless another client took it first
                    token = table.compareAndSet(connection, hold.key, hold.owner, lease);
                }
            }
            if (token >= 0) {
                return Acquisition.acquired(token);
            }
            if (wakeUp == null) {
                return Acquisition.busy(); // the caller does not wait, so it claims no turn
            }
            if (hold.ticket == Long.MAX_VALUE && holderToken >= 0) {
                hold.ticket = holderToken; // the run's place in line: the grants it has seen pass count from here
            }
            hold.mayHaveClaimed = true; // before the statement: one whose answer is lost may still have claimed
            hold.claimHeld = false;
            LockTable.Claim claim = table.claim(connection, hold.key, hold.owner, hold.ticket, lease);
            hold.claimHeld = claim.held();
            if (claim.held()) {
                return Acquisition.claimed(claim.retryAfter());
            }
            return holderToken < 0 ? Acquisition.busy(claim.retryAfter())
                    : Acquisition.busy(claim.retryAfter(), holderToken);
        } catch (SQLException | RuntimeException e) {
            table.restoreSwallowedInterrupt(connection, e, start);
            throw table.failure("acquiring '" + hold.name + "'", start, e);
        } finally {
            if (connection != null) {
                table.giveBack(connection);
            }
        }
    }

    /**
     * Frees the row if the hold's lease has not ended (an expired hold was no longer guaranteed, and the caller
     * must hear so). A run that holds has no claim, since its grant ended it; one that does not hold may still
     * have one (a run whose attempt failed after it had claimed is released in the background), which a second
     * statement ends, for runs that ever claimed only.
     */
    @Override
    public boolean release(LeaseHold hold) {
        return table.call("releasing '" + hold.name + "'", connection -> {
            boolean released = table.release(connection, hold.key, hold.owner, channel);
            if (!released && hold.mayHaveClaimed) {
                table.dropClaim(connection, hold.key, hold.owner, channel);
            }
            return released;
        });
    }

    /** Ends the claim of a run that stopped waiting, if it ever claimed. */
    @Override
    public void abandon(LeaseHold hold) {
        if (hold.mayHaveClaimed) {
            table.call("dropping the claim on '" + hold.name + "'", connection -> {
                table.dropClaim(connection, hold.key, hold.owner, channel);
                return null;
            });
        }
    }

    @Override
    public RenewResult<LeaseHold> renew(List<LeaseHold> holds, Duration lease) {
        if (holds.isEmpty()) {
            return RenewResult.allRenewed();
        }
        return table.call("renewing " + holds.size() + " lock(s)", connection -> {
            Dialect dialect = table.dialect();
            // The keys in an IN list, which every database finds by the primary key; then each key with its owner
            // id, so that a row is extended only for the hold it was given for.
            int n = holds.size();
            String ours = " WHERE expires_at > " + dialect.now() + " AND lock_key IN (" + "?, ".repeat(n - 1)
                    + "?) AND (" + "(lock_key = ? AND owner = ?) OR ".repeat(n - 1) + "(lock_key = ? AND owner = ?))";
            int extended;
            try (PreparedStatement update = connection.prepareStatement("UPDATE " + table.name()
                    + " SET expires_at = " + dialect.nowPlusMicros() + ours)) {
                update.setQueryTimeout(table.queryTimeoutSeconds());
                update.setLong(1, Dialect.micros(lease));
                bindHolds(update, 2, holds);
                extended = update.executeUpdate();
            }
            if (extended == n) {
                return RenewResult.<LeaseHold>allRenewed();
            }
            // Fewer rows than holds: find the rows still held by their hold's owner (just extended); the rest are
            // gone.
            Set<Row> kept = new HashSet<>();
            try (PreparedStatement select = connection.prepareStatement("SELECT lock_key, owner FROM "
                    + table.name() + ours)) {
                select.setQueryTimeout(table.queryTimeoutSeconds());
                bindHolds(select, 1, holds);
                try (ResultSet rows = select.executeQuery()) {
                    while (rows.next()) {
                        kept.add(new Row(rows.getBytes(1), rows.getString(2)));
                    }
                }
            }
            Set<LeaseHold> gone = new HashSet<>();
            for (LeaseHold hold : holds) {
                if (!kept.contains(new Row(hold.key, hold.owner))) {
                    gone.add(hold);
                }
            }
            return RenewResult.gone(gone);
        });
    }

    /** Binds the keys of the IN list, then each key with its hold's owner id; see {@link #renew}. */
    private static void bindHolds(PreparedStatement statement, int first, List<LeaseHold> holds)
            throws SQLException {
        int i = first;
        for (LeaseHold hold : holds) {
            statement.setBytes(i++, hold.key);
        }
        for (LeaseHold hold : holds) {
            statement.setBytes(i++, hold.key);
            statement.setString(i++, hold.owner);
        }
    }

    @Override
    public boolean isLocked(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("checking '" + name + "'", connection -> {
            try (PreparedStatement select = connection.prepareStatement("SELECT COUNT(*) FROM " + table.name()
                    + " WHERE lock_key = ? AND owner IS NOT NULL AND expires_at > " + table.dialect().now())) {
                select.setQueryTimeout(table.queryTimeoutSeconds());
                select.setBytes(1, key);
                try (ResultSet rows = select.executeQuery()) {
                    return rows.next() && rows.getLong(1) > 0;
                }
            }
        });
    }

    /**
     * One SELECT of the row: owner, start and token, and the lease left by the database clock in the same
     * statement, so the client's clock plays no part. A hold whose lease ended is free, as for acquirers.
     */
    @Override
    public LockInfo inspect(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("inspecting '" + name + "'", connection -> {
            Dialect dialect = table.dialect();
            try (PreparedStatement select = connection.prepareStatement("SELECT owner, acquired_at, token, "
                    + dialect.microsUntil("expires_at") + " FROM " + table.name() + " WHERE lock_key = ?")) {
                select.setQueryTimeout(table.queryTimeoutSeconds());
                select.setBytes(1, key);
                try (ResultSet row = select.executeQuery()) {
                    if (!row.next()) {
                        return LockInfo.free(name, null);
                    }
                    String owner = row.getString(1);
                    Instant acquiredAt = dialect.instant(row, 2);
                    long token = row.getLong(3);
                    long leftMicros = row.getLong(4);
                    if (owner == null || leftMicros <= 0) {
                        // a row never acquired holds only the seed of its first token
                        return LockInfo.free(name, acquiredAt == null ? null : token);
                    }
                    return LockInfo.held(name, owner, acquiredAt, Duration.of(leftMicros, ChronoUnit.MICROS), token);
                }
            }
        });
    }

    /**
     * Clears the owner of a live hold in one UPDATE, like a release by the owner. The holder learns at its next
     * renewal, which finds the row no longer its own, or at its unlock.
     */
    @Override
    public boolean forceRelease(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("force-releasing '" + name + "'", connection -> {
            Dialect dialect = table.dialect();
            try (PreparedStatement update = connection.prepareStatement("UPDATE " + table.name()
                    + " SET owner = NULL, expires_at = " + dialect.now() + " WHERE lock_key = ? AND owner IS NOT NULL"
                    + " AND expires_at > " + dialect.now())) {
                update.setQueryTimeout(table.queryTimeoutSeconds());
                update.setBytes(1, key);
                return update.executeUpdate() > 0;
            }
        });
    }

    /**
     * On PostgreSQL, subscribes to the notifications of the row's releases (see {@link ReleaseListener}); the
     * first subscription starts the listener. Elsewhere null: the waiter polls.
     */
    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        Dialect dialect = table.dialect();
        if (dialect == null || !dialect.notifiesReleases()) {
            return null;
        }
        listenerLock.lock();
        try {
            if (closed) {
                return null;
            }
            if (listener == null) {
                listener = ReleaseListener.start(table, channel);
            }
            return listener.subscribe(HexFormat.of().formatHex(LockTable.key(namespace, name)), onRelease);
        } finally {
            listenerLock.unlock();
        }
    }

    /** The listener, once some waiter subscribed; for tests. */
    ReleaseListener listener() {
        listenerLock.lock();
        try {
            return listener;
        } finally {
            listenerLock.unlock();
        }
    }

    @Override
    public void close() {
        ReleaseListener running;
        listenerLock.lock();
        try {
            closed = true;
            running = listener;
        } finally {
            listenerLock.unlock();
        }
        if (running != null) {
            running.close(); // gives its connection back before the pool closes
        }
        table.close();
    }

    /**
     * One acquisition run: the name (for messages), its key, computed once per run, the run's owner id, and
     * whether it may have claimed a turn.
     */
    static final class LeaseHold {
        final String name;
        final byte[] key;
        final String owner;
        /** Set before the run's first claim statement, so release and abandon end a claim only if there may be one. */
        volatile boolean mayHaveClaimed;
        /**
         * Whether the run's last claim statement answered that the run holds the claim: the row existed then, so
         * the claimant's next attempt, which comes soon, needs no insert-if-absent. (A row is deleted only when
         * nobody used it for the idle age given to {@link JdbcLockProviders#deleteIdleRows}; if it was all the
         * same, the claim finds no row, and the attempt after that inserts it.)
         */
        volatile boolean claimHeld;
        /**
         * The row's token when the run first found the lock busy, {@link Long#MAX_VALUE} until then: a claim of a
         * run with an older ticket takes the place of a younger one (see {@link Dialect#claimUpdate}). Read and
         * written by the run's attempts only, which never overlap.
         */
        long ticket = Long.MAX_VALUE;

        LeaseHold(String name, byte[] key, String owner) {
            this.name = name;
            this.key = key;
            this.owner = owner;
        }

        @Override
        public String toString() {
            return "LeaseHold{'" + name + "', owner=" + owner + '}';
        }
    }

    /** A row read back by a renewal: its key and owner, with value equality. */
    private record Row(byte[] key, String owner) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Row r && Arrays.equals(key, r.key) && owner.equals(r.owner);
        }

        @Override
        public int hashCode() {
            return 31 * Arrays.hashCode(key) + owner.hashCode();
        }

        @Override
        public String toString() {
            return HexFormat.of().formatHex(key) + '/' + owner;
        }
    }
}
