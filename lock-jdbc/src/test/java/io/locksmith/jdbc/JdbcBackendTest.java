package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.TimeSource;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import io.locksmith.tests.ExclusionChecker;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the JDBC backend promises beyond the shared contract, on every database: database-clock leases, exact
 * names, what a killed connection does in each mode, unreachable databases, the URI form, table creation,
 * idle-row cleanup, and the DDL in the docs.
 */
class JdbcBackendTest {

    private static final Duration SLACK = Duration.ofSeconds(5);
    private static final String TABLE = "locksmith_backend_test";

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "bt" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
    }

    // ---------------------------------------------------------------- helpers

    private <T extends AutoCloseable> T closing(T resource) {
        closeAfter.add(resource);
        return resource;
    }

    private LockOptions.Builder options() {
        return LockOptions.builder()
                .namespace(namespace)
                .leaseTime(Duration.ofSeconds(2))
                // 2 s: a provider's first connection (driver and H2 start-up) must fit on a busy machine
                .operationTimeout(Duration.ofSeconds(2))
                .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100));
    }

    /** A provider on its own pool; with a {@link TrackedDataSource} when given, so tests can kill connections. */
    private LockProvider provider(JdbcTarget target, Mode mode, LockOptions options, TrackedDataSource tracked,
            List<GrantedHolds> sessions) {
        HikariDataSource pool = target.pool(options.operationTimeout(), 10);
        DataSource dataSource = tracked == null ? pool : tracked.wrap(pool);
        LockStore<?> store = JdbcLockProviders.builder(dataSource).mode(mode).table(TABLE).options(options)
                .closing(pool, target.jdbcUrl()).buildStore();
        GrantedHolds session = sessions == null ? null : GrantedHolds.wrap(store, options.namespace());
        if (session != null) {
            sessions.add(session);
            store = session;
        }
        return closing(LockStores.newProvider(store, options));
    }

    private LockProvider provider(JdbcTarget target, Mode mode, LockOptions options) {
        return provider(target, mode, options, null, null);
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

    private static boolean attempt(DistributedLock lock) {
        try {
            return lock.tryLock();
        } catch (LockBackendException e) {
            return false;
        }
    }

    /** Rows of this test's namespace: name → token. */
    private Map<String, Long> rows(JdbcTarget target) throws SQLException {
        Map<String, Long> rows = new HashMap<>();
        try (Connection connection = target.admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT name, token FROM " + TABLE
                     + " WHERE namespace = ?")) {
            select.setString(1, namespace);
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    rows.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        return rows;
    }

    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    /** The URI of {@code target} for {@link LockProvider#open}, with credentials and extra parameters. */
    private static String uri(JdbcTarget target, String parameters) {
        String url = target.jdbcUrl();
        if (target == JdbcTarget.H2) {
            return url + ";USER=" + target.user() + ";PASSWORD=" + target.password()
                    + (parameters.isEmpty() ? "" : ";" + parameters.replace('&', ';'));
        }
        String credentials = "user=" + target.user() + "&password=" + target.password();
        return url + (url.contains("?") ? "&" : "?") + credentials + (parameters.isEmpty() ? "" : "&" + parameters);
    }

    // ---------------------------------------------------------------- clocks

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("lease mode: providers whose clocks disagree by 20 minutes still exclude each other")
    void clientClockSkewCannotBreakExclusion(JdbcTarget target) throws Exception {
        long skew = TimeUnit.MINUTES.toNanos(10);
        TimeSource behind = () -> System.nanoTime() - skew;
        TimeSource ahead = () -> System.nanoTime() + skew;
        LockProvider slow = provider(target, Mode.LEASE, options().timeSource(behind).build());
        LockProvider fast = provider(target, Mode.LEASE, options().timeSource(ahead).build());
        DistributedLock slowLock = slow.getLock("skewed");
        DistributedLock fastLock = fast.getLock("skewed");

        // The slow client takes a 1 s lease: were expiry computed on a client's clock, the fast one would see it
        // ended 10 minutes ago.
        assertThat(slowLock.tryLock(Duration.ZERO, Duration.ofSeconds(1))).isTrue();
        long slowToken = slowLock.fencingToken();
        assertThat(fastLock.tryLock()).as("the fast client's tryLock() during the slow client's lease").isFalse();
        try (Connection connection = target.admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT COUNT(*) FROM " + TABLE
                     + " WHERE lock_key = ? AND expires_at > " + JdbcTarget.dialect(connection).now()
                     + " AND expires_at <= " + JdbcTarget.dialect(connection).nowPlusMicros())) {
            select.setBytes(1, LockTable.key(namespace, "skewed"));
            select.setLong(2, TimeUnit.SECONDS.toMicros(1));
            try (ResultSet rs = select.executeQuery()) {
                rs.next();
                assertThat(rs.getLong(1)).as("expiry within the 1 s lease on the database clock").isEqualTo(1);
            }
        }
        awaitTrue("the fast client acquires once the 1 s lease ended on the database clock",
                Duration.ofSeconds(1).plus(SLACK), fastLock::tryLock);
        assertThat(fastLock.fencingToken()).isGreaterThan(slowToken);
        assertThatThrownBy(slowLock::unlock).isInstanceOf(LockLostException.class);
        fastLock.unlock();

        // Renewed holds under contention between the two clocks.
        ExclusionChecker checker = Contention.run(slow, fast, "slow-fast", Duration.ofSeconds(60));
        checker.assertClean();
        assertThat(checker.report().acquisitions()).isEqualTo(Contention.CYCLES);
    }

    // ---------------------------------------------------------------- names

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("names that differ only by case or trailing spaces are different locks, in both modes")
    void caseAndTrailingSpacesMatter(JdbcTarget target) throws Exception {
        List<String> names = List.of("lock", "Lock", "LOCK", "lock ", "lock  ", " lock", "straße", "STRASSE");
        for (Mode mode : Mode.values()) {
            LockProvider first = provider(target, mode, options().build());
            LockProvider second = provider(target, mode, options().build());
            for (String name : names) {
                assertThat(first.getLock(name).tryLock()).as("%s: tryLock('%s')", mode, name).isTrue();
            }
            for (String name : names) {
                assertThat(second.getLock(name).tryLock()).as("%s: another provider's tryLock('%s')", mode, name)
                        .isFalse();
            }
            assertThat(rows(target).keySet()).as("rows, names read back exactly").containsExactlyInAnyOrderElementsOf(
                    names);
            for (String name : names) {
                first.getLock(name).unlock();
                DistributedLock other = second.getLock(name);
                assertThat(other.tryLock()).as("%s: tryLock('%s') after release", mode, name).isTrue();
                other.unlock();
            }
        }
    }

    // ---------------------------------------------------------------- killed connections

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode: killing the holder's connection frees the lock at once and the holder hears it")
    void killedSessionHolderFreesTheLockAtOnce(JdbcTarget target) throws Exception {
        TrackedDataSource tracked = new TrackedDataSource(target);
        List<GrantedHolds> sessions = new ArrayList<>();
        List<String> lost = new CopyOnWriteArrayList<>();
        LockProvider holder = provider(target, Mode.SESSION, options().listener((name, why) -> lost.add(name))
                .leaseTime(Duration.ofSeconds(6)).build(), tracked, sessions);
        LockProvider waiter = provider(target, Mode.SESSION, options().build());
        DistributedLock held = holder.getLock("killed");
        DistributedLock wanted = waiter.getLock("killed");
        held.lock();
        long token = held.fencingToken();
        assertThat(wanted.tryLock()).isFalse();

        tracked.kill(sessions.get(0).connectionOf(namespace, "killed"));

        assertThat(wanted.tryLock()).as("tryLock() right after the holder's connection was killed").isTrue();
        assertThat(wanted.fencingToken()).isGreaterThan(token);
        // the holder learns at its next renewal (every 2 s with a 6 s lease), before its lease would end
        awaitTrue("the holder hears that its hold was lost", Duration.ofSeconds(6), () -> lost.contains("killed"));
        // the store reports the dead connection itself, naming what happened
        assertThatThrownBy(held::unlock).isInstanceOf(LockLostException.class)
                .hasMessageContaining("connection to the database failed");
        wanted.unlock();
    }

    /**
     * The machinery owns every lease clock, so a session-mode provider runs no timer of its own: its one thread is
     * the machinery's, whatever it holds. A thread blocked in the database's lock wait cannot see an interrupt,
     * so a watchdog thread runs while such a wait is blocked, and only then.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"MARIADB", "POSTGRES"})
    @DisplayName("session mode: a provider's only thread is the machinery's; a lock-wait watchdog runs while a wait"
            + " is blocked")
    void sessionModeThreads(JdbcTarget target) throws Exception {
        LockProvider holder = provider(target, Mode.SESSION, options().build());
        LockProvider waiter = provider(target, Mode.SESSION, options().build());
        DistributedLock held = holder.getLock("threads");
        DistributedLock wanted = waiter.getLock("threads");
        DistributedLock leased = holder.getLock("threads-leased");
        held.lock();
        assertThat(leased.tryLock(Duration.ZERO, Duration.ofSeconds(30))).as("a hold with an explicit lease").isTrue();
        assertThat(threadsNamed("locksmith-" + holder.clientId().substring(0, 8))).as("the machinery's thread")
                .isEqualTo(1);
        awaitTrue("no watchdog runs while nobody waits", SLACK, () -> threadsNamed(WATCHDOG) == 0);

        List<Throwable> outcome = new CopyOnWriteArrayList<>();
        Thread blocked = new Thread(() -> {
            try {
                wanted.lockInterruptibly();
                wanted.unlock();
                outcome.add(new AssertionError("acquired although the lock was held"));
            } catch (Throwable e) {
                outcome.add(e);
            }
        }, "blocked-waiter");
        blocked.start();
        awaitTrue("a watchdog runs while the waiter is blocked in the lock wait", SLACK,
                () -> threadsNamed(WATCHDOG) == 1);
        blocked.interrupt();
        blocked.join(SLACK.toMillis());
        assertThat(blocked.isAlive()).isFalse();
        assertThat(outcome).singleElement().isInstanceOf(InterruptedException.class);
        awaitTrue("the watchdog ends once no wait is blocked", SLACK, () -> threadsNamed(WATCHDOG) == 0);
        held.unlock();
        leased.unlock();
    }

    private static final String WATCHDOG = "locksmith-jdbc-lock-wait-watchdog";

    private static long threadsNamed(String name) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(thread -> thread.isAlive() && thread.getName().equals(name)).count();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("lease mode: a holder cut off from the database keeps the lock until its lease ends, then loses it")
    void cutOffLeaseHolderKeepsTheLockForItsLease(JdbcTarget target) throws Exception {
        TrackedDataSource tracked = new TrackedDataSource(target);
        AtomicBoolean cut = new AtomicBoolean();
        List<String> lost = new CopyOnWriteArrayList<>();
        LockOptions holderOptions = options().listener((name, why) -> lost.add(name)).build();
        HikariDataSource pool = target.pool(holderOptions.operationTimeout(), 4);
        DataSource counted = tracked.wrap(pool);
        DataSource severable = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && cut.get()) {
                        throw new SQLException("network cut by the test", "08S01");
                    }
                    return method.invoke(counted, args);
                });
        LockProvider holder = closing(JdbcLockProviders.builder(severable).table(TABLE).options(holderOptions)
                .closing(pool, target.jdbcUrl()).build());
        DistributedLock held = holder.getLock("cut-off");
        DistributedLock wanted = provider(target, Mode.LEASE, options().build()).getLock("cut-off");
        held.lock();

        cut.set(true);
        long cutAt = System.nanoTime();
        tracked.dropConnections();
        assertThat(wanted.tryLock()).as("tryLock() right after the holder was cut off").isFalse();
        awaitTrue("another provider acquires once the cut-off holder's lease ended",
                holderOptions.leaseTime().plus(SLACK), wanted::tryLock);
        Duration waited = Duration.ofNanos(System.nanoTime() - cutAt);
        // the last renewal before the cut was at most one renew interval (plus its round trip) earlier
        Duration earliest = holderOptions.leaseTime().minus(holderOptions.renewInterval()).minusMillis(200);
        assertThat(waited).as("time from the cut until another provider got the lock").isGreaterThanOrEqualTo(earliest);
        awaitTrue("the cut-off holder hears its hold was lost", holderOptions.leaseTime().plus(SLACK),
                () -> lost.contains("cut-off"));
        wanted.unlock();
        cut.set(false);
    }

    // ---------------------------------------------------------------- unreachable database

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a database nobody listens for fails lock calls with LockBackendException, never a hang")
    void unreachableDatabaseFailsFast(JdbcTarget target) throws Exception {
        int port = closedPort();
        String url = switch (target) {
            case H2 -> "jdbc:h2:tcp://127.0.0.1:" + port + "/mem:nowhere";
            case MARIADB -> "jdbc:mariadb://127.0.0.1:" + port + "/test?user=root";
            case MYSQL_CONNECTOR_J -> "jdbc:mysql://127.0.0.1:" + port + "/test?user=root";
            case POSTGRES -> "jdbc:postgresql://127.0.0.1:" + port + "/test?user=postgres";
            default -> throw new IllegalArgumentException("not a database kind of this test: " + target);
        };
        Duration timeout = Duration.ofMillis(500);
        for (Mode mode : Mode.values()) {
            LockProvider provider = closing(LockProvider.open(url + (target == JdbcTarget.H2 ? ";" : "&")
                    + "locksmith.mode=" + mode.name().toLowerCase(), options().operationTimeout(timeout).build()));
            DistributedLock lock = provider.getLock("unreachable");
            for (String call : List.of("tryLock()", "lock()", "isLocked()")) {
                long start = System.nanoTime();
                assertThatThrownBy(() -> {
                    switch (call) {
                        case "tryLock()" -> lock.tryLock();
                        case "lock()" -> lock.lock();
                        default -> lock.isLocked();
                    }
                }).as("%s %s", mode, call).isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("127.0.0.1:" + port);
                assertThat(Duration.ofNanos(System.nanoTime() - start)).as("%s %s took", mode, call)
                        .isLessThanOrEqualTo(timeout.plus(SLACK));
                assertThat(lock.getHoldCount()).isZero();
            }
        }
    }

    // ---------------------------------------------------------------- the URI form

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("jdbc: URIs: Locksmith's parameters choose mode and table and never reach the driver")
    void uriForm(JdbcTarget target) throws Exception {
        String table = "locksmith_uri_test";
        LockOptions options = options().build();
        LockProvider session = closing(LockProvider.open(uri(target, "locksmith.mode=session&locksmith.table=" + table
                + "&locksmith.poolSize=4"), options));
        LockProvider lease = closing(LockProvider.open(uri(target, "locksmith.table=" + table), options));
        assertThat(session.backend()).contains("session mode").contains(table).doesNotContain("password");
        assertThat(lease.backend()).contains("lease mode").contains(table);
        DistributedLock a = session.getLock("uri");
        assertThat(a.tryLock()).isTrue();
        DistributedLock b = closing(LockProvider.open(uri(target, "locksmith.mode=SESSION&locksmith.table=" + table),
                options)).getLock("uri");
        assertThat(b.tryLock()).as("another session-mode provider's tryLock()").isFalse();
        a.unlock();
        assertThat(b.tryLock()).isTrue();
        b.unlock();
        DistributedLock c = lease.getLock("uri-lease");
        c.lock();
        assertThat(c.fencingToken()).isPositive();
        c.unlock();

        assertThatThrownBy(() -> LockProvider.open(uri(target, "locksmith.mood=lease"), options))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("locksmith.mood");
        assertThatThrownBy(() -> LockProvider.open(uri(target, "locksmith.mode=exclusive"), options))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("exclusive");
        assertThatThrownBy(() -> LockProvider.open(uri(target, "locksmith.table=bad-name"), options))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("jdbc:mysql: through MySQL Connector/J and jdbc:mariadb: share the same locks on MariaDB")
    void mysqlConnectorJ() throws Exception {
        JdbcTarget target = JdbcTarget.MARIADB;
        String mariadb = uri(target, "");
        String mysql = mariadb.replaceFirst("^jdbc:mariadb:", "jdbc:mysql:");
        LockOptions options = options().build();
        for (String mode : List.of("lease", "session")) {
            DistributedLock viaMysql = closing(LockProvider.open(mysql + "&locksmith.mode=" + mode, options))
                    .getLock("connector-j");
            DistributedLock viaMariadb = closing(LockProvider.open(mariadb + "&locksmith.mode=" + mode, options))
                    .getLock("connector-j");
            viaMysql.lock();
            long token = viaMysql.fencingToken();
            assertThat(viaMariadb.tryLock()).as("%s: MariaDB driver while Connector/J holds", mode).isFalse();
            viaMysql.unlock();
            assertThat(viaMariadb.tryLock()).isTrue();
            assertThat(viaMariadb.fencingToken()).isGreaterThan(token);
            viaMariadb.unlock();
        }
        assertThatThrownBy(() -> LockProvider.open("jdbc:oracle:thin:@//db:1521/app", options))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jdbc:mysql:");
    }

    @Test
    @DisplayName("the Connector/J target's pools connect through MySQL Connector/J, not the MariaDB driver")
    void connectorJTargetUsesConnectorJ() throws SQLException {
        JdbcTarget target = JdbcTarget.MYSQL_CONNECTOR_J;
        assertThat(target.jdbcUrl()).startsWith("jdbc:mysql:");
        try (HikariDataSource pool = target.pool(Duration.ofSeconds(5), 1);
             Connection connection = pool.getConnection()) {
            assertThat(connection.unwrap(Connection.class).getClass().getName()).startsWith("com.mysql.cj.jdbc.");
            assertThat(connection.getMetaData().getDriverName()).isEqualTo("MySQL Connector/J");
            assertThat(JdbcTarget.dialect(connection)).isSameAs(Dialect.MARIADB);
        }
    }

    // ---------------------------------------------------------------- the table

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("six providers creating a missing table at once all work")
    void concurrentTableCreation(JdbcTarget target) throws Exception {
        String table = "locksmith_create_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
        ExecutorService starters = Executors.newFixedThreadPool(6);
        try {
            List<Future<Long>> tokens = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                Mode mode = i % 2 == 0 ? Mode.LEASE : Mode.SESSION;
                String name = "first-use-" + i;
                HikariDataSource pool = closing(target.pool(Duration.ofSeconds(5), 2));
                LockProvider provider = closing(JdbcLockProviders.builder(pool).mode(mode).table(table)
                        .options(options().operationTimeout(Duration.ofSeconds(5)).build()).build());
                tokens.add(starters.submit(() -> {
                    DistributedLock lock = provider.getLock(name);
                    lock.lock();
                    long token = lock.fencingToken();
                    lock.unlock();
                    return token;
                }));
            }
            for (Future<Long> token : tokens) {
                assertThat(token.get(60, TimeUnit.SECONDS)).isPositive();
            }
        } finally {
            starters.shutdownNow();
            closeEverything();
            closeAfter.clear();
            try (Connection connection = target.admin().getConnection();
                 Statement drop = connection.createStatement()) {
                drop.execute("DROP TABLE " + table);
                drop.execute(JdbcTarget.dropTokenCounter(connection, table));
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("deleteIdleRows removes idle rows only, and tokens keep growing after a name's row was deleted")
    void deleteIdleRows(JdbcTarget target) throws Exception {
        LockProvider lease = provider(target, Mode.LEASE, options().build());
        LockProvider session = provider(target, Mode.SESSION, options().build());
        DistributedLock idle = lease.getLock("idle");
        for (int i = 0; i < 3; i++) {
            idle.lock();
            idle.unlock();
        }
        idle.lock();
        long lastToken = idle.fencingToken();
        idle.unlock();
        DistributedLock heldLease = lease.getLock("held-lease");
        heldLease.lock();
        DistributedLock heldSession = session.getLock("held-session");
        heldSession.lock();
        // a lock only read, whose row no writer ever touched, and the row a dead reader left behind
        DistributedLock heldRead = lease.getReadWriteLock("held-read").readLock();
        heldRead.lock();
        try (Connection connection = target.admin().getConnection();
             PreparedStatement insert = connection.prepareStatement("INSERT INTO " + TABLE + "_readers (lock_key,"
                     + " owner, expires_at) VALUES (?, 'dead.1', " + JdbcTarget.dialect(connection).nowMinusMicros()
                     + ")")) {
            insert.setBytes(1, LockTable.key(namespace, "held-read"));
            insert.setLong(2, 1_000_000);
            insert.executeUpdate();
        }
        // a semaphore's permit count, kept in a row of its own that nobody ever holds
        lease.setSemaphorePermits("counted", 3);
        Thread.sleep(300);

        int deleted = JdbcLockProviders.deleteIdleRows(target.admin(), TABLE, Duration.ofMillis(200));
        assertThat(deleted).as("rows deleted").isGreaterThanOrEqualTo(2);
        assertThat(rows(target).keySet()).as("rows left in the namespace")
                .containsExactlyInAnyOrder("held-lease", "held-session", "held-read", "counted");
        assertThat(session.semaphorePermits("counted")).as("the permit count after the clean-up").hasValue(3);
        try (Connection connection = target.admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT owner FROM " + TABLE + "_readers"
                     + " WHERE lock_key = ?")) {
            select.setBytes(1, LockTable.key(namespace, "held-read"));
            try (ResultSet readers = select.executeQuery()) {
                assertThat(readers.next()).as("the live read hold's row is kept").isTrue();
                assertThat(readers.getString(1)).as("the dead reader's row is gone").isNotEqualTo("dead.1");
                assertThat(readers.next()).isFalse();
            }
        }
        heldRead.unlock();
        assertThat(session.getLock("held-session").isHeldByCurrentThread()).isTrue();
        assertThat(provider(target, Mode.SESSION, options().build()).getLock("held-session").tryLock())
                .as("the session lock is still held").isFalse();

        idle.lock();
        assertThat(idle.fencingToken()).as("token of the first hold after the row was deleted")
                .isGreaterThan(lastToken);
        idle.unlock();
        heldLease.unlock();
        heldSession.unlock();
        assertThatThrownBy(() -> JdbcLockProviders.deleteIdleRows(target.admin(), TABLE, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("H2: an interrupt that ends a row-lock wait reaches lockInterruptibly() as InterruptedException")
    void h2RowLockWaitKeepsTheInterrupt() throws Exception {
        LockProvider provider = provider(JdbcTarget.H2, Mode.LEASE, options().build());
        DistributedLock lock = provider.getLock("h2-interrupt");
        lock.lock(); // creates the row
        lock.unlock();
        try (Connection admin = JdbcTarget.H2.admin().getConnection()) {
            admin.setAutoCommit(false);
            try (PreparedStatement hold = admin.prepareStatement("UPDATE " + TABLE + " SET owner = owner"
                    + " WHERE namespace = ? AND name = ?")) {
                hold.setString(1, namespace);
                hold.setString(2, "h2-interrupt");
                assertThat(hold.executeUpdate()).isEqualTo(1); // the row lock stays until rollback
            }
            List<Throwable> outcome = new CopyOnWriteArrayList<>();
            Thread waiter = new Thread(() -> {
                try {
                    lock.lockInterruptibly();
                    lock.unlock();
                    outcome.add(new AssertionError("acquired although the row was locked"));
                } catch (Throwable e) {
                    outcome.add(e);
                }
            }, "h2-waiter");
            waiter.start();
            awaitTrue("the waiter waits for H2's row lock", SLACK, () -> isInH2LockWait(waiter));
            waiter.interrupt();
            waiter.join(SLACK.toMillis());
            admin.rollback();
            assertThat(waiter.isAlive()).isFalse();
            assertThat(outcome).singleElement().isInstanceOf(InterruptedException.class);
        }
        assertThat(lock.tryLock()).isTrue(); // nothing was left held
        lock.unlock();
    }

    private static boolean isInH2LockWait(Thread thread) {
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals("org.h2.mvstore.tx.Transaction")
                    && frame.getMethodName().equals("waitForThisToEnd")) {
                return true;
            }
        }
        return false;
    }

    @Test
    @DisplayName("one row per distinct name, however often it is locked")
    void rowCountIsBoundedByNames() throws Exception {
        LockProvider provider = provider(JdbcTarget.H2, Mode.LEASE, options().build());
        for (int i = 0; i < 20; i++) {
            DistributedLock lock = provider.getLock("bounded-" + (i % 4));
            lock.lock();
            lock.unlock();
        }
        assertThat(rows(JdbcTarget.H2)).hasSize(4);
    }

    @Test
    @DisplayName("docs/jdbc.md reproduces the DDL shipped in the jar, and the upgrade's ALTER TABLE, for every dialect")
    void docsShowTheShippedDdl() throws IOException {
        String docs = Files.readString(Path.of("..", "docs", "jdbc.md"));
        for (Dialect dialect : Set.of(Dialect.MYSQL, Dialect.POSTGRESQL, Dialect.H2)) {
            for (String statement : dialect.ddl("locksmith_locks")) {
                assertThat(docs).as("docs/jdbc.md contains the %s DDL", dialect).contains(statement);
            }
            assertThat(docs).as("docs/jdbc.md contains the %s upgrade", dialect)
                    .contains(dialect.addClaimColumns("locksmith_locks"))
                    .contains(dialect.addReadersColumn("locksmith_locks"));
        }
    }
}
