package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.tests.ExclusionChecker;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

/**
 * The DataSource is the application's: its pool may hand out connections with autoCommit=false, read-only or at
 * another isolation level, as Spring and Hibernate applications configure theirs. The store must work on such
 * connections as on the jdbc: URI form's own, give them back as it got them, and refuse a DataSource that hands
 * out the caller's transactional connection.
 */
@DisplayName("the JDBC backend over the application's own pool")
class JdbcPoolSettingsTest {

    private static final String TABLE = "locksmith_pool_settings_test";

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "ps" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
    }

    private LockOptions options() {
        return LockOptions.builder()
                .namespace(namespace)
                .leaseTime(Duration.ofSeconds(10))
                // 5 s: a provider's first connection (driver and H2 start-up) must fit on a busy machine
                .operationTimeout(Duration.ofSeconds(5))
                .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100))
                .build();
    }

    /** A pool configured as a transactional application's: autoCommit=false. */
    private HikariDataSource transactionalPool(JdbcTarget target) {
        HikariDataSource pool = target.pool(Duration.ofSeconds(5), 8, config -> config.setAutoCommit(false));
        closeAfter.add(pool);
        return pool;
    }

    // ---------------------------------------------------------------- autocommit

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("two providers over pools with autoCommit=false never hold one lock at once, in either mode")
    void autoCommitOffPoolsStillExclude(JdbcTarget target) throws Exception {
        for (Mode mode : Mode.values()) {
            LockProvider first = provider(mode, transactionalPool(target));
            LockProvider second = provider(mode, transactionalPool(target));
            DistributedLock held = first.getLock("held");
            assertThat(held.tryLock()).as("%s: the first provider's tryLock()", mode).isTrue();
            assertThat(second.getLock("held").tryLock()).as("%s: the second provider's tryLock() meanwhile", mode)
                    .isFalse();
            held.unlock();

            ExclusionChecker checker = Contention.run(first, second, mode.name(), Duration.ofSeconds(120));
            checker.assertClean();
            assertThat(checker.report().acquisitions()).as("%s: acquisitions", mode).isEqualTo(Contention.CYCLES);
        }
    }

    private LockProvider provider(Mode mode, DataSource dataSource) {
        LockProvider provider = JdbcLockProviders.builder(dataSource).mode(mode).table(TABLE).options(options())
                .build();
        closeAfter.add(provider);
        return provider;
    }

    /** {@code store} with its hold type forgotten, for calls whose holds come from its own newHold. */
    @SuppressWarnings("unchecked")
    private static LockStore<Object> anyHold(LockStore<?> store) {
        return (LockStore<Object>) store;
    }

    // ---------------------------------------------------------------- giving connections back as they came

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("connections go back with the pool's own autocommit, read-only and isolation settings")
    void connectionsGoBackAsTheyCame(JdbcTarget target) throws Exception {
        int isolation = Connection.TRANSACTION_SERIALIZABLE;
        for (Mode mode : Mode.values()) {
            HikariDataSource pool = target.pool(Duration.ofSeconds(5), 8, config -> {
                config.setAutoCommit(false);
                config.setReadOnly(true);
                config.setTransactionIsolation("TRANSACTION_SERIALIZABLE");
            });
            closeAfter.add(pool);
            List<String> handedOut = new CopyOnWriteArrayList<>();
            List<String> returned = new CopyOnWriteArrayList<>();
            DataSource recording = recordingSettings(pool, handedOut, returned);

            LockStore<Object> store = anyHold(JdbcLockProviders.builder(recording).mode(mode).table(TABLE)
                    .options(options()).buildStore());
            try (LockStore<Object> other = anyHold(JdbcLockProviders.builder(pool).mode(mode).table(TABLE)
                    .options(options()).buildStore())) {
                Object kept = store.newHold("kept", "c.1");
                Acquisition acquired = store.tryAcquire(kept, Duration.ofSeconds(30), Duration.ZERO, null);
                assertThat(acquired.isAcquired()).as("%s: tryAcquire", mode).isTrue();
                assertThat(other.tryAcquire(other.newHold("kept", "d.1"), Duration.ofSeconds(30), Duration.ZERO,
                        null).isAcquired()).as("%s: another store's tryAcquire while it is held", mode).isFalse();
                assertThat(store.renew(List.of(kept), Duration.ofSeconds(30)).gone()).as("%s: renew", mode)
                        .isEmpty();
                assertThat(store.isLocked("kept")).as("%s: isLocked", mode).isTrue();
                assertThat(store.inspect("kept").isLocked()).as("%s: inspect", mode).isTrue();
                assertThat(store.release(kept)).as("%s: release", mode).isTrue();
                Object theirs = other.newHold("kept", "d.2");
                assertThat(other.tryAcquire(theirs, Duration.ofSeconds(30), Duration.ZERO, null).isAcquired())
                        .as("%s: another store's tryAcquire after the release", mode).isTrue();
                assertThat(other.release(theirs)).isTrue();
                assertThat(store.isLocked("kept")).as("%s: isLocked after the release", mode).isFalse();
            } finally {
                store.close();
            }
            JdbcLockProviders.deleteIdleRows(recording, TABLE, Duration.ofDays(1));

            // H2 reports the database's read-only state, not the connection's hint
            assertThat(handedOut).as("%s: settings of the pool's connections", mode).isNotEmpty()
                    .allSatisfy(settings -> assertThat(settings).isIn(settings(false, true, isolation),
                            settings(false, false, isolation)));
            assertThat(returned).as("%s: settings of every connection given back", mode)
                    .containsExactlyInAnyOrderElementsOf(handedOut);
        }
    }

    /** {@code pool}, recording each connection's settings when it is handed out and when it is given back. */
    private static DataSource recordingSettings(DataSource pool, List<String> handedOut, List<String> returned) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    Object result = invoke(pool, method, args);
                    if (!(result instanceof Connection connection) || !method.getName().equals("getConnection")) {
                        return result;
                    }
                    handedOut.add(settings(connection.getAutoCommit(), connection.isReadOnly(),
                            connection.getTransactionIsolation()));
                    return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                            (c, m, a) -> {
                                if (m.getName().equals("close") && !connection.isClosed()) {
                                    returned.add(settings(connection.getAutoCommit(), connection.isReadOnly(),
                                            connection.getTransactionIsolation()));
                                }
                                return invoke(connection, m, a);
                            });
                });
    }

    private static String settings(boolean autoCommit, boolean readOnly, int isolation) {
        return "autoCommit=" + autoCommit + ", readOnly=" + readOnly + ", isolation=" + isolation;
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    // ---------------------------------------------------------------- a failed statement

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a first use whose insert the database refuses fails with the database's reason, and its connection"
            + " goes back without a failed call (a rollback in autocommit, which HikariCP answers with an eviction)")
    void refusedFirstUseGivesItsConnectionBackUnharmed(JdbcTarget target) throws Exception {
        for (Mode mode : Mode.values()) {
            String table = TABLE + "_refusing_" + mode.name().toLowerCase();
            target.dropTableIfExists(table); // with the trigger a run killed midway left on it
            HikariDataSource pool = target.pool(Duration.ofSeconds(5), 4);
            closeAfter.add(pool);
            List<String> failedCalls = new CopyOnWriteArrayList<>();
            try (LockProvider provider = JdbcLockProviders.builder(recordingFailedCalls(pool, failedCalls))
                    .mode(mode).table(table).options(options()).build()) {
                DistributedLock known = provider.getLock("known");
                assertThat(known.tryLock()).as("%s: tryLock() of a name whose row gets made", mode).isTrue();
                known.unlock();
                refuseInserts(target, table);

                assertThatThrownBy(() -> provider.getLock("new").tryLock()).as("%s: tryLock() of a new name", mode)
                        .isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("acquiring 'new'")
                        .hasStackTraceContaining(REFUSAL);
                assertThat(failedCalls).as("%s: connection calls that failed", mode).isEmpty();
                assertThat(known.tryLock()).as("%s: tryLock() of the known name afterwards", mode).isTrue();
                known.unlock();
            } finally {
                target.dropTable(table); // and its trigger
                if (target == JdbcTarget.POSTGRES) {
                    try (Connection admin = target.admin().getConnection(); Statement ddl = admin.createStatement()) {
                        ddl.execute("DROP FUNCTION IF EXISTS " + table + "_refuse()");
                    }
                }
            }
            assertThat(failedCalls).as("%s: connection calls that failed", mode).isEmpty();
        }
    }

    private static final String REFUSAL = "no new lock rows here";

    /** Makes the database refuse every insert into {@code table}, as a trigger of the administrator's could. */
    private static void refuseInserts(JdbcTarget target, String table) throws Exception {
        try (Connection admin = target.admin().getConnection(); Statement ddl = admin.createStatement()) {
            if (target == JdbcTarget.POSTGRES) {
                ddl.execute("CREATE OR REPLACE FUNCTION " + table + "_refuse() RETURNS trigger LANGUAGE plpgsql AS"
                        + " $$ BEGIN RAISE EXCEPTION '" + REFUSAL + "'; END $$");
                ddl.execute("CREATE TRIGGER " + table + "_refuse BEFORE INSERT ON " + table
                        + " FOR EACH ROW EXECUTE FUNCTION " + table + "_refuse()");
            } else {
                ddl.execute("CREATE TRIGGER " + table + "_refuse BEFORE INSERT ON " + table
                        + " FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '" + REFUSAL + "'");
            }
        }
    }

    /** {@code pool}, recording each call on its connections that throws (the statements' own failures aside). */
    private static DataSource recordingFailedCalls(DataSource pool, List<String> failedCalls) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    Object result = invoke(pool, method, args);
                    if (!(result instanceof Connection connection) || !method.getName().equals("getConnection")) {
                        return result;
                    }
                    return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                            (c, m, a) -> {
                                try {
                                    return invoke(connection, m, a);
                                } catch (SQLException e) {
                                    failedCalls.add(m.getName() + ": " + e + " (SQLSTATE " + e.getSQLState() + ")");
                                    throw e;
                                }
                            });
                });
    }

    // ---------------------------------------------------------------- transaction-bound data sources

    @Test
    @DisplayName("a DataSource that hands out the caller's transactional connection is refused when built")
    void transactionBoundDataSourceIsRefused() {
        HikariDataSource pool = JdbcTarget.H2.pool(Duration.ofSeconds(5), 2);
        closeAfter.add(pool);
        TransactionAwareDataSourceProxy bound = new TransactionAwareDataSourceProxy(pool);
        for (DataSource dataSource : List.of(bound, new DelegatingDataSource(bound))) {
            assertThatThrownBy(() -> JdbcLockProviders.builder(dataSource).build())
                    .as("building over %s", dataSource.getClass().getSimpleName())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(TransactionAwareDataSourceProxy.class.getName())
                    .hasMessageContaining("getTargetDataSource()");
            assertThatThrownBy(() -> JdbcLockProviders.deleteIdleRows(dataSource, TABLE, Duration.ofDays(1)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(TransactionAwareDataSourceProxy.class.getName());
        }
        // its target, a pool of plain connections, is fine
        try (LockProvider provider = JdbcLockProviders.builder(bound.getTargetDataSource()).table(TABLE)
                .options(options()).build()) {
            DistributedLock lock = provider.getLock("target");
            assertThat(lock.tryLock()).isTrue();
            lock.unlock();
        }
    }
}
