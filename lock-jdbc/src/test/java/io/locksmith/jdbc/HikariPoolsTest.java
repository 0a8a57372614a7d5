package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The pools of the {@code jdbc:} URI form state the transaction isolation instead of letting HikariCP detect it
 * (a detection cut short by a dying connection leaves the pool unusable); the stated level must be the one the
 * database would have given, so the lock statements run exactly as on a plain connection.
 */
@DisplayName("HikariCP pools of the jdbc: URI form")
class HikariPoolsTest {

    @ParameterizedTest(name = "{0}")
    @EnumSource(JdbcTarget.class)
    @DisplayName("state the database's own default isolation level")
    void statedIsolationIsTheDatabaseDefault(JdbcTarget target) throws SQLException {
        int databaseDefault;
        try (Connection plain = DriverManager.getConnection(target.jdbcUrl(), target.user(), target.password())) {
            databaseDefault = plain.getTransactionIsolation();
        }
        assertThat(HikariPools.config(target.jdbcUrl(), 1, Duration.ofSeconds(5)).getTransactionIsolation())
                .isEqualTo(HikariPools.defaultIsolation(target.jdbcUrl()));
        try (HikariDataSource pool = target.pool(Duration.ofSeconds(5), 1);
             Connection pooled = pool.getConnection()) {
            assertThat(pooled.getTransactionIsolation()).isEqualTo(databaseDefault);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"MARIADB", "MYSQL_CONNECTOR_J"})
    @DisplayName("on MariaDB Connector/J (and only there) a provider's lock statements are server-side prepared "
            + "statements, unless the URL says otherwise")
    void serverPreparedStatementsOnMariaDbConnectorJ(JdbcTarget target) throws SQLException {
        boolean mariaDbDriver = target.jdbcUrl().startsWith("jdbc:mariadb:");
        assertThat(HikariPools.serverPreparedStatements(target.jdbcUrl())).isEqualTo(mariaDbDriver);
        assertThat(HikariPools.serverPreparedStatements(target.jdbcUrl() + "&useServerPrepStmts=false")).isFalse();
        long before = statementsExecuted(target);
        String uri = target.jdbcUrl() + (target.jdbcUrl().contains("?") ? "&" : "?") + "user=" + target.user()
                + (target.password().isEmpty() ? "" : "&password=" + target.password());
        LockOptions options = LockOptions.builder().namespace("sps" + System.nanoTime()).build();
        try (LockProvider provider = LockProvider.open(uri, options)) {
            DistributedLock lock = provider.getLock("prepared");
            for (int i = 0; i < 10; i++) {
                lock.lock();
                lock.unlock();
            }
        }
        // the server counts executions of prepared statements for every client: others only add to it
        long executed = statementsExecuted(target) - before;
        if (mariaDbDriver) {
            assertThat(executed).as("prepared statements the server executed for 10 lock cycles")
                    .isGreaterThanOrEqualTo(20);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(JdbcTarget.class)
    @DisplayName("on PostgreSQL (and only there) connections come from PromptNotificationSocketFactory, unless the "
            + "URL names a socket factory of its own")
    void promptNotificationsOnPostgreSql(JdbcTarget target) throws SQLException {
        boolean postgres = target.jdbcUrl().startsWith("jdbc:postgresql:");
        Object factory = HikariPools.config(target.jdbcUrl(), 1, Duration.ofSeconds(5)).getDataSourceProperties()
                .get("socketFactory");
        assertThat(factory).isEqualTo(postgres ? PromptNotificationSocketFactory.class.getName() : null);
        String own = target.jdbcUrl() + (target.jdbcUrl().contains("?") ? "&" : "?")
                + "socketFactory=javax.net.DefaultSocketFactory";
        assertThat(HikariPools.promptNotifications(own)).isFalse();
        assertThat(HikariPools.config(own, 1, Duration.ofSeconds(5)).getDataSourceProperties())
                .doesNotContainKey("socketFactory");
        try (HikariDataSource pool = target.pool(Duration.ofSeconds(5), 1);
             Connection pooled = pool.getConnection();
             Statement select = pooled.createStatement()) {
            assertThat(select.execute("SELECT 1")).isTrue();
        }
    }

    /** The server's count of executions of server-side prepared statements, all clients together. */
    private static long statementsExecuted(JdbcTarget target) throws SQLException {
        try (Connection admin = target.admin().getConnection();
             Statement show = admin.createStatement();
             ResultSet row = show.executeQuery("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'")) {
            row.next();
            return row.getLong(2);
        }
    }
}
