package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.LockOptions;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.Acquisition;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Lease mode's commits on PostgreSQL: a grant waits for its WAL to reach disk and a release does not (see
 * {@link PostgreSqlDialect}), counted in the server's WAL statistics rather than timed; and a claim whose statement
 * waited for a release to commit answers from the row as the release left it. Every wait is for a condition,
 * bounded generously.
 */
@DisplayName("JDBC lease mode on PostgreSQL: what waits for the disk, and a claim that waited for a release")
class PostgresLeaseCommitTest {

    private static final JdbcTarget TARGET = JdbcTarget.POSTGRES;
    private static final String TABLE = "locksmith_commit_test";
    private static final Duration LEASE = Duration.ofSeconds(60);
    private static final Duration SLACK = Duration.ofSeconds(20);

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "cm" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
        closeAfter.clear();
    }

    private LeaseStore store(HikariDataSource pool) {
        LockOptions options = LockOptions.builder().namespace(namespace).operationTimeout(Duration.ofSeconds(5))
                .build();
        LeaseStore store = (LeaseStore) JdbcLockProviders.builder(pool).mode(Mode.LEASE).table(TABLE)
                .options(options).closing(pool, TARGET.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return store;
    }

    private static void cycle(LeaseStore store, String owner) {
        LeaseStore.LeaseHold hold = store.newHold("durable", owner);
        assertThat(store.tryAcquire(hold, LEASE, Duration.ZERO, null).isAcquired()).as("grant to %s", owner).isTrue();
        assertThat(store.release(hold)).as("release by %s", owner).isTrue();
    }

    /**
     * The server's count of WAL writes, after this connection's own statistics were flushed (a backend flushes
     * them when it goes idle, and at once after {@code pg_stat_force_next_flush()}).
     */
    private static long walWrites(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute("SELECT pg_stat_force_next_flush()");
            try (ResultSet row = statement.executeQuery("SELECT wal_write FROM pg_stat_wal")) {
                row.next();
                return row.getLong(1);
            }
        }
    }

    @Test
    @DisplayName("a grant's commit writes the WAL to disk, a release's does not; the pooled connection keeps "
            + "synchronous_commit on")
    void releasesDoNotWaitForTheDisk() throws Exception {
        // one connection: every statement of the store and the statistics' flush run in the same backend
        HikariDataSource pool = TARGET.pool(Duration.ofSeconds(5), 1);
        LeaseStore store = store(pool);
        cycle(store, "warm.1"); // creates the table and the row
        long before;
        try (Connection connection = pool.getConnection()) {
            before = walWrites(connection);
        }
        int cycles = 100;
        for (int i = 1; i <= cycles; i++) {
            cycle(store, "c." + i);
        }
        try (Connection connection = pool.getConnection()) {
            long writes = walWrites(connection) - before;
            // each grant's commit writes its WAL and waits for the flush; a release's commit leaves both to the
            // WAL writer or the next grant, so the releases add nearly nothing (both flushing: about 2 per cycle)
            assertThat(writes).as("WAL writes over %d lock cycles", cycles)
                    .isGreaterThanOrEqualTo(cycles / 2).isLessThan(cycles * 3 / 2);
            try (Statement statement = connection.createStatement();
                 ResultSet setting = statement.executeQuery("SHOW synchronous_commit")) {
                setting.next();
                assertThat(setting.getString(1)).as("synchronous_commit of the pooled connection afterwards")
                        .isEqualTo("on");
            }
        }
    }

    @Test
    @DisplayName("a claim that waited for a release's commit tells its waiter to look again at once, not to wait "
            + "out the ended hold's lease")
    void claimAfterAReleaseCommittedMeanwhile() throws Exception {
        LeaseStore holders = store(TARGET.pool(Duration.ofSeconds(5), 2));
        LeaseStore waiters = store(TARGET.pool(Duration.ofSeconds(5), 2));
        LeaseStore.LeaseHold held = holders.newHold("raced", "h.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        LeaseStore.LeaseHold waiting = waiters.newHold("raced", "w.1");
        Acquisition first = waiters.tryAcquire(waiting, LEASE, Duration.ZERO, () -> { });
        assertThat(first.isClaimed()).as("the waiter's first attempt claims: %s", first).isTrue();

        HikariDataSource pool = TARGET.pool(Duration.ofSeconds(5), 2);
        closeAfter.add(pool);
        LockTable table = new LockTable(pool, TABLE, false, true, Duration.ofSeconds(5), "test", null);
        byte[] key = LockTable.key(namespace, "raced");
        ExecutorService claimer = Executors.newSingleThreadExecutor();
        closeAfter.add(claimer::shutdownNow);
        try (Connection releaser = pool.getConnection()) {
            releaser.setAutoCommit(false);
            // the holder's release, not yet committed: it keeps the row locked
            try (PreparedStatement release = releaser.prepareStatement("UPDATE " + TABLE
                    + " SET owner = NULL, expires_at = now() WHERE lock_key = ? AND owner = ?")) {
                release.setBytes(1, key);
                release.setString(2, "h.1");
                assertThat(release.executeUpdate()).isEqualTo(1);
            }
            // the claim's snapshot still shows the hold; its update waits for the release's row lock
            Future<LockTable.Claim> claim = claimer.submit(() -> {
                Connection connection = table.borrow(table.timeout());
                try {
                    return table.claim(connection, key, "w.1", Long.MAX_VALUE, LEASE);
                } finally {
                    table.giveBack(connection);
                }
            });
            long deadline = System.nanoTime() + SLACK.toNanos();
            while (!claimWaitsForARowLock()) {
                assertThat(System.nanoTime() - deadline).as("the claim waits for the release's row lock").isNegative();
                assertThat(claim.isDone()).as("the claim finished before the release committed").isFalse();
                Thread.sleep(10);
            }
            releaser.commit();
            LockTable.Claim answer = claim.get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(answer.held()).as("the waiter still holds its claim").isTrue();
            assertThat(answer.retryAfter()).as("when to look again, on a row released before the claim applied")
                    .isEqualTo(Duration.ZERO);
        }
        Acquisition next = waiters.tryAcquire(waiting, LEASE, Duration.ZERO, () -> { });
        assertThat(next.isAcquired()).as("the claimant's next attempt: %s", next).isTrue();
        assertThat(waiters.release(waiting)).isTrue();
    }

    /** Whether a claim statement of this table waits for a row lock. */
    private static boolean claimWaitsForARowLock() throws SQLException {
        try (Connection admin = TARGET.admin().getConnection();
             PreparedStatement select = admin.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE"
                     + " wait_event_type = 'Lock' AND query LIKE ?")) {
            select.setString(1, "WITH claimed AS (UPDATE " + TABLE + " SET claim_token%");
            try (ResultSet row = select.executeQuery()) {
                row.next();
                return row.getLong(1) > 0;
            }
        }
    }
}
