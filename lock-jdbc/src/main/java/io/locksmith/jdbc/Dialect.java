package io.locksmith.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The SQL that differs between databases. Every time comparison uses the database's clock (UTC where the
 * database has zone-less timestamps), never the client's, so clients whose clocks disagree still agree on
 * which leases ended.
 *
 * <p>Lease arithmetic takes the lease as a bind parameter in microseconds. A new row starts its token at the
 * database clock's Unix time in microseconds, so a row deleted by {@link JdbcLockProviders#deleteIdleRows} and
 * created again later starts above every token the old row handed out: that row would have needed more than one
 * acquisition per microsecond over its life to get ahead of the clock, which no database sustains on one row.
 * The one assumption is that the database clock does not go back by more than the rows' idle age.
 */
abstract class Dialect {

    static final Dialect MYSQL = new MySql("MySQL", false);
    static final Dialect MARIADB = new MySql("MariaDB", true);
    static final Dialect POSTGRESQL = new PostgreSql();
    static final Dialect H2 = new H2();

    private final String displayName;
    private final String ddlResource;

    Dialect(String displayName, String ddlResource) {
        this.displayName = displayName;
        this.ddlResource = ddlResource;
    }

    /** The dialect of the database behind {@code connection}, from its metadata. */
    static Dialect detect(Connection connection) throws SQLException {
        DatabaseMetaData metaData = connection.getMetaData();
        String product = metaData.getDatabaseProductName();
        String version = metaData.getDatabaseProductVersion();
        String both = (product + " " + version).toLowerCase(Locale.ROOT);
        if (both.contains("mariadb")) {
            return MARIADB; // MySQL Connector/J reports MariaDB servers as "MySQL 5.5.5-10.x-MariaDB"
        }
        if (both.contains("mysql")) {
            return MYSQL;
        }
        if (both.contains("postgresql")) {
            return POSTGRESQL;
        }
        if (product != null && product.equalsIgnoreCase("H2")) {
            return H2;
        }
        throw new SQLException("Unsupported database '" + product + " " + version
                + "': Locksmith's JDBC backend supports MySQL, MariaDB, PostgreSQL and H2");
    }

    @Override
    public String toString() {
        return displayName;
    }

    /**
     * The transaction isolation the lock statements run at: the database's own default, REPEATABLE READ on MySQL
     * and MariaDB (where a lower level breaks statement-based binary logging), READ COMMITTED elsewhere. No level
     * decides exclusion, which rests on single-row updates and row locks; but a stricter one turns contention into
     * errors (PostgreSQL fails a concurrent update of the same row at REPEATABLE READ and above) or makes plain
     * reads wait for holders' row locks (MySQL and MariaDB at SERIALIZABLE).
     */
    int isolation() {
        return Connection.TRANSACTION_READ_COMMITTED;
    }

    // ---------------------------------------------------------------- DDL

    /** Where the DDL script of this dialect ships in the jar. */
    final String ddlResourcePath() {
        return "io/locksmith/jdbc/ddl/" + ddlResource + ".sql";
    }

