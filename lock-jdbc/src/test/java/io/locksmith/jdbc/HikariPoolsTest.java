package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
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
}
