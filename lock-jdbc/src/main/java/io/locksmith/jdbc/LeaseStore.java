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

/**
 * Lease mode: one row per lock name with owner, expiry and fencing token; every operation is one short
 * autocommit statement, decided by its affected-row count.
 *
 * <p>Acquire is a compare-and-set {@code UPDATE … WHERE lock_key = ? AND (owner IS NULL OR expires_at <=
 * now)}: the database applies it atomically to the one row, so of two clients racing for a free lock exactly one
 * sees 1 affected row. Only when it affects nothing does the store find out whether the row is missing, by an
 * insert-if-absent (INSERT IGNORE, ON CONFLICT DO NOTHING, MERGE) that never raises a duplicate-key error; a new
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
 */
final class LeaseStore implements LockStore<LeaseStore.LeaseHold> {

    private final LockTable table;
    private final String namespace;

    LeaseStore(LockTable table, String namespace) {
        this.table = table;
        this.namespace = namespace;
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
            if (token < 0) {
                if (table.insertIfAbsent(connection, hold.key, namespace, hold.name) == 0) {
                    return Acquisition.busy();
                }
                token = table.compareAndSet(connection, hold.key, hold.owner, lease);
                if (token < 0) {
                    return Acquisition.busy(); // another client took the new row first
                }
            }
            return Acquisition.acquired(token);
        } catch (SQLException | RuntimeException e) {
            table.restoreSwallowedInterrupt(connection, e, start);
            throw table.failure("acquiring '" + hold.name + "'", start, e);
        } finally {
            if (connection != null) {
                table.giveBack(connection);
            }
        }
    }

    @Override
    public boolean release(LeaseHold hold) {
        return table.call("releasing '" + hold.name + "'", connection -> {
            Dialect dialect = table.dialect();
            // An expired hold is not released: it was no longer guaranteed, and the caller must hear so.
            try (PreparedStatement update = connection.prepareStatement("UPDATE " + table.name()
                    + " SET owner = NULL, expires_at = " + dialect.now() + " WHERE lock_key = ? AND owner = ?"
                    + " AND expires_at > " + dialect.now())) {
                update.setQueryTimeout(table.queryTimeoutSeconds());
                update.setBytes(1, hold.key);
                update.setString(2, hold.owner);
                return update.executeUpdate() > 0;
            }
        });
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

    @Override
    public void close() {
        table.close();
    }

    /** One acquisition run: the name (for messages), its key, computed once per run, and the run's owner id. */
    static final class LeaseHold {
        final String name;
        final byte[] key;
        final String owner;

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
