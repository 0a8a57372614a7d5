package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Least privilege on MariaDB and PostgreSQL: a database user that may only SELECT, INSERT, UPDATE and DELETE
 * on a lock table an administrator created from the DDL shipped in the jar (plus the token counter session mode
 * draws from) takes, renews, inspects and force-releases locks in both modes; a user who may not create tables
 * gets a clear error when the table is missing; and SQL metacharacters in lock names are data. Every test
 * creates its own users and tables under unique names and drops them afterwards.
 */
@DisplayName("JDBC access control: a SELECT/INSERT/UPDATE/DELETE user, no CREATE; SQL metacharacters in names")
class JdbcAccessControlTest {

    private static final Duration SLACK = Duration.ofSeconds(10);

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String suffix = Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
    private final String namespace = "ac" + suffix;

    /** What the library logged during the test: the test's logging binding writes to System.err. */
    private final ByteArrayOutputStream logged = new ByteArrayOutputStream();
    private PrintStream standardError;

    @BeforeEach
    void recordTheLog() {
        standardError = System.err;
        PrintStream original = standardError;
        System.setErr(new PrintStream(new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                synchronized (logged) {
                    logged.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                original.write(b, off, len);
                synchronized (logged) {
                    logged.write(b, off, len);
                }
            }
        }, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void closeEverything() throws Exception {
        try {
            closeResources();
        } finally {
            System.setErr(standardError);
        }
    }

    private void closeResources() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
        closeAfter.clear();
    }

    private String log() {
        synchronized (logged) {
            return logged.toString(StandardCharsets.UTF_8);
        }
    }

    static Stream<Arguments> serversAndModes() {
        List<Arguments> all = new ArrayList<>();
        for (JdbcTarget target : List.of(JdbcTarget.MARIADB, JdbcTarget.POSTGRES)) {
            for (Mode mode : Mode.values()) {
                all.add(Arguments.of(target, mode));
            }
        }
        return all.stream();
    }

    // ---------------------------------------------------------------- helpers

    private <T extends AutoCloseable> T closing(T resource) {
        closeAfter.add(resource);
        return resource;
    }

    private LockOptions.Builder options() {
        return LockOptions.builder()
                .namespace(namespace)
                .leaseTime(Duration.ofSeconds(1))
                .operationTimeout(Duration.ofSeconds(2))
                .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100));
    }

    private static void awaitTrue(String what, Duration limit, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + limit.toMillis() + " ms waiting until " + what);
            }
            Thread.sleep(10);
        }
    }

    private static void execute(Connection connection, String... statements) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            for (String sql : statements) {
                statement.execute(sql);
            }
        }
    }

    /**
     * A database user with a password and nothing but the grants given, and a lock table made by the
     * administrator from the shipped DDL (or none); {@link #close()} drops what it made.
     */
    private final class RestrictedUser implements AutoCloseable {
        final JdbcTarget target;
        final String user = "ls_user_" + suffix;
        final String password = "Pw-" + suffix + "-secret";
        final String table;
        final String account;
        private final boolean tableMade;

        RestrictedUser(JdbcTarget target, String table, boolean makeTable) throws SQLException {
            this.target = target;
            this.table = table;
            this.tableMade = makeTable;
            this.account = target == JdbcTarget.MARIADB ? "'" + user + "'@'%'" : user;
            try (Connection admin = target.admin().getConnection()) {
                if (makeTable) {
                    // exactly what an administrator runs: the DDL shipped in the jar
                    for (String ddl : Dialect.detect(admin).ddl(table)) {
                        execute(admin, ddl);
                    }
                }
                if (target == JdbcTarget.MARIADB) {
                    execute(admin, "CREATE USER " + account + " IDENTIFIED BY '" + password + "'");
                } else {
                    execute(admin, "CREATE ROLE " + user + " LOGIN PASSWORD '" + password + "'");
                }
            }
        }

        /**
         * Runs the GRANT statements docs/security.md gives the application's user for this database and mode, as
         * written there, for this test's table and user.
         */
        void grantAsDocumented(Mode mode) throws IOException, SQLException {
            String docs = Files.readString(Path.of("..", "docs", "security.md"));
            int section = docs.indexOf(target == JdbcTarget.MARIADB ? "MariaDB / MySQL:" : "PostgreSQL:",
                    docs.indexOf("## JDBC"));
            int open = docs.indexOf("```sql", section);
            String block = docs.substring(open + "```sql".length(), docs.indexOf("```", open + 6));
            List<String> grants = new ArrayList<>();
            Mode only = null; // the grants after "-- session mode also:"; those before it are for both modes
            for (String line : block.split("\n")) {
                String statement = line.strip();
                if (statement.startsWith("-- session mode")) {
                    only = Mode.SESSION;
                }
                if (statement.startsWith("GRANT ") && (only == null || only == mode)) {
                    grants.add(statement.substring(0, statement.length() - 1)
                            .replace("appdb.", "")
                            .replace("locksmith_locks", table)
                            .replace(" TO 'app'@'%'", " TO " + account)
                            .replace(" TO app", " TO " + user));
                }
            }
            assertThat(grants).as("GRANT statements in docs/security.md for %s in %s mode", target, mode)
                    .hasSize(mode == Mode.SESSION ? 3 : 2)
                    .allSatisfy(grant -> assertThat(grant).contains(table).endsWith(" TO " + account));
            try (Connection admin = target.admin().getConnection()) {
                execute(admin, grants.toArray(String[]::new));
            }
        }

        /**
         * On MariaDB, SELECT, INSERT, UPDATE and DELETE on the whole database, as some setups grant: without any
         * privilege there MariaDB answers "command denied" rather than tell whether a table exists. PostgreSQL
         * says a table does not exist to anyone.
         */
        void grantDataOnDatabase() throws SQLException {
            if (target == JdbcTarget.MARIADB) {
                try (Connection admin = target.admin().getConnection()) {
                    execute(admin, "GRANT SELECT, INSERT, UPDATE, DELETE ON `" + admin.getCatalog() + "`.* TO "
                            + account);
                }
            }
        }

        String uri(Mode mode, String extra) {
            String url = target.jdbcUrl();
            return url + (url.contains("?") ? "&" : "?") + "user=" + user + "&password=" + password
                    + "&locksmith.table=" + table + "&locksmith.mode=" + mode.name().toLowerCase() + extra;
        }

        LockProvider open(Mode mode, String extra, LockOptions options) {
            return closing(LockProvider.open(uri(mode, extra), options));
        }

        /** A pool of this user's connections, for the static maintenance calls. */
        HikariDataSource pool() {
            HikariConfig config = HikariPools.config(target.jdbcUrl(), 2, Duration.ofSeconds(5));
            config.setUsername(user);
            config.setPassword(password);
            return closing(new HikariDataSource(config));
        }

        /** Runs {@code sql} as this user; the database's refusal is the exception. */
        void runAsUser(String sql) throws SQLException {
            try (HikariDataSource pool = pool(); Connection connection = pool.getConnection()) {
                execute(connection, sql);
            }
        }

        @Override
        public void close() throws Exception {
            closeResources();
            try (Connection admin = target.admin().getConnection()) {
                if (tableMade) {
                    execute(admin, "DROP TABLE " + table, "DROP TABLE " + table + "_readers",
                            target == JdbcTarget.MARIADB ? "DROP TABLE " + table + "_token"
                                    : "DROP SEQUENCE " + table + "_token");
                }
                if (target == JdbcTarget.MARIADB) {
                    execute(admin, "DROP USER " + account);
                } else {
                    execute(admin, "DROP OWNED BY " + user, "DROP ROLE " + user);
                }
            }
        }
    }

    private static boolean tableExists(JdbcTarget target, String table) throws SQLException {
        try (Connection admin = target.admin().getConnection();
             Statement probe = admin.createStatement()) {
            probe.executeQuery("SELECT 1 FROM " + table + " WHERE 1 = 0").close();
            return true;
        } catch (SQLException e) {
            if (Dialect.hasState(e, "42S02", "42P01") || Dialect.hasCode(e, 1146, 42102, 42104)) {
                return false;
            }
            throw e;
        }
    }

    // ---------------------------------------------------------------- least privilege

    @ParameterizedTest(name = "{0} {1} mode")
    @MethodSource("serversAndModes")
    @DisplayName("a user with only SELECT, INSERT, UPDATE and DELETE on the admin's table locks, renews, inspects "
            + "and force-releases; createTable on or off")
    void restrictedUserDoesEverything(JdbcTarget target, Mode mode) throws Exception {
        try (RestrictedUser restricted = new RestrictedUser(target, "ls_acl_" + suffix, true)) {
            restricted.grantAsDocumented(mode);
            // the premise: this user can change rows, not the schema
            assertThatThrownBy(() -> restricted.runAsUser("CREATE TABLE ls_probe_" + suffix + " (x INT)"))
                    .as("CREATE TABLE as the restricted user").isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> restricted.runAsUser("DROP TABLE " + restricted.table))
                    .as("DROP TABLE as the restricted user").isInstanceOf(SQLException.class);

            // createTable=false as documented, and the default createTable=true: the table exists, so the
            // missing CREATE privilege must not matter
            for (String createTable : List.of("&locksmith.createTable=false", "")) {
                String name = "job" + createTable.length();
                List<String> lost = new CopyOnWriteArrayList<>();
                LockProvider app = restricted.open(mode, createTable, options()
                        .listener((lockName, why) -> lost.add(lockName)).build());
                LockProvider other = restricted.open(mode, createTable, options().build());
                LockProvider operator = restricted.open(mode, createTable, options().build());

                DistributedLock lock = app.getLock(name);
                lock.lock();
                long first = lock.fencingToken();
                assertThat(first).isPositive();
                DistributedLock rival = other.getLock(name);
                assertThat(rival.tryLock()).as("%s: another provider's tryLock() while held", createTable)
                        .isFalse();
                // renewal: held over three 1 s leases
                Thread.sleep(3_000);
                assertThat(lock.isHeldByCurrentThread()).as("held after three leases").isTrue();
                assertThat(rival.tryLock()).as("tryLock() after three leases of a renewed hold").isFalse();
                assertThat(lost).as("losses while renewed").isEmpty();
                LockInfo info = operator.inspect(name);
                assertThat(info.isLocked()).as("inspect() of the held lock").isTrue();
                if (mode == Mode.LEASE || target == JdbcTarget.MARIADB) {
                    assertThat(info.owner())
                            .hasValueSatisfying(owner -> assertThat(owner).startsWith(app.clientId() + "."));
                    assertThat(info.fencingToken()).hasValue(first);
                }
                lock.unlock();
                assertThat(operator.inspect(name).isLocked()).as("inspect() after unlock()").isFalse();
                // read-write locks with the readers' table granted as documented
                DistributedLock read = app.getReadWriteLock(name).readLock();
                read.lock();
                assertThat(other.getReadWriteLock(name).readLock().tryLock()).as("a second reader").isTrue();
                other.getReadWriteLock(name).readLock().unlock();
                assertThat(rival.tryLock()).as("a writer beside a reader").isFalse();
                read.unlock();
                assertThat(rival.tryLock()).as("tryLock() after unlock()").isTrue();
                long second = rival.fencingToken();
                assertThat(second).as("the next holder's token").isGreaterThan(first);
                rival.unlock();

                // an operator with the same user frees a stuck lock; the holder finds out
                lock.lock();
                assertThat(operator.forceRelease(name)).as("forceRelease() of a held lock").isTrue();
                assertThat(rival.tryLock()).as("tryLock() after forceRelease()").isTrue();
                assertThat(rival.fencingToken()).isGreaterThan(second);
                awaitTrue("the holder hears of the loss", SLACK, () -> lost.contains(name));
                assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
                rival.unlock();
            }

            // the maintenance call works with the same grants
            Thread.sleep(300);
            assertThat(JdbcLockProviders.deleteIdleRows(restricted.pool(), restricted.table, Duration.ofMillis(200)))
                    .as("rows deleteIdleRows removed as the restricted user").isEqualTo(2);
            assertThat(log()).as("the log").contains("forcibly released").contains("lost by thread")
                    .doesNotContain(restricted.password);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"MARIADB", "POSTGRES"})
    @DisplayName("a missing table and no CREATE privilege: a LockBackendException saying what to do")
    void missingTableWithoutCreatePrivilege(JdbcTarget target) throws Exception {
        try (RestrictedUser restricted = new RestrictedUser(target, "ls_missing_" + suffix, false)) {
            restricted.grantDataOnDatabase();
            String ddl = "io/locksmith/jdbc/ddl/" + (target == JdbcTarget.MARIADB ? "mysql" : "postgresql") + ".sql";
            for (Mode mode : Mode.values()) {
                LockProvider provider = restricted.open(mode, "", options().build());
                DistributedLock lock = provider.getLock("first-use");
                assertThatThrownBy(lock::tryLock).as("%s: tryLock() with createTable on", mode)
                        .isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("lock table " + restricted.table + " does not exist and could not be"
                                + " created")
                        .hasMessageContaining(ddl)
                        .hasMessageContaining("SELECT, INSERT, UPDATE and DELETE")
                        .hasMessageNotContaining(restricted.password);
                assertThat(lock.getHoldCount()).isZero();

                LockProvider withoutCreate = restricted.open(mode, "&locksmith.createTable=false", options().build());
                assertThatThrownBy(() -> withoutCreate.getLock("first-use").tryLock())
                        .as("%s: tryLock() with createTable off", mode)
                        .isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("lock table " + restricted.table + " (or its " + restricted.table
                                + "_token counter) does not exist and createTable is off")
                        .hasMessageContaining(ddl)
                        .hasMessageNotContaining(restricted.password);
            }
            assertThat(tableExists(target, restricted.table)).as("the lock table after the attempts").isFalse();
            assertThat(log()).as("the log").doesNotContain(restricted.password);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"MARIADB", "POSTGRES"})
    @DisplayName("a lease-mode table of an earlier version, without ALTER privilege: a LockBackendException naming"
            + " the ALTER TABLE to run, until an administrator has run it")
    void tableWithoutClaimColumnsAndNoAlterPrivilege(JdbcTarget target) throws Exception {
        try (RestrictedUser restricted = new RestrictedUser(target, "ls_old_" + suffix, true)) {
            String alter;
            try (Connection admin = target.admin().getConnection()) {
                // the table as an earlier version's DDL made it
                for (String column : List.of("claimant", "claim_token", "claim_until")) {
                    execute(admin, "ALTER TABLE " + restricted.table + " DROP COLUMN " + column);
                }
                alter = Dialect.detect(admin).addClaimColumns(restricted.table);
            }
            restricted.grantAsDocumented(Mode.LEASE);
            assertThatThrownBy(() -> restricted.runAsUser(alter)).as("ALTER TABLE as the restricted user")
                    .isInstanceOf(SQLException.class);

            LockProvider provider = restricted.open(Mode.LEASE, "", options().build());
            DistributedLock lock = provider.getLock("job");
            assertThatThrownBy(lock::tryLock).as("tryLock() on the old table")
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("has no claim columns (claimant, claim_token, claim_until)")
                    .hasMessageContaining("adding them failed")
                    .hasMessageContaining("add them as an administrator with " + alter)
                    .hasMessageNotContaining(restricted.password);
            assertThat(lock.getHoldCount()).isZero();

            try (Connection admin = target.admin().getConnection()) {
                execute(admin, alter);
            }
            assertThat(lock.tryLock()).as("tryLock() once the administrator added the columns").isTrue();
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- SQL metacharacters

    /** Names that would match each other, or break out of a string literal, if the SQL were built from them. */
    private static final List<String> SQL_NAMES = List.of("'", "\"", ";", "--", "/*", "*/", "\\", "`", "%", "_",
            "' OR '1'='1", "\" OR \"\"=\"", "'); DROP TABLE locksmith_locks; --", "x'; DELETE FROM x; --",
            "%%", "a%", "a_c", "\\%", "\\_", "[a-z]", "a\\'b", "${table}", "?", "$1");
    /** Names the wildcards above would match in a LIKE, and that stay free. */
    private static final List<String> LOOKALIKES = List.of("abc", "aXc", "a", "ab", "x", "\\x");

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("SQL metacharacters in names are data: each name its own lock in tryLock, inspect, forceRelease"
            + " and deleteIdleRows")
    void sqlMetacharactersAreData(JdbcTarget target) throws Exception {
        String table = "ls_names_" + suffix;
        HikariDataSource pool = closing(target.pool(Duration.ofSeconds(5), 4));
        LockOptions options = options().leaseTime(Duration.ofSeconds(30)).build();
        LockProvider holder = closing(JdbcLockProviders.builder(pool).table(table).options(options).build());
        LockProvider other = closing(JdbcLockProviders.builder(pool).table(table).options(options).build());
        try {
            for (String name : LOOKALIKES) {
                DistributedLock lock = other.getLock(name);
                lock.lock();
                lock.unlock();
            }
            for (String name : SQL_NAMES) {
                assertThat(holder.getLock(name).tryLock()).as("tryLock() of %s", name).isTrue();
            }
            for (String name : SQL_NAMES) {
                assertThat(other.getLock(name).tryLock()).as("another provider's tryLock() of %s", name).isFalse();
                LockInfo info = other.inspect(name);
                assertThat(info.name()).isEqualTo(name);
                assertThat(info.owner()).as("inspect() of %s", name)
                        .hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
            }
            for (String name : LOOKALIKES) {
                assertThat(other.inspect(name).isLocked()).as("inspect() of %s", name).isFalse();
                DistributedLock lock = other.getLock(name);
                assertThat(lock.tryLock()).as("tryLock() of %s while the wildcards are held", name).isTrue();
                lock.unlock();
            }

            // forceRelease of a wildcard frees that name and no other
            for (String wildcard : List.of("%", "_", "' OR '1'='1")) {
                assertThat(other.forceRelease(wildcard)).as("forceRelease(%s)", wildcard).isTrue();
                assertThat(other.inspect(wildcard).isLocked()).isFalse();
            }
            Set<String> stillHeld = new HashSet<>(SQL_NAMES);
            stillHeld.removeAll(List.of("%", "_", "' OR '1'='1"));
            for (String name : stillHeld) {
                assertThat(other.inspect(name).owner()).as("holder of %s after the forced releases", name)
                        .hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
            }
            assertThat(other.forceRelease("%")).as("forceRelease(%%) again").isFalse();
            assertThat(other.forceRelease("a_b")).as("forceRelease of a name never locked").isFalse();

            // deleteIdleRows removes the idle rows only, however their names read
            for (String name : SQL_NAMES) {
                if (!name.startsWith("%") && !name.startsWith("_") && !name.equals("' OR '1'='1")
                        && !name.equals("a_c") && !name.equals("a%")) {
                    holder.getLock(name).unlock();
                }
            }
            Thread.sleep(300);
            JdbcLockProviders.deleteIdleRows(pool, table, Duration.ofMillis(200));
            assertThat(rowNames(pool, table)).as("rows left after deleteIdleRows")
                    .containsExactlyInAnyOrder("%%", "a_c", "a%");
            assertThat(tableExists(target, table)).isTrue();
        } finally {
            closeResources();
            try (Connection admin = target.admin().getConnection()) {
                execute(admin, "DROP TABLE " + table);
                execute(admin, JdbcTarget.dropTokenCounter(admin, table));
            }
        }
    }

    private List<String> rowNames(HikariDataSource pool, String table) throws SQLException {
        List<String> names = new ArrayList<>();
        try (Connection connection = pool.getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT name FROM " + table
                     + " WHERE namespace = ?")) {
            select.setString(1, namespace);
            try (ResultSet rows = select.executeQuery()) {
                while (rows.next()) {
                    names.add(rows.getString(1));
                }
            }
        }
        return names;
    }
}
