package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockOptions;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Read holds through the store itself, step by step and without timing. Lease mode: a writer refused for readers
 * alone takes the lock's row past them and waits for them to leave, keeping new readers out; tokens order writes
 * after the reads before them; and a table of an earlier version gets what read holds need, or, with createTable
 * off, keeps its plain locks and refuses read holds naming the statements to run. Session mode: a read is granted in
 * a short transaction on the lock's row and then is a row of the readers' table with its own lease, holding no
 * connection; a writer that locks the row while reads live keeps it and waits for them to leave; every grant's
 * token exceeds those before it; a downgrade reads beside its own write; the readers' table alone is what it needs.
 * In both modes a writer that does not wait, or stops waiting, gives the row back.
 */
@DisplayName("JDBC read holds, lease and session modes")
class JdbcReadHoldTest {

    private static final String TABLE = "locksmith_read_test";
    private static final Duration LEASE = Duration.ofSeconds(60);
    /** The wake-up of an attempt whose caller will wait. */
    private static final Runnable WAITS = () -> { };
    private static final String NAME = "prices";

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "rh" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
        closeAfter.clear();
    }

    /** A store on a pool of its own of {@code poolSize} connections, as another process would have. */
    @SuppressWarnings("unchecked")
    private LockStore<Object> store(JdbcTarget target, Mode mode, String table, boolean createTable, int poolSize) {
        HikariDataSource pool = target.pool(Duration.ofSeconds(5), poolSize);
        LockStore<?> store = JdbcLockProviders.builder(pool).mode(mode).table(table).createTable(createTable)
                .options(LockOptions.builder().namespace(namespace).operationTimeout(Duration.ofSeconds(5)).build())
                .closing(pool, target.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return (LockStore<Object>) store;
    }

    private LockStore<Object> store(JdbcTarget target, Mode mode) {
        return store(target, mode, TABLE, true, 4);
    }

    /** The databases of these tests, each in both modes. */
    static Stream<Arguments> targetsAndModes() {
        return Stream.of(JdbcTarget.H2, JdbcTarget.MARIADB, JdbcTarget.POSTGRES, JdbcTarget.MYSQL_CONNECTOR_J)
                .flatMap(target -> Stream.of(Arguments.of(target, Mode.LEASE), Arguments.of(target, Mode.SESSION)));
    }

    private static long acquired(LockStore<Object> store, Object hold, Runnable wakeUp) {
        Acquisition answer = store.tryAcquire(hold, LEASE, Duration.ZERO, wakeUp);
        assertThat(answer.isAcquired()).as("%s: %s", hold, answer).isTrue();
        return answer.fencingToken();
    }

    private static void busy(LockStore<Object> store, Object hold, Runnable wakeUp) {
        Acquisition answer = store.tryAcquire(hold, LEASE, Duration.ZERO, wakeUp);
        assertThat(answer.isAcquired()).as("%s: %s", hold, answer).isFalse();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("lease mode: a waiting writer takes the row past the readers, keeps new readers out, and writes once "
            + "they left")
    void waitingWriterHoldsTheRowPastReaders(JdbcTarget target) throws SQLException {
        LockStore<Object> readers = store(target, Mode.LEASE);
        LockStore<Object> writers = store(target, Mode.LEASE);
        Object first = readers.newSharedHold(NAME, "r.1", null);
        Object second = readers.newSharedHold(NAME, "r.2", null);
        long readToken = acquired(readers, first, null);
        assertThat(acquired(readers, second, null)).as("readers share the last write's token").isEqualTo(readToken);

        Object writer = writers.newHold(NAME, "w.1");
        busy(writers, writer, WAITS);
        assertThat(readers.isLocked(NAME)).isTrue();
        Object late = readers.newSharedHold(NAME, "r.3", null);
        busy(readers, late, null);
        assertThat(readers.release(first)).isTrue();
        busy(writers, writer, WAITS); // one reader is left
        assertThat(readers.release(second)).isTrue();
        long writeToken = acquired(writers, writer, WAITS);
        assertThat(writeToken).as("the write's token against the reads before it").isGreaterThan(readToken);
        assertThat(readersMayLive(target)).as("the writer that found no reader left cleared readers_until").isFalse();
        busy(readers, late, null);

        assertThat(writers.release(writer)).isTrue();
        assertThat(acquired(readers, late, null)).as("a read after the write").isEqualTo(writeToken);
        Object next = writers.newHold(NAME, "w.2");
        busy(writers, next, null);
        assertThat(readers.release(late)).isTrue();
        assertThat(acquired(writers, next, null)).as("the next write, on readers that all left")
                .isGreaterThan(writeToken);
        assertThat(writers.release(next)).isTrue();
        assertThat(readers.isLocked(NAME)).isFalse();
    }

    /** Whether the lock's row says read holds may live ({@code readers_until} set), read by the administrator. */
    private boolean readersMayLive(JdbcTarget target) throws SQLException {
        try (Connection connection = target.admin().getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT readers_until FROM " + TABLE
                     + " WHERE lock_key = ?")) {
            select.setBytes(1, LockTable.key(namespace, NAME));
            try (ResultSet row = select.executeQuery()) {
                assertThat(row.next()).as("the lock's row").isTrue();
                return row.getObject(1) != null;
            }
        }
    }

    @ParameterizedTest(name = "{0}, {1} mode")
    @MethodSource("targetsAndModes")
    @DisplayName("a writer that does not wait, or stops waiting, leaves the row to the readers")
    void writerThatStopsWaitingGivesTheRowBack(JdbcTarget target, Mode mode) {
        LockStore<Object> readers = store(target, mode);
        LockStore<Object> writers = store(target, mode);
        Object reading = readers.newSharedHold(NAME, "r.1", null);
        acquired(readers, reading, null);

        busy(writers, writers.newHold(NAME, "w.1"), null);
        Object beside = readers.newSharedHold(NAME, "r.2", null);
        acquired(readers, beside, null);

        Object waiting = writers.newHold(NAME, "w.2");
        busy(writers, waiting, WAITS);
        Object kept = readers.newSharedHold(NAME, "r.3", null);
        busy(readers, kept, null);
        writers.abandon(waiting);
        acquired(readers, kept, null);

        LockInfo info = readers.inspect(NAME);
        assertThat(info.isLocked()).isTrue();
        assertThat(info.owner()).hasValue("readers r.1, r.2, r.3");
        for (Object hold : List.of(reading, beside, kept)) {
            assertThat(readers.release(hold)).isTrue();
        }
        assertThat(readers.inspect(NAME).isLocked()).isFalse();
    }

    @ParameterizedTest(name = "{0}, {1} mode")
    @MethodSource("targetsAndModes")
    @DisplayName("a downgrade reads beside its own write with its token; a forced release frees writer and readers")
    void downgradeAndForcedRelease(JdbcTarget target, Mode mode) {
        LockStore<Object> store = store(target, mode);
        LockStore<Object> others = store(target, mode);
        Object write = store.newHold(NAME, "w.1");
        long token = acquired(store, write, null);
        busy(others, others.newSharedHold(NAME, "r.0", null), null);
        Object read = store.newSharedHold(NAME, "r.1", write);
        assertThat(acquired(store, read, null)).as("the downgrade reads with the write's token").isEqualTo(token);
        busy(others, others.newHold(NAME, "w.0"), null);
        assertThat(store.release(write)).isTrue();
        Object beside = others.newSharedHold(NAME, "r.2", null);
        long besideToken = acquired(others, beside, null);
        if (mode == Mode.LEASE) {
            assertThat(besideToken).as("a read carries the last write's token").isEqualTo(token);
        } else {
            assertThat(besideToken).as("a session-mode read's token, drawn after the write's").isGreaterThan(token);
        }
        busy(others, others.newHold(NAME, "w.3"), null);

        assertThat(others.forceRelease(NAME)).isTrue();
        assertThat(store.release(read)).as("a read hold the forced release ended").isFalse();
        assertThat(others.release(beside)).isFalse();
        Object next = others.newHold(NAME, "w.2");
        assertThat(acquired(others, next, null)).isGreaterThan(besideToken);
        assertThat(others.release(next)).isTrue();
        assertThat(others.forceRelease(NAME)).as("nothing left to free").isFalse();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("lease mode: a table of an earlier version gets what read holds need; with createTable off, plain "
            + "locks only")
    void tableOfAnEarlierVersion(JdbcTarget target) throws Exception {
        String table = "locksmith_read_upgrade_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
        try {
            try (Connection connection = target.admin().getConnection();
                 Statement ddl = connection.createStatement()) {
                for (String statement : JdbcTarget.dialect(connection).ddl(table)) {
                    ddl.execute(statement);
                }
            }
            target.dropReadHolds(table);
            LockStore<Object> unmanaged = store(target, Mode.LEASE, table, false, 4);
            Object plain = unmanaged.newHold(NAME, "x.1");
            acquired(unmanaged, plain, null);
            assertThat(unmanaged.release(plain)).isTrue();
            Object read = unmanaged.newSharedHold(NAME, "x.2", null);
            assertThatThrownBy(() -> unmanaged.tryAcquire(read, LEASE, Duration.ZERO, null))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("keeps no read holds").hasMessageContaining("createTable is off")
                    .hasMessageContaining("ADD COLUMN readers_until").hasMessageContaining(table + "_readers");
            assertThat(unmanaged.release(read)).as("nothing of the refused read was written").isFalse();

            LockStore<Object> upgraded = store(target, Mode.LEASE, table, true, 4);
            Object reading = upgraded.newSharedHold(NAME, "y.1", null);
            acquired(upgraded, reading, null);
            busy(upgraded, upgraded.newHold(NAME, "y.2"), null);
            assertThat(upgraded.release(reading)).isTrue();
        } finally {
            closeEverything();
            target.dropTable(table);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode: a waiting writer keeps the row past the readers, keeps new readers out, and writes "
            + "once they left; every grant's token exceeds the grants before it")
    void waitingWriterKeepsTheRowPastReaders(JdbcTarget target) {
        LockStore<Object> readers = store(target, Mode.SESSION);
        LockStore<Object> writers = store(target, Mode.SESSION);
        Object first = readers.newSharedHold(NAME, "r.1", null);
        Object second = readers.newSharedHold(NAME, "r.2", null);
        long firstToken = acquired(readers, first, null);
        long secondToken = acquired(readers, second, null);
        assertThat(secondToken).as("the second read's token").isGreaterThan(firstToken);

        Object writer = writers.newHold(NAME, "w.1");
        busy(writers, writer, WAITS);
        assertThat(readers.isLocked(NAME)).isTrue();
        Object late = readers.newSharedHold(NAME, "r.3", null);
        busy(readers, late, null);
        assertThat(readers.release(first)).isTrue();
        busy(writers, writer, WAITS); // one reader is left
        busy(readers, late, null);
        assertThat(readers.release(second)).isTrue();
        long writeToken = acquired(writers, writer, WAITS);
        assertThat(writeToken).as("the write's token against the reads before it").isGreaterThan(secondToken);
        busy(readers, late, null);

        assertThat(writers.release(writer)).isTrue();
        long lateToken = acquired(readers, late, null);
        assertThat(lateToken).as("a read after the write").isGreaterThan(writeToken);
        Object next = writers.newHold(NAME, "w.2");
        busy(writers, next, WAITS);
        assertThat(readers.release(late)).isTrue();
        assertThat(acquired(writers, next, WAITS)).as("the next write, on readers that all left")
                .isGreaterThan(lateToken);
        assertThat(writers.release(next)).isTrue();
        assertThat(readers.isLocked(NAME)).isFalse();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode: read holds keep no connection: six at once through a pool of two, then a write "
            + "once they left")
    void readsKeepNoConnection(JdbcTarget target) {
        LockStore<Object> store = store(target, Mode.SESSION, TABLE, true, 2);
        List<Object> reads = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Object read = store.newSharedHold(NAME, "r." + i, null);
            acquired(store, read, null);
            reads.add(read);
        }
        busy(store, store.newHold(NAME, "w.0"), null);
        for (Object read : reads) {
            assertThat(store.release(read)).isTrue();
        }
        Object write = store.newHold(NAME, "w.1");
        acquired(store, write, null);
        assertThat(store.release(write)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode: a table without the readers' table: with createTable off plain locks only, with it "
            + "on the table is created")
    void tableWithoutReadersTable(JdbcTarget target) throws Exception {
        String table = "locksmith_sread_upgrade_"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
        try {
            try (Connection connection = target.admin().getConnection();
                 Statement ddl = connection.createStatement()) {
                for (String statement : JdbcTarget.dialect(connection).ddl(table)) {
                    ddl.execute(statement);
                }
                ddl.execute("DROP TABLE " + table + "_readers");
            }
            LockStore<Object> unmanaged = store(target, Mode.SESSION, table, false, 4);
            Object plain = unmanaged.newHold(NAME, "x.1");
            acquired(unmanaged, plain, null);
            assertThat(unmanaged.release(plain)).isTrue();
            Object read = unmanaged.newSharedHold(NAME, "x.2", null);
            assertThatThrownBy(() -> unmanaged.tryAcquire(read, LEASE, Duration.ZERO, null))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("keeps no read holds").hasMessageContaining("createTable is off")
                    .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + table + "_readers");
            assertThat(unmanaged.release(read)).as("nothing of the refused read was written").isFalse();

            LockStore<Object> upgraded = store(target, Mode.SESSION, table, true, 4);
            Object reading = upgraded.newSharedHold(NAME, "y.1", null);
            acquired(upgraded, reading, null);
            busy(upgraded, upgraded.newHold(NAME, "y.2"), null);
            assertThat(upgraded.release(reading)).isTrue();
        } finally {
            closeEverything();
            target.dropTable(table);
        }
    }
}
