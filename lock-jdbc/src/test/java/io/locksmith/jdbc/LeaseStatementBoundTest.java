package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A lease-mode statement that the database keeps waiting (another session's open transaction holds the lock's
 * row: a DBA's {@code SELECT … FOR UPDATE}, a migration) fails the call within the operation timeout, on every
 * database, whether the statement is bounded by a query timeout or, on PostgreSQL, by the connection's network
 * timeout alone; and once the row is free, what the database may still have applied of the failed attempt is
 * given back, so that another provider gets the lock.
 */
@DisplayName("JDBC lease mode: a statement the database keeps waiting")
class LeaseStatementBoundTest {

    private static final String TABLE = "locksmith_bound_test";
    private static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration LEASE = Duration.ofSeconds(4);
    /** Far above the operation timeout: only a call that hangs misses it. */
    private static final Duration HANG = Duration.ofSeconds(30);

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final ExecutorService caller = Executors.newSingleThreadExecutor();
    private final String namespace = "sb" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        caller.shutdownNow();
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
    }

    private LockProvider provider(JdbcTarget target) {
        HikariDataSource pool = target.pool(OPERATION_TIMEOUT, 4);
        LockProvider provider = JdbcLockProviders.builder(pool).mode(Mode.LEASE).table(TABLE)
                .options(LockOptions.builder().namespace(namespace).operationTimeout(OPERATION_TIMEOUT)
                        .leaseTime(LEASE).build())
                .closing(pool, target.jdbcUrl()).build();
        closeAfter.add(provider);
        return provider;
    }

    @ParameterizedTest(name = "{0}")
    // MySQL Connector/J is not here yet: in one CI run of three its pool handed the next tryLock() a connection whose
    // socket was closed ("Communications link failure ... Socket is closed") after the timed-out attempt; the cause
    // (the driver's query-timeout task racing the socket timeout, both at the operation timeout) is open
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES"})
    @DisplayName("tryLock() fails within the operation timeout while another transaction holds the row, and the "
            + "lock is free for others once it ends")
    void rowLockedByAnotherTransaction(JdbcTarget target) throws Exception {
        DistributedLock lock = provider(target).getLock("row");
        assertThat(lock.tryLock()).as("the first tryLock(), which makes the row").isTrue();
        lock.unlock();
        try (Connection blocker = target.admin().getConnection()) {
            blocker.setAutoCommit(false);
            try (PreparedStatement select = blocker.prepareStatement("SELECT token FROM " + TABLE
                    + " WHERE lock_key = ? FOR UPDATE")) {
                select.setBytes(1, LockTable.key(namespace, "row"));
                try (ResultSet row = select.executeQuery()) {
                    assertThat(row.next()).as("the lock's row").isTrue();
                }
            }
            Future<Boolean> attempt = caller.submit(() -> lock.tryLock());
            assertThatThrownBy(() -> attempt.get(HANG.toMillis(), TimeUnit.MILLISECONDS))
                    .as("tryLock() while another transaction holds the row")
                    .hasCauseInstanceOf(LockBackendException.class);
            blocker.rollback();
        }
        // the database may apply the attempt once the row is free; the provider gives that hold back
        DistributedLock other = provider(target).getLock("row");
        long deadline = System.nanoTime() + LEASE.plus(HANG).toNanos();
        boolean taken = false;
        while (!taken && System.nanoTime() < deadline) {
            taken = other.tryLock();
            if (!taken) {
                Thread.sleep(50);
            }
        }
        assertThat(taken).as("another provider's tryLock() once the row is free").isTrue();
        other.unlock();
        assertThat(caller.submit(() -> {
            boolean again = lock.tryLock();
            if (again) {
                lock.unlock();
            }
            return again;
        }).get(HANG.toMillis(), TimeUnit.MILLISECONDS)).as("the first provider's tryLock() afterwards").isTrue();
    }
}
