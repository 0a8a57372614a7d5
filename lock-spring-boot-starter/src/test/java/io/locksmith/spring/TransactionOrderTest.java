package io.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.LockProvider;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * {@code @Locked} with {@code @Transactional} on the same method, on real PostgreSQL, the provider built from the
 * application's DataSource: another instance must not find the lock free before the method's transaction has
 * committed. The proof is taken at the commit itself: a synchronization asks another instance for the lock at
 * {@code beforeCommit} and {@code afterCommit}.
 */
class TransactionOrderTest {

    private static HikariDataSource otherPool;

    @BeforeAll
    static void createTable() throws Exception {
        otherPool = Fixtures.postgresPool();
        try (Connection c = otherPool.getConnection(); Statement s = c.createStatement()) {
            s.execute("create table if not exists starter_orders (id bigint primary key, token bigint not null)");
        }
    }

    @AfterAll
    static void closePool() {
        otherPool.close();
    }

    @Test
    void theLockIsHeldUntilTheTransactionHasCommitted() {
        try (HikariDataSource pool = Fixtures.postgresPool()) {
            Fixtures.application()
                .withBean(DataSource.class, () -> pool)
                .withUserConfiguration(TransactionConfig.class)
                .run(context -> {
                    LockProvider ours = context.getBean(LockProvider.class);
                    assertThat(ours.backend()).as("built from the DataSource, lease mode").contains("[lease mode]");
                    try (LockProvider other = Fixtures.otherJdbcInstance(ours, otherPool)) {
                        Orders orders = context.getBean(Orders.class);
                        long id = System.nanoTime();
                        Orders.Seen seen = orders.place(id, other);
                        assertThat(seen.freeBeforeCommit).as("another instance got the lock before the commit")
                                .isFalse();
                        assertThat(seen.freeAfterCommit).as("another instance got the lock after the commit but"
                                + " before the method returned").isFalse();
                        assertThat(other.getLock("order:" + id).tryLock()).as("free once the call returned").isTrue();
                        other.getLock("order:" + id).unlock();
                        assertThat(committedToken(id)).isEqualTo(seen.token);
                    }
                });
        }
    }

    @Test
    void withTheTransactionOutsideTheLockTheCommitComesAfterTheRelease() {
        // the check above can fail: with the transaction advice outermost, another instance gets the lock first
        try (HikariDataSource pool = Fixtures.postgresPool()) {
            Fixtures.application()
                .withBean(DataSource.class, () -> pool)
                .withUserConfiguration(TransactionOutsideConfig.class)
                .run(context -> {
                    try (LockProvider other = Fixtures.otherJdbcInstance(context.getBean(LockProvider.class),
                            otherPool)) {
                        Orders.Seen seen = context.getBean(Orders.class).place(System.nanoTime(), other);
                        assertThat(seen.freeBeforeCommit).isTrue();
                    }
                });
        }
    }

    private static long committedToken(long id) throws Exception {
        try (Connection c = otherPool.getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("select token from starter_orders where id = " + id)) {
            assertThat(rs.next()).as("the order was committed").isTrue();
            return rs.getLong(1);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class TransactionConfig {
        @Bean
        PlatformTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        Orders orders(DataSource dataSource) {
            return new Orders(new JdbcTemplate(dataSource));
        }
    }

    /** The transaction advice made outermost (order 0), the wrong way round on purpose. */
    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement(order = 0)
    static class TransactionOutsideConfig {
        @Bean
        PlatformTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        Orders orders(DataSource dataSource) {
            return new Orders(new JdbcTemplate(dataSource));
        }
    }

    /** Places orders, once per id, as an idempotent order submission does. */
    public static class Orders {
        private final JdbcTemplate jdbc;

        public Orders(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        /** What the other instance found while this call's transaction committed. */
        public static final class Seen {
            volatile long token;
            volatile boolean freeBeforeCommit;
            volatile boolean freeAfterCommit;
        }

        @Locked(name = "'order:' + #id")
        @Transactional
        public Seen place(long id, LockProvider other) {
            Seen seen = new Seen();
            seen.token = CurrentLock.fencingToken();
            jdbc.update("insert into starter_orders (id, token) values (?, ?)", id, seen.token);
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void beforeCommit(boolean readOnly) {
                    seen.freeBeforeCommit = tryAndRelease(other, id);
                }

                @Override
                public void afterCommit() {
                    seen.freeAfterCommit = tryAndRelease(other, id);
                }
            });
            return seen;
        }

        private static boolean tryAndRelease(LockProvider other, long id) {
            var lock = other.getLock("order:" + id);
            if (lock.tryLock()) {
                lock.unlock();
                return true;
            }
            return false;
        }
    }
}
