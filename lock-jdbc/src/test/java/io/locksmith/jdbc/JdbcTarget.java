package io.locksmith.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.tests.servers.DatabaseServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A database the JDBC tests run against: embedded H2, MariaDB and PostgreSQL found by the lock-tests fixtures
 * (local server, given URL, or Testcontainers), MariaDB also through MySQL Connector/J, or MariaDB and PostgreSQL
 * in containers started through Testcontainers whatever the machine has. Looks into the lock table directly and
 * kills connections from the server side, as an operator would.
 */
enum JdbcTarget {

    H2 {
        @Override
        String jdbcUrl() {
            return "jdbc:h2:mem:locksmith-tests;DB_CLOSE_DELAY=-1";
        }

        @Override
        String user() {
            return "sa";
        }

        @Override
        String password() {
            return "";
        }

        @Override
        String connectionIdQuery() {
            return "SELECT SESSION_ID()";
        }

        @Override
        void kill(long id) throws SQLException {
            try (Connection admin = admin().getConnection();
                 PreparedStatement abort = admin.prepareStatement("SELECT ABORT_SESSION(?)")) {
                abort.setInt(1, Math.toIntExact(id));
                abort.executeQuery().close();
            }
        }
    },

    MARIADB {
        @Override
        DatabaseServer server() {
            return MariaDb.SERVER;
        }

        @Override
        String connectionIdQuery() {
            return "SELECT CONNECTION_ID()";
        }
    },

    POSTGRES {
        @Override
        DatabaseServer server() {
            return Postgres.SERVER;
        }

        @Override
        String connectionIdQuery() {
            return "SELECT pg_backend_pid()";
        }
    },

    /** The fixture's MariaDB server through MySQL Connector/J: its URL with the {@code jdbc:mysql:} scheme. */
    MYSQL_CONNECTOR_J {
        @Override
        DatabaseServer server() {
            return MariaDb.SERVER;
        }

        @Override
        String jdbcUrl() {
            // the MariaDB driver takes jdbc:mysql: only with permitMysqlScheme, so DriverManager picks Connector/J
            return server().jdbcUrl().replaceFirst("^jdbc:mariadb:", "jdbc:mysql:");
        }

        @Override
        String connectionIdQuery() {
            return MARIADB.connectionIdQuery();
        }
    },

    /** A MariaDB container of this test JVM's own. */
    MARIADB_CONTAINER {
        @Override
        DatabaseServer server() {
            return MariaDbContainer.SERVER;
        }

        @Override
        String connectionIdQuery() {
            return MARIADB.connectionIdQuery();
        }
    },

    /** A PostgreSQL container of this test JVM's own. */
    POSTGRES_CONTAINER {
        @Override
        DatabaseServer server() {
            return PostgresContainer.SERVER;
        }

        @Override
        String connectionIdQuery() {
            return POSTGRES.connectionIdQuery();
        }
    };

    /**
     * The targets the backend tests cover, every database through each of its drivers; the containers serve the
     * Testcontainers contract runs only.
     */
    static final List<JdbcTarget> BACKENDS = List.of(H2, MARIADB, POSTGRES, MYSQL_CONNECTOR_J);

    private static final AtomicInteger POOLS = new AtomicInteger();
    private HikariDataSource admin;

    /** The fixture's server; H2 has none. */
    DatabaseServer server() {
        throw new UnsupportedOperationException(this + " runs in this JVM");
    }

    String jdbcUrl() {
        return server().jdbcUrl();
    }

    String user() {
        return server().user();
    }

    String password() {
        return server().password();
    }

    /** The query giving the server's id of the current connection. */
    abstract String connectionIdQuery();



    /** Kills the connection with this id from the server side; the server has dropped it on return. */
    void kill(long id) throws SQLException {
        try {
            server().killConnection(id);
        } catch (IllegalStateException alreadyGone) {
            // the server has no such connection any more
        }
    }