    /** The DDL script shipped in the jar, with {@code ${table}} in place of the table name. */
    final String ddlScript() {
        String path = "ddl/" + ddlResource + ".sql";
        try (InputStream in = Dialect.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource io/locksmith/jdbc/" + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The DDL statements that create {@code table} and its token counter if missing. */
    final List<String> ddl(String table) {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : ddlScript().split("\n")) {
            String trimmed = line.strip();
            if (trimmed.isEmpty() || trimmed.startsWith("--")) {
                continue;
            }
            current.append(line).append('\n');
            if (trimmed.endsWith(";")) {
                String statement = current.toString().strip();
                statements.add(statement.substring(0, statement.length() - 1).replace("${table}", table));
                current.setLength(0);
            }
        }
        return statements;
    }

    // ---------------------------------------------------------------- clock

    /** The database's current time. */
    abstract String now();

    /** The database's current time plus the bind parameter in microseconds. */
    abstract String nowPlusMicros();

    /** The database's current time minus the bind parameter in microseconds. */
    abstract String nowMinusMicros();

    /** The first token of a new row: the database clock's Unix time in microseconds. */
    abstract String tokenSeed();

    // ---------------------------------------------------------------- lease mode

    /**
     * Inserts the free row of a name unless it exists, without a duplicate-key error; binds key, namespace,
     * name. Affects 1 row if it inserted, 0 if the row existed.
     */
    abstract String insertIfAbsent(String table);

    /**
     * The compare-and-set that takes a row that is free or expired, and increments its token; binds owner, lease
     * micros, key. A row held by anyone, the same owner id included, is busy: an owner id names one acquisition
     * run, which never sends another attempt after one that may have been applied, so a second take of the same
     * owner id can only be a late or repeated statement, and must not take the lock again.
     */
    final String acquireUpdate(String table, String tokenExpression) {
        return "UPDATE " + table + " SET owner = ?, token = " + tokenExpression + ", acquired_at = " + now()
                + ", expires_at = " + nowPlusMicros() + " WHERE lock_key = ? AND (owner IS NULL OR expires_at <= "
                + now() + ")";
    }

    /** Runs the acquisition with the bound statement of {@link #acquireSql}: the new token, or -1 if busy. */
    abstract long acquire(PreparedStatement statement) throws SQLException;

    /** The acquisition statement; see {@link #acquireUpdate}. */
    abstract String acquireSql(String table);

    /** Whether {@link #acquireSql} must be prepared with generated keys. */
    boolean acquireReturnsGeneratedKeys() {
        return false;
    }

    /** Whole microseconds from the database clock's now until the timestamp {@code column}; negative if past. */
    abstract String microsUntil(String column);

    /** Reads a timestamp column this dialect wrote with {@link #now()}. */
    abstract Instant instant(ResultSet row, int column) throws SQLException;

    // ---------------------------------------------------------------- session mode

    /**
     * Locks the row of {@code key} in the connection's open transaction, waiting for it at most {@code wait}
     * (a zero wait fails at once if it is taken; a wait may be rounded down to what the database can express,
     * and H2 never waits), so that the machinery polls for the rest.
     *
     * @return true if locked; false if the row does not exist
     * @throws SQLException that {@link #isLockNotAvailable} recognises if another transaction holds it
     */
    abstract boolean lockRow(Connection connection, String table, byte[] key, Duration wait, int queryTimeoutSeconds,
            StatementRegistry registry) throws SQLException;

    /**
     * Draws a session-mode fencing token from the table's counter on {@code connection}, which is in autocommit
     * and no holder's: the statement commits before the token is handed out, so the counter's advance is on disk
     * when the holder sees its token and a database restarted after a crash never hands the token out again. (A
     * holder's own transaction never commits, and a counter advanced inside it can come back after a crash.)
     */
    abstract long drawToken(Connection connection, String table, int queryTimeoutSeconds) throws SQLException;

    /**
     * Deletes what earlier draws left in the token counter below {@code below}, on the connection of
     * {@link #drawToken}; nothing to do where the counter is a sequence.
     */
    void trimTokens(Connection connection, String table, long below, int queryTimeoutSeconds) throws SQLException {
    }

    /**
     * Records a session-mode hold in the row of {@code key}, which the connection's transaction has just locked,
     * where other sessions can read it (see {@link #sessionHolder}).
     *
     * @param holderColumn whether the table has the {@code holder} column for the connection's server id
     */
    void recordSessionHold(Connection connection, String table, byte[] key, String owner, long token,
            boolean holderColumn, int queryTimeoutSeconds) throws SQLException {
        try (PreparedStatement record = connection.prepareStatement("UPDATE " + table + " SET owner = ?, token = ?,"
                + " acquired_at = " + now() + (holderColumn ? ", holder = " + connectionId() : "")
                + " WHERE lock_key = ?")) {
            record.setQueryTimeout(queryTimeoutSeconds);
            record.setString(1, owner);
            record.setLong(2, token);
            record.setBytes(3, key);
            record.executeUpdate();
        }
    }

    /** The SQL expression of the current connection's server id, for the {@code holder} column. */
    String connectionId() {
        throw new UnsupportedOperationException(displayName + " records no holder");
    }

    /**
     * The session-mode hold of the row of {@code key} as another connection sees it, or null if the row is not
     * held. Read in autocommit; no row lock is taken.
     */
    abstract SessionHolder sessionHolder(Connection connection, String table, byte[] key, boolean holderColumn,
            int queryTimeoutSeconds) throws SQLException;

    /**
     * Ends the server connection with this id, whose open transaction the database then rolls back; does nothing
     * if the connection is gone already.
     */
    abstract void terminate(Connection connection, long connectionId, int queryTimeoutSeconds) throws SQLException;

    /** Whether session-mode holders record their connection's server id in the table's {@code holder} column. */
    boolean recordsHolder() {
        return false;
    }

    /**
     * A session-mode hold as the database shows it to other sessions.
     *
     * @param owner the holder's client id, or a description of the holding connection where the database does
     *     not show the client id
     * @param acquiredAt when the hold began by the database clock, or null if not shown
     * @param token the hold's fencing token, or null if not shown
     * @param connectionId the server id of the holding connection, or null if not recorded
     */
    record SessionHolder(String owner, Instant acquiredAt, Long token, Long connectionId) {
    }

    /**
     * Reads the record {@link #beginSessionHold} wrote inside the holder's still open transaction: a dirty read,
     * which MySQL, MariaDB and H2 allow at READ UNCOMMITTED. The holder never commits, so the committed row
     * always has no owner, and the rollback that ends the hold (release, lease end, or the database ending a
     * dead connection's transaction) erases the record with the hold: an owner in the dirty row means a live
     * hold. Between the row lock and the record the acquisition has not returned yet, and the row reads free.
     */
    final SessionHolder uncommittedHolder(Connection connection, String table, byte[] key, boolean holderColumn,
            int queryTimeoutSeconds) throws SQLException {
        int isolation = connection.getTransactionIsolation();
        connection.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
        try (PreparedStatement select = connection.prepareStatement("SELECT owner, acquired_at, token"
                + (holderColumn ? ", holder" : "") + " FROM " + table + " WHERE lock_key = ?")) {
            select.setQueryTimeout(queryTimeoutSeconds);
            select.setBytes(1, key);
            try (ResultSet row = select.executeQuery()) {
                if (!row.next() || row.getString(1) == null) {
                    return null;
                }
                Long holder = null;
                if (holderColumn) {
                    long id = row.getLong(4);
                    holder = row.wasNull() ? null : id;
                }
                return new SessionHolder(row.getString(1), instant(row, 2), row.getLong(3), holder);
            }
        } finally {
            connection.setTransactionIsolation(isolation);
        }
    }

    /** Undoes session settings {@link #lockRow} changed, before the connection goes back to its pool. */
    void resetSession(Connection connection) throws SQLException {
    }

    /** A locking read that skips rows other transactions hold: for probing which session locks are held. */
    String skipLocked() {
        return " FOR UPDATE SKIP LOCKED";
    }

    // ---------------------------------------------------------------- errors

    /** Whether {@code e} says the row lock was not available in time (timeout, NOWAIT, deadlock victim). */
    abstract boolean isLockNotAvailable(SQLException e);

    /**
     * Whether {@code e}, raised on {@code connection} by work that began at {@code startNanos}, ended a lock
     * wait that an interrupt of the calling thread cut short in a database that then clears the thread's
     * interrupt status (H2, which runs in-process). Other databases run elsewhere and never touch it.
     */
    boolean swallowedInterrupt(Connection connection, SQLException e, long startNanos) {
        return false;
    }

    /** Whether {@code e} says the lock table does not exist. */
    abstract boolean isMissingTable(SQLException e);

    /** Whether {@code e} is a unique-key violation. */
    abstract boolean isDuplicateKey(SQLException e);

    /** Registers the statement a thread blocks in, so that an interrupt can cancel it. */
    interface StatementRegistry {
        /** Runs {@code statement}'s query while an interrupt of the current thread cancels it. */
        ResultSet executeQuery(PreparedStatement statement) throws SQLException;
    }

    static long micros(Duration duration) {
        return Math.max(0, duration.toNanos() / 1000);
    }

    static boolean hasState(SQLException e, String... states) {
        for (SQLException s = e; s != null; s = s.getNextException()) {
            String state = s.getSQLState();
            for (String wanted : states) {
                if (wanted.equals(state)) {
                    return true;
                }
            }
            if (s.getNextException() == s) {
                break;
            }
        }
        return false;
    }

    static boolean hasCode(SQLException e, int... codes) {
        for (SQLException s = e; s != null; s = s.getNextException()) {
            for (int wanted : codes) {
                if (s.getErrorCode() == wanted) {
                    return true;
                }
            }
            if (s.getNextException() == s) {
                break;
            }
        }
        return false;
    }

    private static long readLong(ResultSet rows) throws SQLException {
        try (rows) {
            return rows.next() ? rows.getLong(1) : -1;
        }
    }

    // =============================================================================================== MySQL

    /** MySQL 8.0+ and MariaDB 10.6+; MariaDB adds {@code FOR UPDATE WAIT n}. */
    private static final class MySql extends Dialect {
        private static final int ER_LOCK_WAIT_TIMEOUT = 1205;
        private static final int ER_LOCK_DEADLOCK = 1213;
        private static final int ER_LOCK_NOWAIT = 3572;
        private static final int ER_NO_SUCH_TABLE = 1146;
        private static final int ER_DUP_ENTRY = 1062;
        private static final int ER_NO_SUCH_THREAD = 1094;

        private final boolean mariaDb;

        MySql(String displayName, boolean mariaDb) {
            super(displayName, "mysql");
            this.mariaDb = mariaDb;
        }

        @Override
        int isolation() {
            return Connection.TRANSACTION_REPEATABLE_READ;
        }

        @Override
        String now() {
            // UTC_TIMESTAMP does not depend on the session's time_zone, which clients may set differently
            return "UTC_TIMESTAMP(6)";
        }

        @Override
        String nowPlusMicros() {
            return "UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND";
        }

        @Override
        String nowMinusMicros() {
            return "UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND";
        }

        @Override
        String tokenSeed() {
            return "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";
        }

        @Override
        String insertIfAbsent(String table) {
            return "INSERT IGNORE INTO " + table + " (lock_key, namespace, name, owner, token, acquired_at, expires_at)"
                    + " VALUES (?, ?, ?, NULL, " + tokenSeed() + ", NULL, " + now() + ")";
        }

        @Override
        String acquireSql(String table) {
            // LAST_INSERT_ID(expr) puts the new token into the OK packet, which drivers expose as the generated
            // key: the token comes back in the same round trip as the compare-and-set.
            return acquireUpdate(table, "LAST_INSERT_ID(token + 1)");
        }

        @Override
        boolean acquireReturnsGeneratedKeys() {
            return true;
        }

        @Override
        String microsUntil(String column) {
            return "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), " + column + ")";
        }

        @Override
        Instant instant(ResultSet row, int column) throws SQLException {
            // DATETIME has no zone; Locksmith writes UTC_TIMESTAMP into it
            LocalDateTime utc = row.getObject(column, LocalDateTime.class);
            return utc == null ? null : utc.toInstant(ZoneOffset.UTC);
        }

        @Override
        long acquire(PreparedStatement statement) throws SQLException {
            if (statement.executeUpdate() == 0) {
                return -1;
            }
            try (ResultSet keys = statement.getGeneratedKeys()) {
                if (keys.next()) {
                    return keys.getLong(1);
                }
            }
            try (Statement select = statement.getConnection().createStatement()) {
                return readLong(select.executeQuery("SELECT LAST_INSERT_ID()"));
            }
        }

        @Override
        boolean lockRow(Connection connection, String table, byte[] key, Duration wait, int queryTimeoutSeconds,
                StatementRegistry registry) throws SQLException {
            // innodb_lock_wait_timeout and WAIT take whole seconds: round down, the machinery polls the rest
            long seconds = wait.getSeconds();
            String suffix;
            if (seconds <= 0) {
                suffix = " FOR UPDATE NOWAIT";
            } else if (mariaDb) {
                suffix = " FOR UPDATE WAIT " + seconds;
            } else {
                try (Statement set = connection.createStatement()) {
                    set.setQueryTimeout(queryTimeoutSeconds);
                    set.execute("SET SESSION innodb_lock_wait_timeout = " + seconds);
                }
                suffix = " FOR UPDATE";
            }
            try (PreparedStatement select = connection.prepareStatement("SELECT token FROM " + table
                    + " WHERE lock_key = ?" + suffix)) {
                select.setQueryTimeout(queryTimeoutSeconds);
                select.setBytes(1, key);
                try (ResultSet row = registry.executeQuery(select)) {
                    return row.next();
                }
            }
        }

        @Override
        void resetSession(Connection connection) throws SQLException {
            if (!mariaDb) {
                try (Statement set = connection.createStatement()) {
                    set.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
                }
            }
        }

        @Override
        long drawToken(Connection connection, String table, int queryTimeoutSeconds) throws SQLException {
            // Each draw commits a row to take the next AUTO_INCREMENT value, which is never handed out again
            // (persisted since MySQL 8.0 and MariaDB 10.2.4, also after the rows are deleted: see trimTokens).
            try (Statement insert = connection.createStatement()) {
                insert.setQueryTimeout(queryTimeoutSeconds);
                insert.executeUpdate("INSERT INTO " + table + "_token () VALUES ()", Statement.RETURN_GENERATED_KEYS);
                try (ResultSet keys = insert.getGeneratedKeys()) {
                    if (keys.next()) {
                        return keys.getLong(1);
                    }
                }
                return readLong(insert.executeQuery("SELECT LAST_INSERT_ID()"));
            }
        }

        @Override
        void trimTokens(Connection connection, String table, long below, int queryTimeoutSeconds)
                throws SQLException {
            try (PreparedStatement delete = connection.prepareStatement("DELETE FROM " + table
                    + "_token WHERE token < ?")) {
                delete.setQueryTimeout(queryTimeoutSeconds);
                delete.setLong(1, below);
                delete.executeUpdate();
            }
        }

        @Override
        String connectionId() {
            return "CONNECTION_ID()";
        }

        @Override
        SessionHolder sessionHolder(Connection connection, String table, byte[] key, boolean holderColumn,
                int queryTimeoutSeconds) throws SQLException {
            return uncommittedHolder(connection, table, key, holderColumn, queryTimeoutSeconds);
        }

        @Override
        void terminate(Connection connection, long connectionId, int queryTimeoutSeconds) throws SQLException {
            try (Statement kill = connection.createStatement()) {
                kill.setQueryTimeout(queryTimeoutSeconds);
                kill.execute("KILL CONNECTION " + connectionId);
            } catch (SQLException e) {
                if (!hasCode(e, ER_NO_SUCH_THREAD)) {
                    throw e;
                }
            }
        }

        @Override
        boolean recordsHolder() {
            return true;
        }

        @Override
        boolean isLockNotAvailable(SQLException e) {
            return hasCode(e, ER_LOCK_WAIT_TIMEOUT, ER_LOCK_DEADLOCK, ER_LOCK_NOWAIT);
        }

        @Override
        boolean isMissingTable(SQLException e) {
            return hasCode(e, ER_NO_SUCH_TABLE) || hasState(e, "42S02");
        }

        @Override
        boolean isDuplicateKey(SQLException e) {
            return hasCode(e, ER_DUP_ENTRY);
        }
    }

    // ========================================================================================== PostgreSQL

    /** PostgreSQL 9.5+. */
    private static final class PostgreSql extends Dialect {

        PostgreSql() {
            super("PostgreSQL", "postgresql");
        }

        @Override
        String now() {
            // a single statement in autocommit is its own transaction, so now() is the statement's time
            return "now()";
        }

        @Override
        String nowPlusMicros() {
            return "now() + ? * INTERVAL '1 microsecond'";
        }

        @Override
        String nowMinusMicros() {
            return "now() - ? * INTERVAL '1 microsecond'";
        }

        @Override
        String tokenSeed() {
            return "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint";
        }

        @Override
        String insertIfAbsent(String table) {
            return "INSERT INTO " + table + " (lock_key, namespace, name, owner, token, acquired_at, expires_at)"
                    + " VALUES (?, ?, ?, NULL, " + tokenSeed() + ", NULL, now()) ON CONFLICT (lock_key) DO NOTHING";
        }

        @Override
        String acquireSql(String table) {
            return acquireUpdate(table, "token + 1") + " RETURNING token";
        }

        @Override
        long acquire(PreparedStatement statement) throws SQLException {
            return readLong(statement.executeQuery());
        }

        @Override
        boolean lockRow(Connection connection, String table, byte[] key, Duration wait, int queryTimeoutSeconds,
                StatementRegistry registry) throws SQLException {
            String suffix;
            if (wait.toMillis() <= 0) {
                suffix = " FOR UPDATE NOWAIT";
            } else {
                try (Statement set = connection.createStatement()) {
                    set.setQueryTimeout(queryTimeoutSeconds);
                    // SET LOCAL ends with the transaction, so the pooled connection keeps its own setting
                    set.execute("SET LOCAL lock_timeout = '" + wait.toMillis() + "ms'");
                }
                suffix = " FOR UPDATE";
            }
            try (PreparedStatement select = connection.prepareStatement("SELECT token FROM " + table
                    + " WHERE lock_key = ?" + suffix)) {
                select.setQueryTimeout(queryTimeoutSeconds);
                select.setBytes(1, key);
                try (ResultSet row = registry.executeQuery(select)) {
                    return row.next();
                }
            }
        }

        @Override
        String microsUntil(String column) {
            return "(extract(epoch FROM " + column + " - now()) * 1000000)::bigint";
        }

        @Override
        Instant instant(ResultSet row, int column) throws SQLException {
            OffsetDateTime at = row.getObject(column, OffsetDateTime.class);
            return at == null ? null : at.toInstant();
        }

        @Override
        long drawToken(Connection connection, String table, int queryTimeoutSeconds) throws SQLException {
            // nextval() WAL-logs the sequence ahead of the values it hands out and then takes a transaction id,
            // so the autocommit's commit flushes that record before the value is returned
            try (Statement select = connection.createStatement()) {
                select.setQueryTimeout(queryTimeoutSeconds);
                return readLong(select.executeQuery("SELECT nextval('" + table + "_token')"));
            }
        }

        @Override
        void recordSessionHold(Connection connection, String table, byte[] key, String owner, long token,
                boolean holderColumn, int queryTimeoutSeconds) {
            // Nothing is recorded in the row: PostgreSQL shows no session another one's uncommitted writes, and
            // sessionHolder finds the holder without them.
        }

        @Override
        SessionHolder sessionHolder(Connection connection, String table, byte[] key, boolean holderColumn,
                int queryTimeoutSeconds) throws SQLException {
            // A row lock is the locking transaction's id in the row's xmax, and a transaction holds the lock on
            // its own id until it ends: an xmax whose transaction-id lock is granted names the backend holding
            // the row now; an xmax left by an ended transaction matches nothing.
            try (PreparedStatement select = connection.prepareStatement("SELECT l.pid FROM " + table
                    + " t JOIN pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = t.xmax"
                    + " AND l.mode = 'ExclusiveLock' AND l.granted WHERE t.lock_key = ?")) {
                select.setQueryTimeout(queryTimeoutSeconds);
                select.setBytes(1, key);
                try (ResultSet row = select.executeQuery()) {
                    if (!row.next()) {
                        return null;
                    }
                    long pid = row.getLong(1);
                    return new SessionHolder("backend pid " + pid, null, null, pid);
                }
            }
        }

        @Override
        void terminate(Connection connection, long connectionId, int queryTimeoutSeconds) throws SQLException {
            // false, with a warning, if the backend is gone already
            try (PreparedStatement terminate = connection.prepareStatement("SELECT pg_terminate_backend(?)")) {
                terminate.setQueryTimeout(queryTimeoutSeconds);
                terminate.setInt(1, Math.toIntExact(connectionId));
                terminate.executeQuery().close();
            }
        }

        @Override
        boolean isLockNotAvailable(SQLException e) {
            // lock_not_available (lock_timeout, NOWAIT), deadlock_detected
            return hasState(e, "55P03", "40P01");
        }

        @Override
        boolean isMissingTable(SQLException e) {
            return hasState(e, "42P01");
        }

        @Override
        boolean isDuplicateKey(SQLException e) {
            return hasState(e, "23505");
        }
    }

    // ================================================================================================== H2

    /** H2 2.x. */
    private static final class H2 extends Dialect {
        private static final int LOCK_TIMEOUT_1 = 50200;
        private static final int DEADLOCK_1 = 40001;
        private static final int TABLE_OR_VIEW_NOT_FOUND = 42102;
        private static final int TABLE_OR_VIEW_NOT_FOUND_DATABASE_EMPTY = 42104;
        private static final int TABLE_OR_VIEW_NOT_FOUND_WITH_CANDIDATES = 42103;
        private static final int DUPLICATE_KEY_1 = 23505;

        H2() {
            super("H2", "h2");
        }

        @Override
        String now() {
            return "CURRENT_TIMESTAMP(6)";
        }

        @Override
        String nowPlusMicros() {
            return "DATEADD(MICROSECOND, ?, CURRENT_TIMESTAMP(6))";
        }

        @Override
        String nowMinusMicros() {
            return "DATEADD(MICROSECOND, -CAST(? AS BIGINT), CURRENT_TIMESTAMP(6))";
        }

        @Override
        String tokenSeed() {
            return "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP(6)) * 1000000 AS BIGINT)";
        }

        @Override
        String insertIfAbsent(String table) {
            return "MERGE INTO " + table + " t USING (VALUES (CAST(? AS BINARY(32)), CAST(? AS VARCHAR(64)),"
                    + " CAST(? AS VARCHAR(510)))) s(k, ns, nm) ON t.lock_key = s.k WHEN NOT MATCHED THEN INSERT"
                    + " (lock_key, namespace, name, owner, token, acquired_at, expires_at) VALUES (s.k, s.ns, s.nm,"
                    + " NULL, " + tokenSeed() + ", NULL, CURRENT_TIMESTAMP(6))";
        }

        @Override
        String acquireSql(String table) {
            return "SELECT token FROM FINAL TABLE (" + acquireUpdate(table, "token + 1") + ")";
        }

        @Override
        long acquire(PreparedStatement statement) throws SQLException {
            return readLong(statement.executeQuery());
        }

        @Override
        boolean lockRow(Connection connection, String table, byte[] key, Duration wait, int queryTimeoutSeconds,
                StatementRegistry registry) throws SQLException {
            // Always NOWAIT: an H2 lock wait swallows the waiting thread's interrupt status, so waiters poll
            // with the provider's backoff instead (H2 runs in-process, where a poll costs no network). A statement
            // that never blocks needs no registry.
            String suffix = " FOR UPDATE NOWAIT";
            try (PreparedStatement select = connection.prepareStatement("SELECT token FROM " + table
                    + " WHERE lock_key = ?" + suffix)) {
                select.setQueryTimeout(queryTimeoutSeconds);
                select.setBytes(1, key);
                try (ResultSet row = select.executeQuery()) {
                    return row.next();
                }
            }
        }

        @Override
        String microsUntil(String column) {
            return "DATEDIFF(MICROSECOND, CURRENT_TIMESTAMP(6), " + column + ")";
        }

        @Override
        Instant instant(ResultSet row, int column) throws SQLException {
            OffsetDateTime at = row.getObject(column, OffsetDateTime.class);
            return at == null ? null : at.toInstant();
        }

        @Override
        long drawToken(Connection connection, String table, int queryTimeoutSeconds) throws SQLException {
            try (Statement select = connection.createStatement()) {
                select.setQueryTimeout(queryTimeoutSeconds);
                return readLong(select.executeQuery("VALUES NEXT VALUE FOR " + table + "_token"));
            }
        }

        @Override
        String connectionId() {
            return "SESSION_ID()";
        }

        @Override
        SessionHolder sessionHolder(Connection connection, String table, byte[] key, boolean holderColumn,
                int queryTimeoutSeconds) throws SQLException {
            return uncommittedHolder(connection, table, key, holderColumn, queryTimeoutSeconds);
        }

        @Override
        void terminate(Connection connection, long connectionId, int queryTimeoutSeconds) throws SQLException {
            // needs ADMIN rights; false if the session is gone already
            try (PreparedStatement abort = connection.prepareStatement("SELECT ABORT_SESSION(?)")) {
                abort.setQueryTimeout(queryTimeoutSeconds);
                abort.setInt(1, Math.toIntExact(connectionId));
                abort.executeQuery().close();
            }
        }

        @Override
        boolean recordsHolder() {
            return true;
        }

        @Override
        boolean isLockNotAvailable(SQLException e) {
            return hasCode(e, LOCK_TIMEOUT_1, DEADLOCK_1);
        }

        @Override
        boolean swallowedInterrupt(Connection connection, SQLException e, long startNanos) {
            if (!hasCode(e, LOCK_TIMEOUT_1) || connection == null) {
                return false;
            }
            // H2 ends a row-lock wait before the session's lock timeout only when the waiting thread is
            // interrupted, and clears its interrupt status on the way: a timeout that came early was an interrupt.
            long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
            try (Statement query = connection.createStatement();
                    ResultSet timeout = query.executeQuery("VALUES LOCK_TIMEOUT()")) {
                return timeout.next() && waitedMillis < timeout.getLong(1);
            } catch (SQLException unknown) {
                return false;
            }
        }

        @Override
        boolean isMissingTable(SQLException e) {
            return hasCode(e, TABLE_OR_VIEW_NOT_FOUND, TABLE_OR_VIEW_NOT_FOUND_DATABASE_EMPTY,
                    TABLE_OR_VIEW_NOT_FOUND_WITH_CANDIDATES);
        }

        @Override
        boolean isDuplicateKey(SQLException e) {
            return hasCode(e, DUPLICATE_KEY_1);
        }
    }
}
