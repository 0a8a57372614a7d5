package io.locksmith.jdbc;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Builds {@link LockProvider}s whose locks live in a relational database table: MySQL 8+, MariaDB 10.6+,
 * PostgreSQL 9.5+ or H2 2.x, told apart by the connection's metadata.
 *
 * <pre>{@code
 * try (LockProvider locks = JdbcLockProviders.builder(dataSource)
 *         .mode(JdbcLockProviders.Mode.LEASE)
 *         .options(LockOptions.builder().leaseTime(Duration.ofSeconds(10)).build())
 *         .build()) {
 *     locks.getLock("stock:sku-42").lock();
 * }
 * }</pre>
 *
 * <p>The provider borrows connections from the given {@link DataSource} and never closes it. Each statement
 * runs with the options' operation timeout as its query and network timeout; how long the pool may take to
 * hand out a connection is the pool's own setting, so keep it near the operation timeout. The URI form,
 * {@code LockProvider.open("jdbc:postgresql://…")}, builds and owns a HikariCP pool (see
 * {@link JdbcLockProviderFactory}).
 *
 * <p>The table holds one row per distinct lock name ever used in it (rows stay after release so fencing tokens
 * keep growing); {@link #deleteIdleRows} removes rows of names nobody used for a given age. Use one mode per
 * table.
 */
public final class JdbcLockProviders {

    /** The table used unless {@link Builder#table} names another: {@value}. */
    public static final String DEFAULT_TABLE = "locksmith_locks";

    private JdbcLockProviders() {
    }

    /** How a hold is kept in the database. */
    public enum Mode {
        /**
         * A row per lock with owner, expiry and fencing token, changed by single autocommit statements; holds
         * end when their lease runs out on the database's clock. Needs no connection while a lock is held.
         * The default.
         */
        LEASE,
        /**
         * A row lock ({@code SELECT … FOR UPDATE}) in a transaction kept open on a connection of its own for as
         * long as the hold lasts: the database queues waiters and frees the lock at once if the holder's
         * connection dies. Costs one connection per held lock, and one more kept for drawing fencing tokens.
         */
        SESSION
    }

    /**
     * DataSources whose {@code getConnection()} hands out the connection of the calling thread's ongoing
     * transaction (Spring's proxy does inside a Spring-managed transaction). The store sets autocommit on every
     * connection it borrows and rolls back what session mode leaves open: on such a connection it would commit or
     * roll back the application's own work, and the application's commit or rollback would decide the locks.
     */
    private static final List<String> TRANSACTION_BOUND = List.of(
            "org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy");

    /** A builder for a provider over {@code dataSource}, which the provider uses but does not close. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /**
     * Deletes the rows of locks that nobody held for at least {@code idleFor}, in batches, and the rows of read
     * holds whose lease ended that long ago, and returns how many it deleted. Rows of held locks (read holds
     * included), and rows locked by a session-mode holder, are never touched. A name whose
     * row was deleted starts again, on its next use, from a fencing token derived from the database clock,
     * above the tokens its old row handed out (see the JDBC guide).
     *
     * @param table the lock table, as given to {@link Builder#table}
     * @throws IllegalArgumentException if {@code idleFor} is not positive, the table name is not an identifier, or
     *     {@code dataSource} hands out the caller's transactional connection (see {@link Builder#build})
     * @throws LockBackendException if the database fails
     */
    public static int deleteIdleRows(DataSource dataSource, String table, Duration idleFor) {
        checkOwnConnections(Objects.requireNonNull(dataSource, "dataSource"));
        checkTable(table);
        Objects.requireNonNull(idleFor, "idleFor");
        if (idleFor.isNegative() || idleFor.isZero()) {
            throw new IllegalArgumentException("idleFor must be positive, got " + idleFor);
        }
        LockTable lockTable = new LockTable(dataSource, table, false, false, Duration.ofSeconds(30),
                "JDBC " + dataSource, null);
        long start = System.nanoTime();
        int deleted = 0;
        Connection connection = null;
        try {
            connection = lockTable.borrow(lockTable.timeout());
            Dialect dialect = lockTable.dialect();
            connection.setAutoCommit(false);
            while (true) {
                // Lock the idle rows first, skipping rows a session-mode holder has locked; then delete those.
                List<byte[]> keys = new ArrayList<>();
                // A row whose read holds may still live is not idle (their leases end by readers_until).
                boolean readers = lockTable.readers();
                try (PreparedStatement select = connection.prepareStatement("SELECT lock_key FROM " + table
                        + " WHERE expires_at < " + dialect.nowMinusMicros() + (readers ? " AND (readers_until IS"
                        + " NULL OR readers_until < " + dialect.nowMinusMicros() + ")" : "") + " ORDER BY lock_key"
                        + " LIMIT 500" + dialect.skipLocked())) {
                    select.setQueryTimeout(lockTable.queryTimeoutSeconds());
                    select.setLong(1, Dialect.micros(idleFor));
                    if (readers) {
                        select.setLong(2, Dialect.micros(idleFor));
                    }
                    try (ResultSet rows = select.executeQuery()) {
                        while (rows.next()) {
                            keys.add(rows.getBytes(1));
                        }
                    }
                }
                if (keys.isEmpty()) {
                    connection.commit();
                    return deleted + deleteEndedReadHolds(lockTable, connection, idleFor);
                }
                // Point deletes of the rows just locked: a multi-key DELETE may scan, and wait for rows that
                // session-mode holders keep locked.
                try (PreparedStatement delete = connection.prepareStatement("DELETE FROM " + table
                        + " WHERE lock_key = ?")) {
                    delete.setQueryTimeout(lockTable.queryTimeoutSeconds());
                    for (byte[] key : keys) {
                        delete.setBytes(1, key);
                        delete.addBatch();
                    }
                    for (int count : delete.executeBatch()) {
                        deleted += Math.max(0, count);
                    }
                }
                connection.commit();
                if (keys.size() < 500) {
                    return deleted + deleteEndedReadHolds(lockTable, connection, idleFor);
                }
            }
        } catch (SQLException e) {
            throw lockTable.failure("deleting rows idle for " + idleFor + " from " + table, start, e);
        } finally {
            if (connection != null) {
                lockTable.giveBack(connection); // rolls back what is left open, restores the caller's settings
            }
        }
    }

    /**
     * Deletes the rows of read holds whose lease ended at least {@code idleFor} ago (a reader that died, or whose
     * release was lost), where the table keeps read holds; a live hold's row is never touched.
     */
    private static int deleteEndedReadHolds(LockTable lockTable, Connection connection, Duration idleFor)
            throws SQLException {
        if (!lockTable.readers()) {
            return 0;
        }
        try (PreparedStatement delete = connection.prepareStatement("DELETE FROM " + lockTable.name()
                + "_readers WHERE expires_at < " + lockTable.dialect().nowMinusMicros())) {
            delete.setQueryTimeout(lockTable.queryTimeoutSeconds());
            delete.setLong(1, Dialect.micros(idleFor));
            int deleted = delete.executeUpdate();
            connection.commit();
            return deleted;
        }
    }

    /**
     * Refuses a DataSource that is, or wraps, one of {@link #TRANSACTION_BOUND}: by class name, so that no such
     * library is needed here, and through {@link DataSource#isWrapperFor} for one wrapped in another DataSource.
     */
    static void checkOwnConnections(DataSource dataSource) {
        for (String className : TRANSACTION_BOUND) {
            boolean bound = false;
            for (Class<?> type = dataSource.getClass(); type != null && !bound; type = type.getSuperclass()) {
                bound = type.getName().equals(className);
            }
            if (!bound) {
                Class<?> type = load(className, dataSource.getClass().getClassLoader());
                try {
                    bound = type != null && dataSource.isWrapperFor(type);
                } catch (SQLException | RuntimeException | LinkageError e) {
                    // a DataSource that cannot tell what it wraps is taken for what it says it is
                }
            }
            if (bound) {
                throw new IllegalArgumentException("The DataSource " + dataSource.getClass().getName() + " is or wraps "
                        + className + ", which hands out the connection of the calling thread's ongoing transaction:"
                        + " lock operations would commit or roll back the application's own work, and the"
                        + " application's commit or rollback would decide the locks. Give Locksmith a DataSource of"
                        + " its own connections, such as the proxy's target DataSource (getTargetDataSource())");
            }
        }
    }

    private static Class<?> load(String className, ClassLoader loader) {
        for (ClassLoader candidate : new ClassLoader[] {loader, Thread.currentThread().getContextClassLoader()}) {
            if (candidate != null) {
                try {
                    return Class.forName(className, false, candidate);
                } catch (ClassNotFoundException | LinkageError e) {
                    // not there: try the next loader
                }
            }
        }
        return null;
    }

    static String checkTable(String table) {
        Objects.requireNonNull(table, "table");
        if (!LockTable.TABLE_NAME.matcher(table).matches()) {
            throw new IllegalArgumentException("table must be an SQL identifier of letters, digits and '_' (at most"
                    + " 48 characters, optionally schema-qualified as schema.table), got '" + table + "'");
        }
        return table;
    }

    /** Configures and builds a JDBC {@link LockProvider}. */
    public static final class Builder {
        private final DataSource dataSource;
        private Mode mode = Mode.LEASE;
        private String table = DEFAULT_TABLE;
        private boolean createTable = true;
        private LockOptions options = LockOptions.defaults();
        private AutoCloseable owned;
        private String address;

        private Builder(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        /** How holds are kept; default {@link Mode#LEASE}. */
        public Builder mode(Mode mode) {
            this.mode = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /**
         * The lock table: an SQL identifier, optionally schema-qualified; default {@value #DEFAULT_TABLE}. Session
         * mode also uses a token counter named after it with {@code _token} appended.
         */
        public Builder table(String table) {
            this.table = checkTable(table);
            return this;
        }

        /**
         * Whether to create the table (and its token counter) on first use if it is missing; default true. Safe
         * when many processes start at once. Turn it off where the application's user may not run DDL, and
         * create the table from the DDL shipped in the jar ({@code io/locksmith/jdbc/ddl/*.sql}).
         */
        public Builder createTable(boolean createTable) {
            this.createTable = createTable;
            return this;
        }

        /** The lock options (lease, namespace, timeouts, listener, …); default {@link LockOptions#defaults()}. */
        public Builder options(LockOptions options) {
            this.options = Objects.requireNonNull(options, "options");
            return this;
        }

        /** A pool (or other resource) the provider owns and closes when it is closed. */
        Builder closing(AutoCloseable owned, String address) {
            this.owned = owned;
            this.address = address;
            return this;
        }

        /**
         * Builds the provider. Nothing is sent to the database until the first lock operation, which learns the
         * dialect and creates the table if needed.
         *
         * <p>The provider sets what it needs on every connection it borrows (autocommit, read-write, the
         * database's default isolation level) and restores the connection's own settings before giving it back,
         * so a pool configured for the application's transactions (autoCommit=false) serves it as it is.
         *
         * @throws IllegalArgumentException if the DataSource is, or wraps, one that hands out the connection of the
         *     calling thread's ongoing transaction (Spring's {@code TransactionAwareDataSourceProxy}): the locks
         *     and the application's transactions would decide each other's fate
         */
        public LockProvider build() {
            return LockStores.newProvider(buildStore(), options);
        }

        /** The store {@link #build()} wraps. */
        LockStore<?> buildStore() {
            checkOwnConnections(dataSource);
            String where = address != null ? address : "JDBC " + dataSource.getClass().getSimpleName();
            LockTable lockTable = new LockTable(dataSource, table, createTable, mode == Mode.LEASE,
                    options.operationTimeout(), where + " (table " + table + ")", owned);
            return mode == Mode.LEASE
                    ? new LeaseStore(lockTable, options.namespace())
                    : new SessionStore(lockTable, options.namespace());
        }
    }
}
