package io.locksmith.jdbc;

import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.spi.LockStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lock table behind a {@link DataSource}: borrows connections with the operation timeout applied, learns
 * the dialect and creates the table on first use (again after the table disappeared), maps names to keys, and
 * turns every {@link SQLException} into a {@link LockBackendException} that names the database and the time
 * spent against the limit.
 *
 * <p>Nothing touches the database before the first lock operation, so a provider can be built while the
 * database is down and starts working when it comes up.
 */
final class LockTable {

    private static final Logger log = LoggerFactory.getLogger(LockTable.class);
    /** The prototype of {@link #newSha256}; never updated, only cloned. */
    private static final MessageDigest SHA_256 = sha256();

    /** A table name: an SQL identifier, optionally qualified by a schema. */
    static final Pattern TABLE_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}(\\.[A-Za-z_][A-Za-z0-9_]{0,47})?");
    private static final Executor DIRECT = Runnable::run;
    /** The shortest network timeout a borrowed connection gets; see {@link #setNetworkTimeout}. */
    static final int MIN_NETWORK_TIMEOUT_MILLIS = PromptNotificationSocketFactory.PEEK_MILLIS + 1;

    private final DataSource dataSource;
    private final String table;
    private final boolean createTable;
    /** Whether the table must have the claim columns: lease mode keeps claims there, session mode only on H2. */
    private final boolean claims;
    private final Duration timeout;
    private final int queryTimeoutSeconds;
    private final AutoCloseable owned;
    private volatile String address;
    /** False once a borrowed connection refused a network timeout: statements then need query timeouts. */
    private volatile boolean networkTimeouts = true;
    /** Guards the one-time set-up (dialect detection, table creation), which talks to the database. */
    private final ReentrantLock setUpLock = new ReentrantLock();
    private volatile Dialect dialect;
    /** The lease-mode statements every acquisition and release runs, written once the dialect is known. */
    private volatile LeaseSql leaseSql;
    private volatile boolean holderColumn;
    /** Whether the table keeps read holds: see {@link #hasReaderTable}. */
    private volatile boolean readers;
    /** Whether the readers' table exists, all session mode's read holds need: see {@link #hasReaderRows}. */
    private volatile boolean readerRows;
    private volatile boolean ready;
    /** Whether every borrowed connection's read-only setting and isolation level must be read: see {@link #borrow}. */
    private volatile boolean checkReadOnly;
    private volatile boolean checkIsolation;
    /** The settings of borrowed connections that {@link #borrow} changed, to restore in {@link #giveBack}. */
    private final Map<Connection, Settings> changed = Collections.synchronizedMap(new IdentityHashMap<>());

    LockTable(DataSource dataSource, String table, boolean createTable, boolean claims, Duration timeout,
            String address, AutoCloseable owned) {
        this.dataSource = dataSource;
        this.table = table;
        this.createTable = createTable;
        this.claims = claims;
        this.timeout = timeout;
        this.queryTimeoutSeconds = seconds(timeout);
        this.address = address;
        this.owned = owned;
    }

    String name() {
        return table;
    }

    String address() {
        return address;
    }

    Duration timeout() {
        return timeout;
    }

    int queryTimeoutSeconds() {
        return queryTimeoutSeconds;
    }

    /** Whole seconds for {@link Statement#setQueryTimeout}, rounded up, at least 1. */
    static int seconds(Duration duration) {
        long millis = Math.max(1, duration.toMillis());
        return (int) Math.min(Integer.MAX_VALUE, (millis + 999) / 1000);
    }

    /** The dialect, known once a connection was made. */
    Dialect dialect() {
        return dialect;
    }

    /**
     * Whether session-mode holders record their connection in the table's {@code holder} column: on databases
     * where they do ({@link Dialect#recordsHolder}) and the table has it (a table made from older DDL may not).
     * Known once a connection was made.
     */
    boolean holderColumn() {
        return holderColumn;
    }

    /**
     * The key of {@code name} in {@code namespace}: SHA-256 over UTF-8 of namespace, NUL, name. Neither may
     * contain NUL, so distinct pairs are distinct inputs; the key is binary, so case and trailing spaces count.
     */
    static byte[] key(String namespace, String name) {
        return digest(namespace, name, 0);
    }

    /**
     * The key of the row that keeps session-mode claims to the turns of {@code name} where waiters poll (see
     * {@link #claimTurn}): SHA-256 over UTF-8 of namespace, NUL, name, NUL. A lock's key hashes one NUL, so no
     * lock has this key.
     */
    static byte[] claimKey(String namespace, String name) {
        return digest(namespace, name, 1);
    }

    /**
     * The key of the row that keeps the permit count of semaphore {@code name} (see {@link #semaphorePermits}):
     * SHA-256 over UTF-8 of namespace, NUL, name, NUL, NUL, the key of no lock and of no claim row.
     */
    static byte[] permitsKey(String namespace, String name) {
        return digest(namespace, name, 2);
    }

    private static byte[] digest(String namespace, String name, int trailingNuls) {
        MessageDigest sha = newSha256();
        sha.update(namespace.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
        sha.update(name.getBytes(StandardCharsets.UTF_8));
        for (int i = 0; i < trailingNuls; i++) {
            sha.update((byte) 0);
        }
        return sha.digest();
    }

    /**
     * A fresh SHA-256 digest, cloned from {@link #SHA_256}: every acquisition run computes its lock's key, and
     * looking the algorithm up among the JVM's security providers cost more than the hashing (about 2 % of a
     * MariaDB lease cycle's client CPU). A provider whose digest cannot be cloned is asked each time.
     */
    private static MessageDigest newSha256() {
        try {
            return (MessageDigest) SHA_256.clone();
        } catch (CloneNotSupportedException e) {
            return sha256();
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    // ---------------------------------------------------------------- connections

    /*
     * What the store needs of a borrowed connection, whatever the DataSource hands out: autocommit, so that each
     * lease-mode statement takes effect alone and at once (a pool configured with autoCommit=false, as Spring and
     * Hibernate applications often have, would otherwise keep every write in a transaction that giveBack rolls
     * back: acquisitions answer "acquired" and leave no trace, and every client holds at once); read-write, since
     * every operation writes (a read-only connection may even be routed to a replica); and the dialect's isolation
     * level (see Dialect.isolation). Session mode then opens its own transactions on top of autocommit. Whatever
     * was changed is put back before the connection returns to its owner, so the caller's pool sees its own
     * settings again.
     *
     * Autocommit decides exclusion and every driver here reads it without a round trip: it is checked on every
     * connection. A read-only connection or another isolation level only makes operations fail, and reading
     * them costs a round trip on some drivers (read-only on H2 and MySQL Connector/J, isolation on PostgreSQL);
     * a pool hands out its connections alike, so they are read from the table's first connection, and read
     * and set on every later one only if that one differed.
     */

    /**
     * Borrows a connection set up as the store needs it (autocommit, read-write, the dialect's isolation) with
     * {@code networkTimeout} as its network timeout, learning the dialect and creating the table on first use;
     * give it back with {@link #giveBack}, which restores the caller's settings.
     */
    Connection borrow(Duration networkTimeout) throws SQLException {
        Connection connection = dataSource.getConnection();
        try {
            if (!setNetworkTimeout(connection, networkTimeout)) {
                networkTimeouts = false;
            }
            Dialect d = dialect;
            if (d == null) {
                d = detect(connection);
            }
            setUp(connection, d);
            if (!ready) {
                prepare(connection, d);
            }
            return connection;
        } catch (SQLException | RuntimeException e) {
            giveBack(connection);
            throw e;
        }
    }

    private void setUp(Connection connection, Dialect d) throws SQLException {
        boolean autoCommit = connection.getAutoCommit();
        boolean readOnly = checkReadOnly && connection.isReadOnly();
        int isolation = checkIsolation ? connection.getTransactionIsolation() : d.isolation();
        if (autoCommit && !readOnly && isolation == d.isolation()) {
            return;
        }
        changed.put(connection, new Settings(autoCommit, readOnly, isolation, isolation != d.isolation()));
        if (!autoCommit) {
            // no transaction is open on a connection just borrowed from a pool, so this commits nothing
            connection.setAutoCommit(true);
        }
        if (readOnly) {
            connection.setReadOnly(false);
        }
        if (isolation != d.isolation()) {
            connection.setTransactionIsolation(d.isolation());
        }
    }

    /**
     * Returns the connection to its pool: rolls back what a session-mode transaction left open (nothing of it is
     * ever committed) and restores the settings the connection was borrowed with.
     */
    void giveBack(Connection connection) {
        Settings settings = changed.remove(connection);
        try {
            if (!connection.isClosed()) {
                if (!connection.getAutoCommit()) {
                    connection.rollback();
                }
                boolean autoCommit = settings == null || settings.autoCommit;
                if (settings != null) {
                    // outside any transaction, where drivers allow both changes
                    connection.setAutoCommit(true);
                    if (settings.isolationChanged) {
                        connection.setTransactionIsolation(settings.isolation);
                    }
                    if (settings.readOnly) {
                        connection.setReadOnly(true);
                    }
                }
                if (connection.getAutoCommit() != autoCommit) {
                    connection.setAutoCommit(autoCommit);
                }
            }
        } catch (SQLException e) {
            log.debug("{}: could not reset a connection before returning it: {}", address, e.toString());
        }
        closeQuietly(connection);
    }

    static void closeQuietly(Connection connection) {
        try {
            connection.close();
        } catch (SQLException | RuntimeException e) {
            log.debug("closing a connection failed: {}", e.toString());
        }
    }

    /**
     * Sets {@code timeout} as the network timeout of {@code connection}, where its driver has one; false where it
     * has none. Never below {@value #MIN_NETWORK_TIMEOUT_MILLIS} ms: on {@link PromptNotificationSocketFactory}'s
     * sockets a 1 ms read is a look whether anything was received.
     */
    static boolean setNetworkTimeout(Connection connection, Duration timeout) throws SQLException {
        try {
            connection.setNetworkTimeout(DIRECT, (int) Math.min(Integer.MAX_VALUE,
                    Math.max(MIN_NETWORK_TIMEOUT_MILLIS, timeout.toMillis())));
            return true;
        } catch (SQLFeatureNotSupportedException | AbstractMethodError | UnsupportedOperationException e) {
            // embedded databases have no network; the query timeout still applies
            return false;
        }
    }

    /**
     * Bounds one lease-mode statement on a connection {@link #borrow} set the operation timeout on as its network
     * timeout: by that network timeout alone where the dialect prefers it ({@link Dialect#boundsByNetworkTimeout})
     * and the table's connections take one, else by a query timeout as well. A statement the network timeout cut
     * short may still be applied by the database later, as any statement whose answer was lost: the machinery
     * releases an acquisition whose outcome it does not know.
     */
    private void bound(Statement statement) throws SQLException {
        if (!(networkTimeouts && dialect.boundsByNetworkTimeout())) {
            statement.setQueryTimeout(queryTimeoutSeconds);
        }
    }

    /**
     * Learns the dialect and the address from the table's first connection, and whether the DataSource hands out
     * read-only connections or connections at another isolation level than the dialect's (see {@link #borrow}).
     */
    private Dialect detect(Connection connection) throws SQLException {
        // a ReentrantLock, not a monitor: the metadata queries below must not pin a virtual thread's carrier
        setUpLock.lock();
        try {
            if (dialect != null) {
                return dialect;
            }
            Dialect detected = Dialect.detect(connection);
            String url = connection.getMetaData().getURL();
            if (url != null) {
                address = describe(url) + " (table " + table + ")";
            }
            checkReadOnly = connection.isReadOnly();
            checkIsolation = connection.getTransactionIsolation() != detected.isolation();
            dialect = detected;
            return detected;
        } finally {
            setUpLock.unlock();
        }
    }

    /** Makes sure the table exists, on a connection set up by {@link #borrow}. */
    private void prepare(Connection connection, Dialect detected) throws SQLException {
        setUpLock.lock();
        try {
            if (ready) {
                return;
            }
            if (createTable && !tableExists(connection)) {
                createTable(connection, detected);
            }
            // lease mode keeps its claims in the lock rows; session mode where row locks never wait (H2) in rows
            // of their own (see claimTurn)
            if ((claims || !detected.locksBlock()) && !hasClaimColumns(connection)) {
                addClaimColumns(connection, detected);
            }
            holderColumn = detected.recordsHolder() && hasHolderColumn(connection);
            // lease mode keeps read holds in a table of their own, with their latest lease end in the lock's row;
            // other users of the table (session mode, deleteIdleRows) only need to know whether it has them
            readers = claims ? hasReaderTable(connection, detected) : hasReaderObjects(connection);
            // session mode's read holds need only the readers' table: their writers count them under the row lock
            readerRows = readers || (!claims && hasReaderRows(connection, detected));
            leaseSql = LeaseSql.of(detected, table, readers);
            ready = true;
        } finally {
            setUpLock.unlock();
        }
    }

    private boolean hasHolderColumn(Connection connection) throws SQLException {
        try (Statement probe = connection.createStatement()) {
            probe.setQueryTimeout(queryTimeoutSeconds);
            probe.executeQuery("SELECT holder FROM " + table + " WHERE 1 = 0").close();
            return true;
        } catch (SQLException e) {
            if (Dialect.hasState(e, "42S22")) {
                // Not added here: ALTER TABLE waits for every open transaction on the table, session holds
                // included, and stalls all lock traffic behind it meanwhile.
                log.info("{}: lock table {} has no holder column, so forced release in session mode cannot find"
                        + " holders; add it with ALTER TABLE {} ADD COLUMN holder BIGINT", address, table, table);
                return false;
            }
            if (dialect.isMissingTable(e)) {
                return false; // the operation fails on the missing table itself
            }
            throw e;
        }
    }

    /**
     * Whether read holds can be kept: the lock table has {@code readers_until} and the readers' table exists.
     * Where they are missing and createTable is on, adds them (see {@link #addClaimColumns} for how an ALTER
     * behaves); where it is off, plain locks work as before and read-write locks are refused with the statements
     * to run (see {@link #readersMissing}).
     */
    private boolean hasReaderTable(Connection connection, Dialect detected) throws SQLException {
        boolean column = hasReadersColumn(connection);
        boolean rows = hasReadersRows(connection);
        if ((column && rows) || !createTable) {
            if (!(column && rows)) {
                log.info("{}: {}", address, readersMissing());
            }
            return column && rows;
        }
        try {
            if (!column) {
                alter(connection, detected, detected.addReadersColumn(table));
            }
            if (!rows) {
                try (Statement ddl = connection.createStatement()) {
                    ddl.setQueryTimeout(queryTimeoutSeconds);
                    for (String statement : detected.ddl(table)) {
                        if (statement.contains(table + "_readers")) {
                            ddl.execute(statement);
                        }
                    }
                }
            }
        } catch (SQLException failure) {
            // processes upgrading at once race to add them; without them, read-write locks are refused
            boolean there = hasReaderObjects(connection);
            if (!there) {
                log.warn("{}: could not add what read holds need ({}); {}", address, failure.getMessage(),
                        readersMissing());
            }
            return there;
        }
        log.info("{}: added the readers_until column and the {}_readers table for read holds", address, table);
        return true;
    }

    /**
     * Whether the readers' table exists, which is all read holds need in session mode; where it is missing and
     * createTable is on, creates it (a CREATE TABLE, which unlike an ALTER of the lock table waits for no holder's
     * transaction).
     */
    private boolean hasReaderRows(Connection connection, Dialect detected) throws SQLException {
        if (hasReadersRows(connection) || !createTable) {
            return hasReadersRows(connection);
        }
        try (Statement ddl = connection.createStatement()) {
            ddl.setQueryTimeout(queryTimeoutSeconds);
            ddl.execute(readersTableDdl(detected));
        } catch (SQLException failure) {
            // processes upgrading at once race to create it; without it, read-write locks are refused
            log.warn("{}: could not create the {}_readers table for read holds ({})", address, table,
                    failure.getMessage());
        }
        return hasReadersRows(connection);
    }

    /** The CREATE TABLE of the readers' table in {@code d}'s DDL. */
    private String readersTableDdl(Dialect d) {
        for (String statement : d.ddl(table)) {
            if (statement.contains(table + "_readers")) {
                return statement;
            }
        }
        throw new IllegalStateException("the DDL of " + d + " has no readers' table");
    }

    /**
     * Whether the readers' table exists, so that session mode can keep read holds; known once a connection was
     * made.
     */
    boolean readerRows() {
        return readerRows;
    }

    /** Why session mode refuses read-write locks on a table without the readers' table, with the statement to run. */
    String readerRowsMissing() {
        return "lock table " + table + " keeps no read holds (the " + table + "_readers table is missing and "
                + "createTable is off): read-write locks are refused until an administrator runs "
                + readersTableDdl(dialect).replaceAll("\\s+", " ") + " (see docs/jdbc.md, upgrading)";
    }

    private boolean hasReaderObjects(Connection connection) throws SQLException {
        return hasReadersColumn(connection) && hasReadersRows(connection);
    }

    private boolean hasReadersColumn(Connection connection) throws SQLException {
        return probe(connection, "SELECT readers_until FROM " + table + " WHERE 1 = 0");
    }

    private boolean hasReadersRows(Connection connection) throws SQLException {
        return probe(connection, "SELECT 1 FROM " + table + "_readers WHERE 1 = 0");
    }

    /** Why read-write locks are refused on a table without what read holds need, with the statements to run. */
    String readersMissing() {
        Dialect d = dialect;
        String create = "";
        for (String statement : d.ddl(table)) {
            if (statement.contains(table + "_readers")) {
                create = statement.replaceAll("\\s+", " ");
            }
        }
        return "lock table " + table + " keeps no read holds (it lacks the readers_until column or the " + table
                + "_readers table, and createTable is off): read-write locks are refused until an administrator"
                + " runs " + d.addReadersColumn(table) + "; and " + create + " (see docs/jdbc.md, upgrading)";
    }

    /** Whether {@code query} runs: false if it fails for a missing table or column, or for missing rights. */
    private boolean probe(Connection connection, String query) throws SQLException {
        try (Statement probe = connection.createStatement()) {
            probe.setQueryTimeout(queryTimeoutSeconds);
            probe.executeQuery(query).close();
            return true;
        } catch (SQLException e) {
            if (!connection.getAutoCommit()) {
                connection.rollback(); // PostgreSQL aborts the transaction on any error
            }
            if (LockTable.isDead(connection)) {
                throw e;
            }
            return false;
        }
    }

    /**
     * Whether the table has what read holds need ({@code readers_until} and the readers' table); known once a
     * connection was made.
     */
    boolean readers() {
        return readers;
    }

    /** Whether the table has the claim columns, or is missing (the operation then fails on the table itself). */
    private boolean hasClaimColumns(Connection connection) throws SQLException {
        boolean autoCommit = connection.getAutoCommit();
        try (Statement probe = connection.createStatement()) {
            probe.setQueryTimeout(queryTimeoutSeconds);
            probe.executeQuery("SELECT claimant, claim_token, claim_until FROM " + table + " WHERE 1 = 0").close();
            return true;
        } catch (SQLException e) {
            if (!autoCommit) {
                connection.rollback(); // PostgreSQL aborts the transaction on any error
            }
            if (dialect.isMissingColumn(e)) {
                return false;
            }
            if (dialect.isMissingTable(e)) {
                return true;
            }
            throw e;
        }
    }

    /**
     * Adds the claim columns to a table made from an earlier version's DDL, or fails naming the statement to
     * run. Without them a provider whose threads pass the lock to each other could starve the other processes'
     * waiters, so a table that cannot get them is an error, not a reason to go on without.
     *
     * <p>ALTER TABLE waits for every transaction that has used the table to end, and every statement on the table
     * queues behind it meanwhile (a session-mode hold on the same table would stall all lock traffic): its wait is
     * bounded by the operation timeout. The columns are nullable and added last, which every database here
     * applies to its catalog alone, so the statement itself is short. Processes upgrading at once race to add
     * them: a failed statement is fine when the columns are there afterwards.
     */
    private void addClaimColumns(Connection connection, Dialect detected) throws SQLException {
        String alter = detected.addClaimColumns(table);
        if (!createTable) {
            throw new SQLException("lock table " + table + " has no claim columns (claimant, claim_token,"
                    + " claim_until), which turns across providers need, and createTable is off, so Locksmith does"
                    + " not alter it: add them as an administrator with " + alter, "42S22");
        }
        try {
            alter(connection, detected, alter);
        } catch (SQLException failure) {
            if (hasClaimColumns(connection)) {
                return; // another process added them first
            }
            throw new SQLException("lock table " + table + " has no claim columns (claimant, claim_token,"
                    + " claim_until), which turns across providers need, and adding them failed ("
                    + failure.getMessage() + "); add them as an administrator with " + alter
                    + " (see docs/jdbc.md, upgrading)",
                    failure.getSQLState(), failure.getErrorCode(), failure);
        }
        log.info("{}: added the claim columns to lock table {}: {}", address, table, alter);
    }

    /** Runs one DDL statement with its lock wait bounded by the operation timeout. */
    private void alter(Connection connection, Dialect detected, String statement) throws SQLException {
        String lockWait = detected.ddlLockWaitSetting(timeout);
        connection.setAutoCommit(false);
        try (Statement ddl = connection.createStatement()) {
            ddl.setQueryTimeout(queryTimeoutSeconds);
            if (lockWait != null) {
                ddl.execute(lockWait);
            }
            ddl.execute(statement);
            connection.commit();
        } catch (SQLException e) {
            try {
                connection.rollback();
            } catch (SQLException rollback) {
                e.addSuppressed(rollback);
            }
            throw e;
        } finally {
            String reset = detected.resetDdlLockWait();
            if (reset != null) {
                try (Statement undo = connection.createStatement()) {
                    undo.execute(reset);
                } catch (SQLException e) {
                    // the pool's connection keeps a shorter metadata lock wait: only DDL ever waits for one
                    log.debug("{}: could not reset the DDL lock wait: {}", address, e.toString());
                }
            }
            connection.setAutoCommit(true);
        }
    }

    private boolean tableExists(Connection connection) throws SQLException {
        boolean autoCommit = connection.getAutoCommit();
        try (Statement probe = connection.createStatement()) {
            probe.setQueryTimeout(queryTimeoutSeconds);
            probe.executeQuery("SELECT 1 FROM " + table + " WHERE 1 = 0").close();
            return true;
        } catch (SQLException e) {
            if (!autoCommit) {
                connection.rollback(); // PostgreSQL aborts the transaction on any error
            }
            if (dialect.isMissingTable(e)) {
                return false;
            }
            throw e;
        }
    }

    private void createTable(Connection connection, Dialect detected) throws SQLException {
        // Processes starting at once race to create the same objects, and PostgreSQL's IF NOT EXISTS can still
        // fail then: a failed statement is tried once more, when the other process's object exists.
        SQLException failure = null;
        try (Statement ddl = connection.createStatement()) {
            ddl.setQueryTimeout(queryTimeoutSeconds);
            for (String statement : detected.ddl(table)) {
                try {
                    ddl.execute(statement);
                } catch (SQLException first) {
                    pause();
                    try {
                        ddl.execute(statement);
                    } catch (SQLException second) {
                        second.addSuppressed(first);
                        failure = failure == null ? second : failure;
                    }
                }
            }
        }
        if (failure != null && !tableExists(connection)) {
            throw new SQLException("lock table " + table + " does not exist and could not be created ("
                    + failure.getMessage() + "); create it as an administrator from the DDL in "
                    + detected.ddlResourcePath() + " and grant the user SELECT, INSERT, UPDATE and DELETE on it"
                    + " (see docs/security.md), or let the user create tables", failure.getSQLState(),
                    failure.getErrorCode(), failure);
        }
        log.info("{}: lock table {} is ready ({})", address, table, detected);
    }

    private static void pause() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Called with a failure: if the table has gone, the next operation creates it again. */
    void noticeFailure(SQLException e) {
        Dialect d = dialect;
        if (d != null && d.isMissingTable(e)) {
            ready = false;
        }
    }

    // ---------------------------------------------------------------- lease mode

    /**
     * Inserts the free row of {@code name} unless it exists, in autocommit, without a duplicate-key error.
     *
     * @return 1 if this call inserted it, 0 if it existed
     */
    int insertIfAbsent(Connection connection, byte[] key, String namespace, String name) throws SQLException {
        Dialect d = dialect;
        try (PreparedStatement insert = connection.prepareStatement(d.insertIfAbsent(table))) {
            insert.setQueryTimeout(queryTimeoutSeconds);
            insert.setBytes(1, key);
            insert.setString(2, namespace);
            insert.setString(3, name);
            return insert.executeUpdate() > 0 ? 1 : 0;
        } catch (SQLException e) {
            if (d.isDuplicateKey(e)) {
                return 1; // H2's MERGE can collide with a concurrent insert: the row exists, let the CAS decide
            }
            throw e;
        }
    }

    /**
     * The compare-and-set that takes the row of {@code key} for {@code owner} if it is free or expired (see
     * {@link Dialect#acquireUpdate}), in autocommit.
     *
     * @return the row's new token, or -1 if the row is busy or missing
     */
    long compareAndSet(Connection connection, byte[] key, String owner, Duration lease) throws SQLException {
        return compareAndSet(connection, leaseSql.acquire(), key, owner, lease);
    }

    /**
     * The compare-and-set of {@link #compareAndSet}, which where the dialect can also reads the row when it takes
     * nothing ({@link Dialect#acquireOrReadSql}).
     */
    Take take(Connection connection, byte[] key, String owner, Duration lease) throws SQLException {
        String sql = leaseSql.acquireOrRead();
        if (sql == null) {
            return new Take(compareAndSet(connection, key, owner, lease), null);
        }
        try (PreparedStatement query = connection.prepareStatement(sql)) {
            bindAcquire(query, key, owner, lease);
            query.setBytes(6, key);
            try (ResultSet row = query.executeQuery()) {
                if (!row.next()) {
                    return new Take(-1, RowState.MISSING);
                }
                long token = row.getLong(1);
                int readersLive = row.getInt(2);
                return readersLive < 0 ? new Take(token, null) : new Take(-1, new RowState(token, readersLive > 0));
            }
        }
    }

    /** What {@link #takeOver} answers where its statement took nothing and released the previous hold. */
    static final long RELEASED_INSTEAD = -2;

    /**
     * The take-over of {@link LockStore#takeOver}: the compare-and-set of {@link #compareAndSet} that also takes the
     * row where {@code previous}, a run of the same provider, holds it (see {@link Dialect#takeOverSql}; with
     * {@code pastClaim}, whatever the claim), in autocommit.
     *
     * @return the row's new token, or -1 if it took nothing, or {@link #RELEASED_INSTEAD} if it took nothing and
     *         released {@code previous}'s hold (where {@link Dialect#takeOverReleases})
     */
    long takeOver(Connection connection, byte[] key, String owner, String previous, boolean pastClaim, Duration lease,
            String channel) throws SQLException {
        try (PreparedStatement update = prepareTokenStatement(connection,
                pastClaim ? leaseSql.takeOverPastClaim() : leaseSql.takeOver())) {
            int next = bindAcquire(update, key, owner, lease, previous);
            if (dialect.takeOverReleases()) {
                update.setBytes(next++, key);
                update.setString(next++, previous);
                update.setString(next++, channel);
            }
            if (dialect.notifiesReleases()) {
                update.setString(next, channel);
            }
            return runTokenStatement(connection, update);
        }
    }

    /**
     * What a compare-and-set answered: the row's new token if it took the row, else -1; and if it took nothing,
     * the row as the same statement found it where the dialect reads it ({@link Dialect#acquireOrReadSql}), else
     * null.
     */
    record Take(long token, RowState row) {
    }

    /**
     * The compare-and-set of {@link #compareAndSet} that takes the row even while read holds may live, for a
     * writer that then counts them ({@link #liveReaders}); on a table that keeps read holds only.
     */
    long compareAndSetPastReaders(Connection connection, byte[] key, String owner, Duration lease)
            throws SQLException {
        return compareAndSet(connection, leaseSql.acquirePastReaders(), key, owner, lease);
    }

    private long compareAndSet(Connection connection, String sql, byte[] key, String owner, Duration lease)
            throws SQLException {
        try (PreparedStatement update = prepareTokenStatement(connection, sql)) {
            bindAcquire(update, key, owner, lease);
            return runTokenStatement(connection, update);
        }
    }

    /** Bounds an acquisition statement ({@link Dialect#acquireUpdate}) and binds its parameters. */
    private void bindAcquire(PreparedStatement statement, byte[] key, String owner, Duration lease)
            throws SQLException {
        bindAcquire(statement, key, owner, lease, null);
    }

    /**
     * Bounds an acquisition statement and binds its parameters, with the previous run's owner id after the key for
     * a take-over (not null: {@link Dialect#acquireUpdate} with {@code handed}).
     *
     * @return the index of the next parameter
     */
    private int bindAcquire(PreparedStatement statement, byte[] key, String owner, Duration lease, String previous)
            throws SQLException {
        bound(statement);
        statement.setString(1, owner);
        statement.setLong(2, Dialect.micros(lease));
        statement.setString(3, owner);
        statement.setBytes(4, key);
        int next = 5;
        if (previous != null) {
            statement.setString(next++, previous);
        }
        statement.setString(next++, owner);
        return next;
    }

    private PreparedStatement prepareTokenStatement(Connection connection, String sql) throws SQLException {
        return dialect.tokenIsGeneratedKey() ? connection.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)
                : connection.prepareStatement(sql);
    }

    /** Runs a statement of {@link Dialect#returningToken}: the token, or -1 if it changed no row. */
    private long runTokenStatement(Connection connection, PreparedStatement statement) throws SQLException {
        Dialect d = dialect;
        if (!d.tokenIsGeneratedKey()) {
            return readLong(statement.executeQuery());
        }
        if (statement.executeUpdate() == 0) {
            return -1;
        }
        Long token = generatedKey(statement);
        if (token != null) {
            return token;
        }
        try (Statement select = connection.createStatement()) {
            return readLong(select.executeQuery(d.lastGeneratedKey()));
        }
    }

    // ---------------------------------------------------------------- lease mode: read holds

    /**
     * Writes the read hold's own row with its lease end (or refreshes it), in autocommit: the first step of a
     * read acquisition, before {@link #readAcquire}, so that a writer that takes the lock's row after the grant
     * counts this row.
     */
    void upsertReader(Connection connection, byte[] key, String owner, Duration lease) throws SQLException {
        try (PreparedStatement upsert = connection.prepareStatement(leaseSql.upsertReader())) {
            bound(upsert);
            upsert.setBytes(1, key);
            upsert.setString(2, owner);
            upsert.setLong(3, Dialect.micros(lease));
            upsert.executeUpdate();
        }
    }

    /**
     * The read grant on the lock's row (see {@link Dialect#readAcquireSql}), in autocommit.
     *
     * @param ownWrite the owner id of the write hold of a downgrade, or null
     * @return the row's token, or -1 if a writer or a claim refused it or the row is missing
     */
    long readAcquire(Connection connection, byte[] key, String owner, String ownWrite, Duration lease)
            throws SQLException {
        try (PreparedStatement update = prepareTokenStatement(connection, leaseSql.readAcquire())) {
            bound(update);
            bindReadAcquire(update, 1, key, owner, ownWrite, lease);
            return runTokenStatement(connection, update);
        }
    }

    /**
     * A read attempt's first step: {@link #upsertReader}, then {@link #readAcquire}; in one statement where the
     * dialect has one ({@link Dialect#upsertReaderThenReadAcquireSql}).
     */
    long upsertReaderThenReadAcquire(Connection connection, byte[] key, String owner, String ownWrite,
            Duration lease) throws SQLException {
        String both = leaseSql.upsertReaderThenReadAcquire();
        if (both == null) {
            upsertReader(connection, key, owner, lease);
            return readAcquire(connection, key, owner, ownWrite, lease);
        }
        try (PreparedStatement statement = prepareTokenStatement(connection, both)) {
            bound(statement);
            statement.setBytes(1, key);
            statement.setString(2, owner);
            statement.setLong(3, Dialect.micros(lease));
            bindReadAcquire(statement, 4, key, owner, ownWrite, lease);
            return runTokenStatement(connection, statement);
        }
    }

    private static void bindReadAcquire(PreparedStatement statement, int first, byte[] key, String owner,
            String ownWrite, Duration lease) throws SQLException {
        statement.setLong(first, Dialect.micros(lease));
        statement.setLong(first + 1, Dialect.micros(lease));
        statement.setString(first + 2, owner);
        statement.setBytes(first + 3, key);
        statement.setString(first + 4, ownWrite == null ? "" : ownWrite); // no owner id is empty
        statement.setString(first + 5, owner);
    }

    /**
     * Extends the lease of the read hold of {@code owner} where it has not ended, in autocommit (session mode, whose
     * read holds have no {@code readers_until} to push).
     *
     * @return false if the hold's row is gone or its lease ended
     */
    boolean renewReader(Connection connection, byte[] key, String owner, Duration lease) throws SQLException {
        return extendOwn(connection, table + "_readers", key, owner, lease);
    }

    /** Extends the lease of the row of {@code key} and {@code owner} in {@code rows} where it has not ended. */
    private boolean extendOwn(Connection connection, String rows, byte[] key, String owner, Duration lease)
            throws SQLException {
        try (PreparedStatement update = connection.prepareStatement("UPDATE " + rows + " SET expires_at = "
                + dialect.nowPlusMicros() + " WHERE lock_key = ? AND owner = ? AND expires_at > " + dialect.now())) {
            bound(update);
            update.setLong(1, Dialect.micros(lease));
            update.setBytes(2, key);
            update.setString(3, owner);
            return update.executeUpdate() > 0;
        }
    }

    /**
     * Ends the read hold of {@code owner}: deletes its row, in autocommit.
     *
     * @return whether its lease had not ended (it was held)
     */
    boolean endReader(Connection connection, byte[] key, String owner) throws SQLException {
        try (PreparedStatement delete = connection.prepareStatement("DELETE FROM " + table + "_readers WHERE"
                + " lock_key = ? AND owner = ? AND expires_at > " + dialect.now())) {
            bound(delete);
            delete.setBytes(1, key);
            delete.setString(2, owner);
            if (delete.executeUpdate() > 0) {
                return true;
            }
        }
        deleteReader(connection, key, owner); // a row whose lease ended
        return false;
    }

    /** Deletes every read hold of the row of {@code key}, for a forced release; returns how many were live. */
    int deleteLiveReaders(Connection connection, byte[] key) throws SQLException {
        int live;
        try (PreparedStatement delete = connection.prepareStatement("DELETE FROM " + table + "_readers WHERE"
                + " lock_key = ? AND expires_at > " + dialect.now())) {
            bound(delete);
            delete.setBytes(1, key);
            live = delete.executeUpdate();
        }
        return live;
    }

    /** The live read holds of a lock no writer holds, as one holder ("readers" and their owner ids), or null. */
    LockInfo readersInfo(Connection connection, String name, byte[] key, Long token) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement("SELECT owner, "
                + dialect.microsUntil("expires_at") + " FROM " + table + "_readers WHERE lock_key = ? AND"
                + " expires_at > " + dialect.now() + " ORDER BY owner")) {
            select.setQueryTimeout(queryTimeoutSeconds);
            select.setBytes(1, key);
            List<String> owners = new ArrayList<>();
            long longest = 0;
            try (ResultSet rows = select.executeQuery()) {
                while (rows.next()) {
                    owners.add(rows.getString(1));
                    longest = Math.max(longest, rows.getLong(2));
                }
            }
            return owners.isEmpty() ? null : LockInfo.held(name, "readers " + String.join(", ", owners), null,
                    Duration.of(longest, ChronoUnit.MICROS), token);
        }
    }

    /** Deletes the read hold's row whatever its lease, in autocommit: undoes {@link #upsertReader} of a refused run. */
    void deleteReader(Connection connection, byte[] key, String owner) throws SQLException {
        try (PreparedStatement delete = connection.prepareStatement("DELETE FROM " + table
                + "_readers WHERE lock_key = ? AND owner = ?")) {
            bound(delete);
            delete.setBytes(1, key);
            delete.setString(2, owner);
            delete.executeUpdate();
        }
    }

    /**
     * Releases a read hold: deletes its row where its lease has not ended, in autocommit; on PostgreSQL also wakes
     * a writer that waits (see {@link Dialect#releaseReaderSql}).
     *
     * @return whether it released
     */
    boolean releaseReader(Connection connection, byte[] key, String owner, String channel) throws SQLException {
        return runLeaseStatement(connection, leaseSql.releaseReader(), key, owner, channel);
    }

    /**
     * Extends the lease of the writer run {@code owner}, which took the row past its readers and waits for them to
     * leave, in autocommit.
     *
     * @return false if the row is no longer the run's (its lease ended, or it was force-released)
     */
    boolean refreshPending(Connection connection, byte[] key, String owner, Duration lease) throws SQLException {
        return extendOwn(connection, table, key, owner, lease);
    }

    /**
     * Clears {@code readers_until} of the row of {@code key} that the writer run {@code owner} holds, in
     * autocommit, once it found no live reader: while the row is the run's no reader can be granted, so the
     * compare-and-set of later writers need not refuse for readers until the next read.
     *
     * @return false if the row is no longer the run's (its lease ended: a reader may have come since)
     */
    boolean forgetReaders(Connection connection, byte[] key, String owner) throws SQLException {
        try (PreparedStatement update = connection.prepareStatement("UPDATE " + table + " SET readers_until = NULL"
                + " WHERE lock_key = ? AND owner = ? AND expires_at > " + dialect.now())) {
            bound(update);
            update.setBytes(1, key);
            update.setString(2, owner);
            return update.executeUpdate() > 0;
        }
    }

    /**
     * The read holds of the row of {@code key} whose lease has not ended, and the longest lease left among them,
     * in autocommit.
     */
    LiveReaders liveReaders(Connection connection, byte[] key) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement("SELECT COUNT(*), "
                + dialect.microsUntil("MAX(expires_at)") + " FROM " + table + "_readers WHERE lock_key = ? AND"
                + " expires_at > " + dialect.now())) {
            bound(select);
            select.setBytes(1, key);
            try (ResultSet row = select.executeQuery()) {
                row.next();
                return new LiveReaders(row.getInt(1), Duration.of(Math.max(0, row.getLong(2)), ChronoUnit.MICROS));
            }
        }
    }

    /** What {@link #liveReaders} found: how many live read holds, and the longest lease left among them. */
    record LiveReaders(int count, Duration longestLeft) {
    }

    /**
     * Claims the next turn of the row of {@code key} for the waiting run {@code owner}, or refreshes its claim,
     * for {@code lease} from now (see {@link Dialect#claimUpdate}), in autocommit.
     *
     * @param ticket the row's token when the run first found the lock busy, or {@link Long#MAX_VALUE} if unknown
     */
    Claim claim(Connection connection, byte[] key, String owner, long ticket, Duration lease) throws SQLException {
        Dialect d = dialect;
        try (PreparedStatement claim = connection.prepareStatement(leaseSql.claim())) {
            bound(claim);
            bindClaim(claim, 0, key, owner, ticket, lease);
            if (!d.claimTellsLeaseLeft()) {
                return new Claim(claim.executeUpdate() > 0, null);
            }
            claim.setString(8, owner);
            claim.setBytes(9, key);
            try (ResultSet row = claim.executeQuery()) {
                if (!row.next()) {
                    return new Claim(false, Duration.ZERO); // the row was deleted: the lock is free
                }
                return new Claim(row.getBoolean(1), Duration.of(Math.max(0, row.getLong(2)), ChronoUnit.MICROS));
            }
        }
    }

    /** Binds the parameters of {@link Dialect#claimUpdate} after the first {@code before} ones. */
    private static void bindClaim(PreparedStatement statement, int before, byte[] key, String owner, long ticket,
            Duration lease) throws SQLException {
        statement.setString(before + 1, owner);
        statement.setLong(before + 2, ticket);
        statement.setLong(before + 3, Dialect.micros(lease));
        statement.setString(before + 4, owner);
        statement.setBytes(before + 5, key);
        statement.setString(before + 6, owner);
        statement.setLong(before + 7, ticket);
    }

    /**
     * The token of the row of {@code key}, which is the latest grant's, and whether read holds may live on it, in
     * autocommit.
     */
    RowState readToken(Connection connection, byte[] key, String owner, long ticket, Duration lease)
            throws SQLException {
        try (PreparedStatement select = connection.prepareStatement(leaseSql.readToken())) {
            bound(select);
            bindLook(select, 0, key, owner, ticket, lease);
            try (ResultSet row = select.executeQuery()) {
                return row.next() ? lookedAt(row) : RowState.MISSING;
            }
        }
    }

    /**
     * A waiter's attempt as one statement where the dialect has one ({@link Dialect#acquireOrLookSql}): the
     * compare-and-set, and where it takes nothing the row as {@link #readToken} reads it; null where the dialect
     * has none.
     */
    Take takeOrLook(Connection connection, byte[] key, String owner, long ticket, Duration lease)
            throws SQLException {
        String sql = leaseSql.acquireOrLook();
        if (sql == null) {
            return null;
        }
        try (PreparedStatement query = connection.prepareStatement(sql)) {
            bindAcquire(query, key, owner, lease);
            bindLook(query, 5, key, owner, ticket, lease);
            try (ResultSet row = query.executeQuery()) {
                if (!row.next()) {
                    return new Take(-1, RowState.MISSING);
                }
                return row.getInt(2) < 0 ? new Take(row.getLong(1), null) : new Take(-1, lookedAt(row));
            }
        }
    }

    /** Whether a waiting run's attempt and its claim are one statement here ({@link #takeOrClaim}). */
    boolean takesAndClaims() {
        return leaseSql.takeOrClaim() != null;
    }

    /**
     * A waiting run's attempt and, where it takes nothing, its claim, as one statement where the dialect has one
     * ({@link Dialect#takeOrClaimSql}): as {@link #takeOrLook}, and whether the run claimed or refreshed its claim,
     * with the holder's lease left as the claim found the row (null where it did not claim); null where the dialect
     * has no such statement ({@link #takesAndClaims} false).
     */
    TakeOrClaim takeOrClaim(Connection connection, byte[] key, String owner, long ticket, Duration lease)
            throws SQLException {
        String sql = leaseSql.takeOrClaim();
        if (sql == null) {
            return null;
        }
        try (PreparedStatement query = connection.prepareStatement(sql)) {
            bindAcquire(query, key, owner, lease);
            bindClaim(query, 5, key, owner, ticket, lease);
            query.setString(13, owner);
            query.setLong(14, Dialect.micros(lease) * 2 / 3);
            bindLook(query, 14, key, owner, ticket, lease);
            try (ResultSet row = query.executeQuery()) {
                if (!row.next()) {
                    return new TakeOrClaim(-1, RowState.MISSING, null);
                }
                if (row.getInt(2) < 0) {
                    return new TakeOrClaim(row.getLong(1), null, null);
                }
                return new TakeOrClaim(-1, lookedAt(row), row.getLong(6) > 0
                        ? Duration.of(Math.max(0, row.getLong(7)), ChronoUnit.MICROS) : null);
            }
        }
    }

    /**
     * What {@link #takeOrClaim} answered: as {@link Take}, and where it took nothing but claimed (or refreshed its
     * claim), within how long the claimant should look again; else null.
     */
    record TakeOrClaim(long token, RowState row, Duration claimed) {
    }

    /** Binds the parameters of {@link LeaseSql#readTokenSql} after the first {@code before} ones. */
    private void bindLook(PreparedStatement statement, int before, byte[] key, String owner, long ticket,
            Duration lease) throws SQLException {
        statement.setString(before + 1, owner);
        statement.setLong(before + 2, Dialect.micros(lease) * 2 / 3);
        statement.setLong(before + 3, ticket);
        boolean tellsLeaseLeft = dialect.claimTellsLeaseLeft();
        if (tellsLeaseLeft) {
            statement.setString(before + 4, owner);
        }
        statement.setBytes(before + (tellsLeaseLeft ? 5 : 4), key);
    }

    /** The row as the columns of {@link LeaseSql#readTokenSql} tell it. */
    private RowState lookedAt(ResultSet row) throws SQLException {
        return new RowState(row.getLong(1), readers && row.getInt(2) > 0, ClaimState.values()[row.getInt(3)],
                row.getInt(4) > 0,
                dialect.claimTellsLeaseLeft() ? Duration.of(Math.max(0, row.getLong(5)), ChronoUnit.MICROS) : null);
    }

    /**
     * A lock row as {@link #readToken} found it: its token (the latest grant's; -1 if there is no row), whether read
     * holds may live on it ({@code readers_until} not passed; false on a table without read holds), and what a claim
     * statement of the reading run would do to the row's claim ({@link ClaimState#UNKNOWN} where the statement that
     * found the row did not read it), whether a writer's lease on it lives (false where not read), and, where the
     * dialect's claim tells it ({@link Dialect#claimTellsLeaseLeft}), within how long a waiter that relies on
     * notifications should look again, as the claim statement would answer (else null).
     */
    record RowState(long token, boolean readersMayLive, ClaimState claim, boolean held, Duration retryAfter) {
        static final RowState MISSING = new RowState(-1, false, ClaimState.UNKNOWN, false, null);

        RowState(long token, boolean readersMayLive) {
            this(token, readersMayLive, ClaimState.UNKNOWN, false, null);
        }
    }

    /** The claim of a lock row, as the run that read it would find it with a claim statement. */
    enum ClaimState {
        /** Not read: the claim statement decides. */
        UNKNOWN,
        /**
         * Free, lapsed, the run's own with less than two thirds of its lease left, or younger than the run's ticket:
         * the claim statement claims or refreshes.
         */
        CLAIMABLE,
        /** The run's own, with more than two thirds of its lease left: no refresh is due yet. */
        OWN,
        /** Another run's, live and at least as old as the run's ticket: a claim statement would be refused. */
        OTHERS
    }

    /**
     * What a claim statement answered: whether the run holds the claim now, and within how long its waiter should
     * look again, where the dialect tells it (else null).
     */
    record Claim(boolean held, Duration retryAfter) {
    }

    /**
     * Frees the row of {@code key} if {@code owner} holds it and its lease has not ended, in autocommit; where the
     * dialect notifies releases, on {@code channel}.
     *
     * @return whether it released
     */
    boolean release(Connection connection, byte[] key, String owner, String channel) throws SQLException {
        return runLeaseStatement(connection, leaseSql.release(), key, owner, channel);
    }

    /**
     * Ends the claim of {@code owner} on the row of {@code key}, if it has one, in autocommit; where the dialect
     * notifies releases, on {@code channel}.
     */
    void dropClaim(Connection connection, byte[] key, String owner, String channel) throws SQLException {
        runLeaseStatement(connection, leaseSql.dropClaim(), key, owner, channel);
    }

    /** Runs a statement binding key, owner (and the channel where it notifies); whether it changed a row. */
    private boolean runLeaseStatement(Connection connection, String sql, byte[] key, String owner, String channel)
            throws SQLException {
        Dialect d = dialect;
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            bound(statement);
            statement.setBytes(1, key);
            statement.setString(2, owner);
            if (!d.notifiesReleases()) {
                return statement.executeUpdate() > 0;
            }
            statement.setString(3, channel);
            try (ResultSet row = statement.executeQuery()) {
                return row.next();
            }
        }
    }

    /** The lease-mode statements on the hot path, written once per table. */
    private record LeaseSql(String acquire, String acquireOrRead, String acquireOrLook, String takeOrClaim,
            String acquirePastReaders,
            String takeOver, String takeOverPastClaim, String claim, String release, String dropClaim, String readToken, String readAcquire,
            String upsertReader, String releaseReader, String upsertReaderThenReadAcquire) {

        static LeaseSql of(Dialect d, String table, boolean readers) {
            String readToken = readTokenSql(d, table, readers);
            return new LeaseSql(d.acquireSql(table, readers), d.acquireOrReadSql(table, readers),
                    d.acquireOrLookSql(table, readers, readToken), d.takeOrClaimSql(table, readers, readToken),
                    d.acquireSql(table, false),
                    d.takeOverSql(table, readers, false), d.takeOverSql(table, readers, true), d.claimSql(table),
                    d.releaseSql(table), d.dropClaimSql(table), readToken, d.readAcquireSql(table),
                    d.upsertReader(table), d.releaseReaderSql(table), d.upsertReaderThenReadAcquireSql(table));
        }

        /**
         * The row's token, whether read holds may live, the ordinal of its {@link ClaimState} for the reading run
         * (in the terms of {@link Dialect#claimUpdate}), and whether a writer's lease on it lives: binds the run's
         * owner id, two thirds of its lease in microseconds, its ticket and the key. A run that has not yet seen
         * the lock busy has no ticket ({@link Long#MAX_VALUE}); it takes the row's token as one, as its claim
         * statement then will.
         */
        private static String readTokenSql(Dialect d, String table, boolean readers) {
            return "SELECT token, " + (readers ? "CASE WHEN readers_until > " + d.now() + " THEN 1 ELSE 0 END" : "0")
                    + ", CASE WHEN claimant IS NULL OR claim_until <= " + d.now() + " THEN 1"
                    + " WHEN claimant = ? THEN CASE WHEN claim_until <= " + d.nowPlusMicros() + " THEN 1 ELSE 2 END"
                    + " WHEN claim_token > LEAST(?, token) THEN 1 ELSE 3 END, CASE WHEN owner IS NOT NULL AND"
                    + " expires_at > " + d.now() + " THEN 1 ELSE 0 END"
                    + (d.claimTellsLeaseLeft() ? ", " + leaseLeft(d) : "") + " FROM " + table + " WHERE lock_key = ?";
        }

        /**
         * Within how long a waiter woken by notifications should look again, as {@link Dialect#claimSql} answers
         * it where the run did not claim: the holder's lease left; where the row is free but another run's claim
         * has had its turns, that claim's life left; else 0. Binds the run's owner id.
         */
        private static String leaseLeft(Dialect d) {
            return "CASE WHEN owner IS NOT NULL AND expires_at > " + d.now() + " THEN " + d.microsUntil("expires_at")
                    + " WHEN claimant IS NOT NULL AND claimant <> ? AND claim_until > " + d.now()
                    + " AND token - claim_token >= " + LockStore.GRANTS_PAST_A_CLAIM + " THEN "
                    + d.microsUntil("claim_until") + " ELSE 0 END";
        }
    }

    // ---------------------------------------------------------------- session mode

    /**
     * Locks the row of {@code key} in the connection's open transaction, waiting for it at most {@code wait}
     * (a zero wait fails at once if it is taken; a wait may be rounded down to what the database can express,
     * and H2 never waits), so that the machinery polls for the rest.
     *
     * @param registry runs the locking read where it may block ({@link Dialect#locksBlock})
     * @return true if locked; false if the row does not exist
     * @throws SQLException that {@link Dialect#isLockNotAvailable} recognises if another transaction holds it
     */
    boolean lockRow(Connection connection, byte[] key, Duration wait, int queryTimeout, StatementRegistry registry)
            throws SQLException {
        Dialect d = dialect;
        String setting = d.lockWaitSetting(wait);
        // the setting in the read's own text where the dialect can (one round trip), else as a statement first
        String inline = setting == null ? null : d.lockWaitQuery();
        if (setting != null && inline == null) {
            try (Statement set = connection.createStatement()) {
                set.setQueryTimeout(queryTimeout);
                set.execute(setting);
            }
        }
        String read = "SELECT token FROM " + table + " WHERE lock_key = ?" + d.forUpdate(wait);
        try (PreparedStatement select = connection.prepareStatement(inline == null ? read : inline + "; " + read)) {
            select.setQueryTimeout(queryTimeout);
            int keyParameter = 1;
            if (inline != null) {
                select.setString(1, d.lockWaitValue(wait));
                keyParameter = 2;
            }
            select.setBytes(keyParameter, key);
            if (d.locksBlock()) {
                registry.execute(select);
            } else {
                select.execute();
            }
            if (inline != null && !select.getMoreResults()) {
                throw new SQLException("the locking read of " + table + " after its lock wait setting returned no"
                        + " result set");
            }
            try (ResultSet row = select.getResultSet()) {
                return row.next();
            }
        }
    }

    /** Undoes session settings {@link #lockRow} changed, before the connection goes back to its pool. */
    void resetSession(Connection connection) throws SQLException {
        String reset = dialect.resetSession();
        if (reset != null) {
            try (Statement set = connection.createStatement()) {
                set.execute(reset);
            }
        }
    }

    /**
     * Draws a session-mode fencing token from the table's counter on {@code connection}, which is in autocommit
     * and no holder's: the statement commits before the token is handed out, so the counter's advance is on disk
     * when the holder sees its token and a database restarted after a crash never hands the token out again. (A
     * holder's own transaction never commits, and a counter advanced inside it can come back after a crash.)
     */
    long drawToken(Connection connection) throws SQLException {
        Dialect d = dialect;
        String sql = d.drawTokenSql(table);
        try (Statement draw = connection.createStatement()) {
            draw.setQueryTimeout(queryTimeoutSeconds);
            if (!d.tokenIsGeneratedKey()) {
                return readLong(draw.executeQuery(sql));
            }
            draw.executeUpdate(sql, Statement.RETURN_GENERATED_KEYS);
            Long token = generatedKey(draw);
            return token != null ? token : readLong(draw.executeQuery(d.lastGeneratedKey()));
        }
    }

    /**
     * Deletes what earlier draws left in the token counter below {@code below}, on the connection of
     * {@link #drawToken}; nothing to do where the counter is a sequence.
     */
    /**
     * A session-mode writer's token, drawn as {@link #drawToken} does, and the live read holds of the row of
     * {@code key} counted after the writer locked that row: in one statement where the draw is a query
     * ({@link Dialect#drawTokenSelectExpression}), so a lock's writes cost no round trip more for its readers;
     * otherwise the draw, then {@link #liveReaders}.
     */
    Draw drawTokenCountingReaders(Connection connection, byte[] key) throws SQLException {
        Dialect d = dialect;
        String draw = d.drawTokenSelectExpression(table);
        if (draw == null) {
            long token = drawToken(connection);
            return new Draw(token, liveReaders(connection, key).count());
        }
        try (PreparedStatement select = connection.prepareStatement("SELECT " + draw + ", (SELECT COUNT(*) FROM "
                + table + "_readers WHERE lock_key = ? AND expires_at > " + d.now() + ")")) {
            select.setQueryTimeout(queryTimeoutSeconds);
            select.setBytes(1, key);
            try (ResultSet row = select.executeQuery()) {
                row.next();
                return new Draw(row.getLong(1), row.getInt(2));
            }
        }
    }

    /** A writer's token and the live read holds it found (see {@link #drawTokenCountingReaders}). */
    record Draw(long token, int readers) {
    }

    void trimTokens(Connection connection, long below) throws SQLException {
        String sql = dialect.trimTokensSql(table);
        if (sql == null) {
            return;
        }
        try (PreparedStatement delete = connection.prepareStatement(sql)) {
            delete.setQueryTimeout(queryTimeoutSeconds);
            delete.setLong(1, below);
            delete.executeUpdate();
        }
    }

    /**
     * Records a session-mode hold in the row of {@code key}, which the connection's transaction has just locked,
     * where other sessions can read it (see {@link #sessionHolder}), on databases whose holders record themselves
     * ({@link Dialect#recordsHolder}). Where row locks never wait ({@link Dialect#locksBlock} false), the same
     * statement refuses the hold if another run's live claim to the turn (see {@link #claimTurn}) has seen
     * {@value LockStore#GRANTS_PAST_A_CLAIM} tokens drawn since it was made: every grant draws one, so at most that
     * many grants pass a claim (fewer where refused attempts, other claims and other names' grants draw too).
     *
     * @param claimKey the key of the row keeping the name's claim, used where row locks never wait
     * @return false if a claim refused the hold, which the caller then rolls back
     */
    boolean recordSessionHold(Connection connection, byte[] key, byte[] claimKey, String owner, long token,
            int queryTimeout) throws SQLException {
        Dialect d = dialect;
        boolean claimed = !d.locksBlock();
        if (!d.recordsHolder() && !claimed) {
            return true;
        }
        try (PreparedStatement record = connection.prepareStatement("UPDATE " + table + " SET owner = ?, token = ?,"
                + " acquired_at = " + d.now() + (holderColumn ? ", holder = " + d.connectionId() : "")
                + " WHERE lock_key = ?" + (claimed ? " AND NOT EXISTS (SELECT 1 FROM " + table + " c WHERE"
                + " c.lock_key = ? AND c.claimant <> ? AND c.claim_until > " + d.now() + " AND c.claim_token < ?)"
                : ""))) {
            record.setQueryTimeout(queryTimeout);
            record.setString(1, owner);
            record.setLong(2, token);
            record.setBytes(3, key);
            if (claimed) {
                record.setBytes(4, claimKey);
                record.setString(5, owner);
                record.setLong(6, token - LockStore.GRANTS_PAST_A_CLAIM);
            }
            return record.executeUpdate() > 0;
        }
    }

    /**
     * Session mode where row locks never wait (H2), whose waiters poll and would rarely find the row free while
     * the holder's provider passes the lock among its own threads: claims the next turn of a name for the waiting
     * run {@code owner}, or refreshes the run's live claim, for {@code lease} from now, in autocommit. The claim
     * lives in a row of its own ({@link #claimKey}), since the lock's row is locked by its holder for the whole
     * hold; a new claim draws a token from the table's counter, from which {@link #recordSessionHold} counts, and a
     * refresh or a refused claim draws none. Inserts the claim row on first use.
     *
     * @return whether the run holds the claim now
     */
    boolean claimTurn(Connection connection, byte[] claimKey, String namespace, String name, String owner,
            Duration lease) throws SQLException {
        Dialect d = dialect;
        String sql = "UPDATE " + table + " SET claim_token = CASE WHEN claimant = ? AND claim_until > " + d.now()
                + " THEN claim_token ELSE " + d.drawTokenExpression(table) + " END, claim_until = "
                + d.nowPlusMicros() + ", claimant = ? WHERE lock_key = ? AND (claimant IS NULL OR claimant = ? OR"
                + " claim_until <= " + d.now() + ")";
        for (int attempt = 0; ; attempt++) {
            try (PreparedStatement claim = connection.prepareStatement(sql)) {
                claim.setQueryTimeout(queryTimeoutSeconds);
                claim.setString(1, owner);
                claim.setLong(2, Dialect.micros(lease));
                claim.setString(3, owner);
                claim.setBytes(4, claimKey);
                claim.setString(5, owner);
                if (claim.executeUpdate() > 0) {
                    return true;
                }
            }
            if (attempt > 0 || insertIfAbsent(connection, claimKey, namespace, name) == 0) {
                return false; // another run's claim lives
            }
        }
    }

    /** Ends the session-mode claim of {@code owner} in the row of {@code claimKey}, if it has one, in autocommit. */
    void dropClaimTurn(Connection connection, byte[] claimKey, String owner) throws SQLException {
        try (PreparedStatement drop = connection.prepareStatement(dialect.dropClaimUpdate(table))) {
            drop.setQueryTimeout(queryTimeoutSeconds);
            drop.setBytes(1, claimKey);
            drop.setString(2, owner);
            drop.executeUpdate();
        }
    }

    /**
     * The session-mode hold of the row of {@code key} as another connection sees it, or null if the row is not
     * held: the holder's record in the row where holders record themselves, else the connection holding the row
     * lock. Read in autocommit; no row lock is taken.
     */
    SessionHolder sessionHolder(Connection connection, byte[] key) throws SQLException {
        return dialect.recordsHolder() ? uncommittedHolder(connection, key) : rowLockHolder(connection, key);
    }

    /**
     * Reads the record {@link #recordSessionHold} wrote inside the holder's still open transaction: a dirty read,
     * which MySQL, MariaDB and H2 allow at READ UNCOMMITTED. The holder never commits, so the committed row
     * always has no owner, and the rollback that ends the hold (release, lease end, or the database ending a
     * dead connection's transaction) erases the record with the hold: an owner in the dirty row means a live
     * hold. Between the row lock and the record the acquisition has not returned yet, and the row reads free.
     */
    private SessionHolder uncommittedHolder(Connection connection, byte[] key) throws SQLException {
        boolean withHolder = holderColumn;
        int isolation = connection.getTransactionIsolation();
        connection.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
        try (PreparedStatement select = connection.prepareStatement("SELECT owner, acquired_at, token"
                + (withHolder ? ", holder" : "") + " FROM " + table + " WHERE lock_key = ?")) {
            select.setQueryTimeout(queryTimeoutSeconds);
            select.setBytes(1, key);
            try (ResultSet row = select.executeQuery()) {
                if (!row.next() || row.getString(1) == null) {
                    return null;
                }
                Long holder = null;
                if (withHolder) {
                    long id = row.getLong(4);
                    holder = row.wasNull() ? null : id;
                }
                return new SessionHolder(row.getString(1), dialect.instant(row, 2), row.getLong(3), holder);
            }
        } finally {
            connection.setTransactionIsolation(isolation);
        }
    }

    /** Finds the connection whose transaction holds the row lock of {@code key}, where holders record nothing. */
    private SessionHolder rowLockHolder(Connection connection, byte[] key) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement(dialect.rowLockHolderSql(table))) {
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

    /**
     * Ends the server connection with this id, whose open transaction the database then rolls back; does nothing
     * if the connection is gone already.
     */
    void terminate(Connection connection, long connectionId) throws SQLException {
        Dialect d = dialect;
        String kill = d.killStatement(connectionId);
        try {
            if (kill != null) {
                try (Statement statement = connection.createStatement()) {
                    statement.setQueryTimeout(queryTimeoutSeconds);
                    statement.execute(kill);
                }
            } else {
                try (PreparedStatement query = connection.prepareStatement(d.terminateQuery())) {
                    query.setQueryTimeout(queryTimeoutSeconds);
                    query.setInt(1, Math.toIntExact(connectionId));
                    query.executeQuery().close();
                }
            }
        } catch (SQLException e) {
            if (!d.isNoSuchConnection(e)) {
                throw e;
            }
        }
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

    /** Registers the statement a thread blocks in, so that an interrupt can cancel it. */
    interface StatementRegistry {
        /**
         * Runs {@code statement} ({@link PreparedStatement#execute}) while an interrupt of the current thread
         * cancels it; its results are read from the statement afterwards.
         */
        void execute(PreparedStatement statement) throws SQLException;
    }

    /** The key a token statement generated, or null if the driver returned none. */
    private static Long generatedKey(Statement statement) throws SQLException {
        try (ResultSet keys = statement.getGeneratedKeys()) {
            return keys.next() ? keys.getLong(1) : null;
        }
    }

    private static long readLong(ResultSet rows) throws SQLException {
        try (rows) {
            return rows.next() ? rows.getLong(1) : -1;
        }
    }

    // ---------------------------------------------------------------- failures

    /** Whether {@code connection} no longer reaches its database (checked with a 1 s bound). */
    static boolean isDead(Connection connection) {
        try {
            return connection.isClosed() || !connection.isValid(1);
        } catch (SQLException e) {
            return true;
        }
    }

    /** A borrowed connection's own settings, where the store needed others. */
    private record Settings(boolean autoCommit, boolean readOnly, int isolation, boolean isolationChanged) {
    }

    // ---------------------------------------------------------------- semaphore permit counts

    /*
     * A semaphore's permit count lives in a row of the lock table keyed apart (permitsKey): its token column is the
     * count, its owner is always NULL (so it is never held, in either mode), and its expires_at is far in the future
     * (so deleteIdleRows, which deletes rows whose lease ended long ago, keeps it). No lock name maps to its key, so
     * no acquisition, release or forced release ever touches it. Both modes keep the count this way.
     */

    /** The permit count of semaphore {@code name}, or empty if none was set. */
    OptionalInt semaphorePermits(String namespace, String name) {
        byte[] key = permitsKey(namespace, name);
        return call("reading the permit count of semaphore '" + name + "'", connection -> {
            try (PreparedStatement select = connection.prepareStatement("SELECT token FROM " + table
                    + " WHERE lock_key = ?")) {
                select.setQueryTimeout(queryTimeoutSeconds);
                select.setBytes(1, key);
                try (ResultSet rows = select.executeQuery()) {
                    return rows.next() ? OptionalInt.of(rows.getInt(1)) : OptionalInt.empty();
                }
            }
        });
    }

    /** Stores {@code permits} as the permit count of semaphore {@code name}: two statements in autocommit. */
    void setSemaphorePermits(String namespace, String name, int permits) {
        byte[] key = permitsKey(namespace, name);
        call("setting the permit count of semaphore '" + name + "' to " + permits, connection -> {
            insertIfAbsent(connection, key, namespace, name);
            try (PreparedStatement update = connection.prepareStatement("UPDATE " + table + " SET token = ?,"
                    + " expires_at = TIMESTAMP '9999-12-31 00:00:00' WHERE lock_key = ?")) {
                update.setQueryTimeout(queryTimeoutSeconds);
                update.setInt(1, permits);
                update.setBytes(2, key);
                if (update.executeUpdate() != 1) {
                    throw new SQLException("the row of the permit count is missing right after its insert");
                }
            }
            return null;
        });
    }

    /** Work on a borrowed connection. */
    @FunctionalInterface
    interface SqlWork<T> {
        T run(Connection connection) throws SQLException;
    }

    /**
     * Runs {@code work} on a connection borrowed with the operation timeout and given back afterwards; any
     * failure becomes a {@link LockBackendException} about {@code what}.
     */
    <T> T call(String what, SqlWork<T> work) {
        long start = System.nanoTime();
        Connection connection = null;
        try {
            connection = borrow(timeout);
            return work.run(connection);
        } catch (SQLException | RuntimeException e) {
            restoreSwallowedInterrupt(connection, e, start);
            throw failure(what, start, e);
        } finally {
            if (connection != null) {
                giveBack(connection);
            }
        }
    }

    /**
     * Sets the calling thread's interrupt status again if the database cleared it while the interrupt cut a lock
     * wait of {@code connection} short (see {@link Dialect#maySwallowInterrupt}), so the caller learns of the
     * interrupt: an interruptible acquisition then throws InterruptedException, not a backend failure.
     */
    void restoreSwallowedInterrupt(Connection connection, Exception e, long startNanos) {
        Dialect d = dialect;
        if (e instanceof SQLException sql && d != null && !Thread.currentThread().isInterrupted()
                && d.maySwallowInterrupt(sql) && connection != null && endedEarly(connection, d, startNanos)) {
            Thread.currentThread().interrupt();
        }
    }

    /** Whether work on {@code connection} that began at {@code startNanos} ended before its lock timeout. */
    private static boolean endedEarly(Connection connection, Dialect d, long startNanos) {
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        try (Statement query = connection.createStatement();
                ResultSet timeout = query.executeQuery(d.lockTimeoutQuery())) {
            return timeout.next() && waitedMillis < timeout.getLong(1);
        } catch (SQLException unknown) {
            return false;
        }
    }

    /** The exception for a failed operation: what, on which database, how long against which limit. */
    LockBackendException failure(String what, long startNanos, Exception cause) {
        String hint = "";
        if (cause instanceof SQLException sql) {
            noticeFailure(sql);
            Dialect d = dialect;
            if (!createTable && d != null && d.isMissingTable(sql)) {
                hint = "; the lock table " + table + " (or its " + table + "_token counter) does not exist and"
                        + " createTable is off: create them from the DDL in " + d.ddlResourcePath();
            }
        }
        long elapsed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        return new LockBackendException(address + " - " + what + " failed after " + elapsed
                + " ms (operation timeout " + timeout.toMillis() + " ms): " + describe(cause) + hint, cause);
    }

    private static String describe(Exception e) {
        String message = e.getMessage() == null ? e.getClass().getName() : e.getMessage();
        Throwable cause = e.getCause();
        // A pool's "connection is not available" says nothing of why; the driver's last failure to connect
        // (refused, wrong password, unknown database) is its cause.
        if (e instanceof SQLTransientConnectionException && cause != null && cause.getMessage() != null
                && !message.contains(cause.getMessage())) {
            message += ": " + cause.getMessage();
        }
        if (e instanceof SQLException sql && sql.getSQLState() != null) {
            return "[" + sql.getSQLState() + "] " + message;
        }
        return message;
    }

    /** A JDBC URL without credentials or parameters, for messages. */
    static String describe(String jdbcUrl) {
        // user info ends at its last '@' before the parameters, whatever characters a password holds
        String url = jdbcUrl.replaceAll("//[^?;]*@", "//");
        int cut = url.length();
        for (char c : new char[] {'?', ';'}) {
            int at = url.indexOf(c);
            if (at >= 0 && at < cut) {
                cut = at;
            }
        }
        return url.substring(0, cut);
    }

    /** Closes the pool the provider owns, if any. */
    void close() {
        if (owned != null) {
            try {
                owned.close();
            } catch (Exception e) {
                log.warn("{}: closing the connection pool failed: {}", address, e.toString());
            }
        }
    }
}