    /**
     * What the server shows of connection {@code id} and of the transactions it waits for, as rows of text: for a
     * statement that runs longer than it should, to tell a lock wait (and whose) from a slow commit. Empty where
     * the database shows nothing (H2).
     */
    List<String> serverView(long id) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Connection connection = admin().getConnection()) {
            Dialect dialect = dialect(connection);
            if (dialect == Dialect.POSTGRESQL) {
                query(connection, rows, "SELECT 'waiting' AS who, pid, state, wait_event_type, wait_event,"
                        + " now() - query_start AS running, pg_blocking_pids(pid) AS blockers, query FROM"
                        + " pg_stat_activity WHERE pid = ?", id);
                query(connection, rows, "SELECT 'blocker' AS who, pid, state, wait_event_type, wait_event, now() -"
                        + " xact_start AS in_transaction, query FROM pg_stat_activity WHERE pid = ANY"
                        + " (pg_blocking_pids(?))", id);
            } else if (dialect == Dialect.MARIADB || dialect == Dialect.MYSQL) {
                query(connection, rows, "SELECT 'waiting' AS who, ID, STATE, TIME_MS, INFO FROM"
                        + " information_schema.PROCESSLIST WHERE ID = ?", id);
                query(connection, rows, "SELECT 'blocker' AS who, b.trx_mysql_thread_id, b.trx_state,"
                        + " b.trx_started, b.trx_rows_locked, b.trx_lock_structs, b.trx_query, l.lock_mode,"
                        + " l.lock_type, l.lock_table, l.lock_index, l.lock_data FROM information_schema.INNODB_LOCK_WAITS"
                        + " w JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id JOIN"
                        + " information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id LEFT JOIN"
                        + " information_schema.INNODB_LOCKS l ON l.lock_id = w.blocking_lock_id WHERE"
                        + " r.trx_mysql_thread_id = ?", id);
            }
        }
        return rows;
    }

    private static void query(Connection connection, List<String> rows, String sql, long id) throws SQLException {
        try (PreparedStatement query = connection.prepareStatement(sql)) {
            query.setLong(1, id);
            try (ResultSet result = query.executeQuery()) {
                ResultSetMetaData meta = result.getMetaData();
                while (result.next()) {
                    StringBuilder row = new StringBuilder();
                    for (int i = 1; i <= meta.getColumnCount(); i++) {
                        row.append(i == 1 ? "" : ", ").append(meta.getColumnLabel(i)).append('=')
                                .append(result.getString(i));
                    }
                    rows.add(row.toString());
                }
            }
        }
    }

    /** A new pool of {@code size} connections that starts without connecting; the caller closes it. */
    HikariDataSource pool(Duration timeout, int size) {
        return pool(timeout, size, config -> { });
    }

    /**
     * A new pool of {@code size} connections that starts without connecting, with the settings of the pools the
     * jdbc: URI form builds changed by {@code configure} (as an application configures its own pool); the caller
     * closes it.
     */
    HikariDataSource pool(Duration timeout, int size, Consumer<HikariConfig> configure) {
        HikariConfig config = HikariPools.config(jdbcUrl(), size, timeout);
        configure.accept(config);
        config.setUsername(user());
        config.setPassword(password());
        config.setPoolName("test-" + name().toLowerCase() + "-" + POOLS.incrementAndGet());
        return new HikariDataSource(config);
    }

    /** A small pool for looking into the database, shared by the tests. */
    synchronized HikariDataSource admin() {
        if (admin == null) {
            admin = pool(Duration.ofSeconds(10), 4);
        }
        return admin;
    }

    long connectionId(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
             ResultSet id = statement.executeQuery(connectionIdQuery())) {
            id.next();
            return id.getLong(1);
        }
    }

    // ---------------------------------------------------------------- looking into the table

    /** The names held now in {@code namespace}: owned unexpired rows (lease) or row-locked rows (session). */
    Set<String> heldNames(String table, JdbcLockProviders.Mode mode, String namespace) {
        try (Connection connection = admin().getConnection()) {
            if (mode == JdbcLockProviders.Mode.LEASE) {
                String now = dialect(connection).now();
                Set<String> held = names(connection, "SELECT name FROM " + table + " WHERE namespace = ? AND owner"
                        + " IS NOT NULL AND expires_at > " + now, namespace);
                // and the locks with live read holds
                held.addAll(names(connection, "SELECT m.name FROM " + table + " m JOIN " + table + "_readers r ON"
                        + " r.lock_key = m.lock_key WHERE m.namespace = ? AND r.expires_at > " + now, namespace));
                return held;
            }
            // the names of lock rows only: claim rows and permit-count rows carry a name too, under keys of their own
            Set<String> all = new HashSet<>();
            try (PreparedStatement select = connection.prepareStatement("SELECT name, lock_key FROM " + table
                    + " WHERE namespace = ?")) {
                select.setString(1, namespace);
                try (ResultSet rows = select.executeQuery()) {
                    while (rows.next()) {
                        if (Arrays.equals(rows.getBytes(2), LockTable.key(namespace, rows.getString(1)))) {
                            all.add(rows.getString(1));
                        }
                    }
                }
            }
            List<String> candidates = new ArrayList<>(all);
            if (!candidates.isEmpty()) {
                // The probe finds this namespace's rows by key: a locking scan would lock other namespaces' rows too
                // (InnoDB at REPEATABLE READ keeps a lock on every row it scanned until the transaction ends), and a
                // contract run of another test JVM on the same table would find its free locks busy meanwhile.
                connection.setAutoCommit(false);
                try (PreparedStatement probe = connection.prepareStatement("SELECT name FROM " + table
                        + " WHERE lock_key IN (" + "?, ".repeat(candidates.size() - 1) + "?)"
                        + dialect(connection).skipLocked())) {
                    for (int i = 0; i < candidates.size(); i++) {
                        probe.setBytes(i + 1, LockTable.key(namespace, candidates.get(i)));
                    }
                    try (ResultSet free = probe.executeQuery()) {
                        while (free.next()) {
                            all.remove(free.getString(1));
                        }
                    }
                } finally {
                    connection.rollback();
                    connection.setAutoCommit(true);
                }
            }
            // and the locks with live read holds, which are rows with leases in both modes
            all.addAll(names(connection, "SELECT m.name FROM " + table + " m JOIN " + table + "_readers r ON"
                    + " r.lock_key = m.lock_key WHERE m.namespace = ? AND r.expires_at > "
                    + dialect(connection).now(), namespace));
            return all;
        } catch (SQLException e) {
            if (Dialect.hasState(e, "42S02", "42P01") || Dialect.hasCode(e, 42102, 42104, 42103, 1146)) {
                return Set.of(); // no lock was ever taken in this table
            }
            throw new IllegalStateException(e);
        }
    }

    /** Frees a lease-mode lock in the table, whoever holds it. */
    void clearOwner(String table, String namespace, String name) throws SQLException {
        try (Connection connection = admin().getConnection();
             PreparedStatement update = connection.prepareStatement("UPDATE " + table
                     + " SET owner = NULL WHERE lock_key = ?");
             PreparedStatement delete = connection.prepareStatement("DELETE FROM " + table
                     + "_readers WHERE lock_key = ?")) {
            update.setBytes(1, LockTable.key(namespace, name));
            update.executeUpdate();
            delete.setBytes(1, LockTable.key(namespace, name));
            delete.executeUpdate();
        }
    }

    /** Deletes the read holds of a lock, as an operator would; returns how many rows it deleted. */
    int deleteReaders(String table, String namespace, String name) throws SQLException {
        try (Connection connection = admin().getConnection();
             PreparedStatement delete = connection.prepareStatement("DELETE FROM " + table
                     + "_readers WHERE lock_key = ?")) {
            delete.setBytes(1, LockTable.key(namespace, name));
            return delete.executeUpdate();
        }
    }

    /** The run holding the claim to the next turn of a lease-mode lock, or null: its claim may have lapsed. */
    String claimant(String table, String namespace, String name) throws SQLException {
        return claimantOfRow(table, LockTable.key(namespace, name));
    }

    /** The owner of the live or lapsed session-mode claim of a lock, kept in a row of its own, or null. */
    String sessionClaimant(String table, String namespace, String name) throws SQLException {
        return claimantOfRow(table, LockTable.claimKey(namespace, name));
    }

    private String claimantOfRow(String table, byte[] key) throws SQLException {
        try (Connection connection = admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT claimant FROM " + table
                     + " WHERE lock_key = ?")) {
            select.setBytes(1, key);
            try (ResultSet row = select.executeQuery()) {
                return row.next() ? row.getString(1) : null;
            }
        }
    }

    /** The end of the claim on a lease-mode lock as the row keeps it (live or lapsed), or null. */
    Timestamp claimUntil(String table, String namespace, String name) throws SQLException {
        try (Connection connection = admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT claim_until FROM " + table
                     + " WHERE lock_key = ?")) {
            select.setBytes(1, LockTable.key(namespace, name));
            try (ResultSet row = select.executeQuery()) {
                return row.next() ? row.getTimestamp(1) : null;
            }
        }
    }

    /**
     * Whether a claim written now for {@code lease} would end later than the lock's claim does: the database clock
     * has moved on since the claim was written for that lease.
     */
    boolean claimWrittenNowEndsLater(String table, String namespace, String name, Duration lease)
            throws SQLException {
        try (Connection connection = admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT 1 FROM " + table
                     + " WHERE lock_key = ? AND claim_until < " + dialect(connection).nowPlusMicros())) {
            select.setBytes(1, LockTable.key(namespace, name));
            select.setLong(2, Dialect.micros(lease));
            try (ResultSet row = select.executeQuery()) {
                return row.next();
            }
        }
    }

    /** Whether the claim on a lease-mode lock has lapsed by the database clock (true if there is none). */
    boolean claimLapsed(String table, String namespace, String name) throws SQLException {
        try (Connection connection = admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT COUNT(*) FROM " + table
                     + " WHERE lock_key = ? AND claim_until > " + dialect(connection).now())) {
            select.setBytes(1, LockTable.key(namespace, name));
            try (ResultSet row = select.executeQuery()) {
                return row.next() && row.getLong(1) == 0;
            }
        }
    }

    /**
     * Makes {@code table}, with its token counter, from the DDL of Locksmith versions before claims: the shipped
     * DDL less the claim columns.
     */
    void createTableWithoutClaims(String table) throws SQLException {
        try (Connection connection = admin().getConnection();
             Statement ddl = connection.createStatement()) {
            for (String statement : dialect(connection).ddl(table)) {
                ddl.execute(statement);
            }
            for (String column : List.of("claimant", "claim_token", "claim_until")) {
                ddl.execute("ALTER TABLE " + table + " DROP COLUMN " + column);
            }
        }
        dropReadHolds(table);
    }

    /** Takes from {@code table} what read holds need, as a table made by an earlier version lacks it. */
    void dropReadHolds(String table) throws SQLException {
        try (Connection connection = admin().getConnection();
             Statement ddl = connection.createStatement()) {
            ddl.execute("ALTER TABLE " + table + " DROP COLUMN readers_until");
            ddl.execute("DROP TABLE " + table + "_readers");
        }
    }

    /** Drops {@code table} and its token counter. */
    void dropTable(String table) throws SQLException {
        dropTable(table, "");
    }

    /** Drops {@code table} as {@link #dropTable} does where it exists: what a killed earlier run left behind. */
    void dropTableIfExists(String table) throws SQLException {
        dropTable(table, "IF EXISTS ");
    }

    private void dropTable(String table, String ifExists) throws SQLException {
        try (Connection connection = admin().getConnection();
             Statement drop = connection.createStatement()) {
            drop.execute("DROP TABLE " + ifExists + table);
            drop.execute("DROP TABLE IF EXISTS " + table + "_readers");
            drop.execute(dropTokenCounter(connection, ifExists + table));
        }
    }

    static Dialect dialect(Connection connection) throws SQLException {
        return Dialect.detect(connection);
    }

    /**
     * The statement dropping {@code table}'s token counter: a table on MySQL and MariaDB, a sequence elsewhere;
     * {@code table} may begin with {@code IF EXISTS}.
     */
    static String dropTokenCounter(Connection connection, String table) throws SQLException {
        Dialect dialect = dialect(connection);
        return (dialect == Dialect.MARIADB || dialect == Dialect.MYSQL ? "DROP TABLE " : "DROP SEQUENCE ") + table
                + "_token";
    }

    private static Set<String> names(Connection connection, String sql, String namespace) throws SQLException {
        Set<String> names = new HashSet<>();
        try (PreparedStatement select = connection.prepareStatement(sql)) {
            select.setString(1, namespace);
            try (ResultSet rows = select.executeQuery()) {
                while (rows.next()) {
                    names.add(rows.getString(1));
                }
            }
        }
        return names;
    }

    /** The fixture's MariaDB, found once per test JVM when first needed. */
    private static final class MariaDb {
        static final DatabaseServer SERVER = DatabaseServer.startMariaDb();
    }

    /** The fixture's PostgreSQL, found once per test JVM when first needed. */
    private static final class Postgres {
        static final DatabaseServer SERVER = DatabaseServer.startPostgres();
    }

    /** A MariaDB container of this test JVM's own, started when first needed and stopped when the JVM exits. */
    private static final class MariaDbContainer {
        static final DatabaseServer SERVER = DatabaseServer.startMariaDbContainer();
    }

    /** A PostgreSQL container of this test JVM's own, started when first needed and stopped when the JVM exits. */
    private static final class PostgresContainer {
        static final DatabaseServer SERVER = DatabaseServer.startPostgresContainer();
    }
}
