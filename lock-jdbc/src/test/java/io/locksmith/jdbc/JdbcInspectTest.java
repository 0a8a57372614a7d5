package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockInfo;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link LockProvider#inspect} and {@link LockProvider#forceRelease} on every database in both modes, as an
 * operator's provider (another process) sees and frees a lock an application holds.
 */
class JdbcInspectTest {

    private static final Duration SLACK = Duration.ofSeconds(5);
    private static final String TABLE = "locksmith_inspect_test";

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final List<GrantedHolds> sessions = new CopyOnWriteArrayList<>();
    private final String namespace = "it" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
    }

    static Stream<Arguments> targetsAndModes() {
        List<Arguments> all = new ArrayList<>();
        for (JdbcTarget target : JdbcTarget.BACKENDS) {
            for (Mode mode : Mode.values()) {
                all.add(Arguments.of(target, mode));
            }
        }
        return all.stream();
    }

    // ---------------------------------------------------------------- helpers

    private LockOptions.Builder options() {
        return LockOptions.builder()
                .namespace(namespace)
                .leaseTime(Duration.ofSeconds(3))
                .operationTimeout(Duration.ofSeconds(2))
                .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100));
    }

    private LockProvider provider(JdbcTarget target, Mode mode, String table, LockOptions options) {
        HikariDataSource pool = target.pool(options.operationTimeout(), 6);
        LockStore<?> store = JdbcLockProviders.builder(pool).mode(mode).table(table).options(options)
                .closing(pool, target.jdbcUrl()).buildStore();
        GrantedHolds session = GrantedHolds.wrap(store, options.namespace());
        if (session != null) {
            sessions.add(session);
            store = session;
        }
        LockProvider provider = LockStores.newProvider(store, options);
        closeAfter.add(provider);
        return provider;
    }

    private LockProvider provider(JdbcTarget target, Mode mode) {
        return provider(target, mode, TABLE, options().build());
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

    /** Whether the database shows session-mode holders' client id and token (all but PostgreSQL). */
    private static boolean showsSessionRecord(JdbcTarget target) {
        return target != JdbcTarget.POSTGRES;
    }

    /** The server id of the connection whose transaction holds {@code name} for a session provider of this test. */
    private long holderConnectionId(JdbcTarget target, String name) throws SQLException {
        for (GrantedHolds store : sessions) {
            Connection connection = store.connectionOf(namespace, name);
            if (connection != null) {
                return target.connectionId(connection);
            }
        }
        throw new IllegalStateException("no session provider of this test holds '" + name + "'");
    }

    /**
     * What {@code inspector}'s inspect must say of a hold of {@code holder}'s with {@code token}, in each dialect and
     * mode.
     */
    private void assertHeld(LockProvider inspector, JdbcTarget target, Mode mode, LockProvider holder, String name,
            long token, Instant before) throws SQLException {
        LockInfo info = inspector.inspect(name);
        assertThat(info.name()).isEqualTo(name);
        assertThat(info.isLocked()).as("isLocked() of %s", info).isTrue();
        if (mode == Mode.SESSION && !showsSessionRecord(target)) {
            // PostgreSQL shows no session another one's uncommitted writes: the holder is the backend holding the row
            assertThat(info.owner()).contains("backend pid " + holderConnectionId(target, name));
            assertThat(info.fencingToken()).isEmpty();
            assertThat(info.acquiredAt()).isEmpty();
            assertThat(info.leaseRemaining()).isEmpty();
            return;
        }
        assertThat(info.owner()).hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
        assertThat(info.fencingToken()).hasValue(token);
        // the database clock against this machine's: the same host, so only rounding and a little drift apart
        assertThat(info.acquiredAt()).hasValueSatisfying(at -> assertThat(at)
                .isBetween(before.minusSeconds(60), Instant.now().plusSeconds(60)));
        if (mode == Mode.LEASE) {
            assertThat(info.leaseRemaining()).hasValueSatisfying(left -> assertThat(left).isPositive()
                    .isLessThanOrEqualTo(holder.options().leaseTime()));
        } else if (inspector == holder) {
            assertThat(info.leaseRemaining()).as("a session hold's lease lives in its holder, which knows it")
                    .hasValueSatisfying(left -> assertThat(left).isPositive()
                            .isLessThanOrEqualTo(holder.options().leaseTime()));
        } else {
            assertThat(info.leaseRemaining()).as("a session hold's lease lives in its holder").isEmpty();
        }
    }

    // ---------------------------------------------------------------- inspect

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("inspect: free before first use, held with owner and token, free with the last token after unlock")
    void inspectFollowsTheLock(JdbcTarget target, Mode mode) throws Exception {
        LockProvider app = provider(target, mode);
        LockProvider operator = provider(target, mode);

        LockInfo unused = operator.inspect("job");
        assertThat(unused.isLocked()).isFalse();
        assertThat(unused.name()).isEqualTo("job");
        assertThat(unused.owner()).isEmpty();
        assertThat(unused.fencingToken()).as("token of a name never locked").isEmpty();

        DistributedLock lock = app.getLock("job");
        Instant before = Instant.now();
        lock.lock();
        long first = lock.fencingToken();
        assertHeld(operator, target, mode, app, "job", first, before);
        assertHeld(app, target, mode, app, "job", first, before);

        lock.unlock();
        LockInfo released = operator.inspect("job");
        assertThat(released.isLocked()).as("after unlock: %s", released).isFalse();
        assertThat(released.owner()).isEmpty();
        assertThat(released.acquiredAt()).isEmpty();
        assertThat(released.leaseRemaining()).isEmpty();
        if (mode == Mode.LEASE) {
            assertThat(released.fencingToken()).as("the last token issued").hasValue(first);
        } else {
            assertThat(released.fencingToken()).as("session tokens come from one counter for all names").isEmpty();
        }

        DistributedLock again = operator.getLock("job");
        before = Instant.now();
        again.lock();
        long second = again.fencingToken();
        assertThat(second).isGreaterThan(first);
        assertHeld(app, target, mode, operator, "job", second, before);
        again.unlock();
        assertThat(app.inspect("job").isLocked()).isFalse();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("inspect: a hold whose lease ended unrenewed is reported free")
    void expiredHoldIsFree(JdbcTarget target, Mode mode) throws Exception {
        LockProvider app = provider(target, mode);
        LockProvider operator = provider(target, mode);
        DistributedLock lock = app.getLock("short");
        // long enough that the first inspect surely comes before the end of the lease on a busy machine
        Duration lease = Duration.ofSeconds(2);
        assertThat(lock.tryLock(Duration.ZERO, lease)).isTrue();
        long token = lock.fencingToken();
        assertThat(operator.inspect("short").isLocked()).isTrue();

        awaitTrue("inspect reports the expired hold free", lease.plus(SLACK),
                () -> !operator.inspect("short").isLocked());
        LockInfo expired = operator.inspect("short");
        assertThat(expired.owner()).isEmpty();
        assertThat(expired.leaseRemaining()).isEmpty();
        if (mode == Mode.LEASE) {
            // the row still names the old owner: only the database clock says the hold ended
            assertThat(expired.fencingToken()).hasValue(token);
        }
        DistributedLock other = operator.getLock("short");
        assertThat(other.tryLock()).as("another provider's tryLock() after the lease ended").isTrue();
        assertThat(other.fencingToken()).isGreaterThan(token);
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
        other.unlock();
    }

    // ---------------------------------------------------------------- forceRelease

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("forceRelease: frees a held lock for another provider at once, and the holder loses it")
    void forceReleaseTakesTheLockFromItsHolder(JdbcTarget target, Mode mode) throws Exception {
        List<String> lost = new CopyOnWriteArrayList<>();
        LockProvider app = provider(target, mode, TABLE, options().listener((name, why) -> lost.add(name)).build());
        LockProvider operator = provider(target, mode);
        LockProvider other = provider(target, mode);
        DistributedLock held = app.getLock("stuck");
        held.lock();
        long token = held.fencingToken();
        DistributedLock wanted = other.getLock("stuck");
        assertThat(wanted.tryLock()).as("another provider's tryLock() while held").isFalse();

        assertThat(operator.forceRelease("stuck")).as("forceRelease of a held lock").isTrue();

        assertThat(operator.inspect("stuck").isLocked()).as("inspect right after forceRelease").isFalse();
        assertThat(wanted.tryLock()).as("another provider's tryLock() right after forceRelease").isTrue();
        assertThat(wanted.fencingToken()).isGreaterThan(token);
        // the holder learns at its next renewal (every second with a 3 s lease)
        awaitTrue("the holder's listener hears of the loss", options().build().leaseTime().plus(SLACK),
                () -> lost.contains("stuck"));
        assertThat(held.isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(held::unlock).isInstanceOf(LockLostException.class);
        assertThat(wanted.isHeldByCurrentThread()).as("the new holder still holds after the loser's unlock()")
                .isTrue();
        assertThat(operator.inspect("stuck").isLocked()).isTrue();
        wanted.unlock();

        assertThat(operator.forceRelease("stuck")).as("forceRelease of a free lock").isFalse();
        assertThat(operator.forceRelease("never-used")).as("forceRelease of a name never locked").isFalse();
        assertThat(lost).containsExactly("stuck");
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("forceRelease: a provider waiting in lock() gets the lock")
    void forceReleaseHandsTheLockToAWaiter(JdbcTarget target, Mode mode) throws Exception {
        LockProvider app = provider(target, mode);
        LockProvider operator = provider(target, mode);
        LockProvider waiting = provider(target, mode);
        DistributedLock held = app.getLock("queued");
        held.lock();
        long token = held.fencingToken();
        DistributedLock wanted = waiting.getLock("queued");
        ExecutorService executor = Executors.newSingleThreadExecutor();
        try {
            Future<Long> waiter = executor.submit(() -> {
                if (!wanted.tryLock(30, TimeUnit.SECONDS)) {
                    return -1L;
                }
                long got = wanted.fencingToken();
                wanted.unlock();
                return got;
            });
            Thread.sleep(200); // let it start waiting; it gets the lock either way
            assertThat(waiter.isDone()).isFalse();
            assertThat(operator.forceRelease("queued")).isTrue();
            assertThat(waiter.get(30, TimeUnit.SECONDS)).as("the waiter's token").isGreaterThan(token);
        } finally {
            executor.shutdownNow();
        }
        assertThatThrownBy(held::unlock).isInstanceOf(LockLostException.class);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB"})
    @DisplayName("session mode on a table without the holder column: inspect works, forceRelease says what to add")
    void forceReleaseNeedsTheHolderColumn(JdbcTarget target) throws Exception {
        String table = "locksmith_noholder_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
        try (Connection connection = target.admin().getConnection();
             Statement ddl = connection.createStatement()) {
            for (String statement : JdbcTarget.dialect(connection).ddl(table)) {
                ddl.execute(statement);
            }
            ddl.execute("ALTER TABLE " + table + " DROP COLUMN holder");
        }
        try {
            LockOptions options = options().build();
            LockProvider app = provider(target, Mode.SESSION, table, options);
            LockProvider operator = provider(target, Mode.SESSION, table, options);
            DistributedLock lock = app.getLock("old-table");
            lock.lock();
            LockInfo info = operator.inspect("old-table");
            assertThat(info.owner()).hasValueSatisfying(owner -> assertThat(owner).startsWith(app.clientId() + "."));
            assertThat(info.fencingToken()).hasValue(lock.fencingToken());
            assertThatThrownBy(() -> operator.forceRelease("old-table"))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("'old-table'")
                    .hasMessageContaining("ALTER TABLE " + table + " ADD COLUMN holder BIGINT");
            assertThat(lock.isHeldByCurrentThread()).isTrue();
            lock.unlock();

            try (Connection connection = target.admin().getConnection();
                 Statement ddl = connection.createStatement()) {
                ddl.execute("ALTER TABLE " + table + " ADD COLUMN holder BIGINT");
            }
            LockProvider upgraded = provider(target, Mode.SESSION, table, options);
            DistributedLock again = provider(target, Mode.SESSION, table, options).getLock("old-table");
            again.lock();
            assertThat(upgraded.forceRelease("old-table")).as("forceRelease once the column exists").isTrue();
            assertThatThrownBy(again::unlock).isInstanceOf(LockLostException.class);
        } finally {
            closeEverything();
            closeAfter.clear();
            try (Connection connection = target.admin().getConnection();
                 Statement drop = connection.createStatement()) {
                drop.execute("DROP TABLE " + table);
                drop.execute((target == JdbcTarget.MARIADB ? "DROP TABLE " : "DROP SEQUENCE ") + table + "_token");
            }
        }
    }
}
