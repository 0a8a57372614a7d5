package io.locksmith.tests.servers;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("DatabaseServer fixture: MariaDB/MySQL (local server)")
class MariaDbServerTest extends AbstractDatabaseServerTest {

    @Override
    Dialect dialect() {
        return Dialect.MARIADB;
    }

    @Override
    String expectedOrigin() {
        return "local MariaDB ";
    }

    @Override
    void createUser(Statement admin, String user) throws SQLException {
        admin.execute("CREATE USER '" + user + "'@'%'");
        admin.execute("GRANT ALL ON test.* TO '" + user + "'@'%'");
    }

    @Override
    void dropUser(Statement admin, String user) throws SQLException {
        admin.execute("DROP USER IF EXISTS '" + user + "'@'%'");
    }

    @Test
    @DisplayName("kills connections by application name where performance_schema is on, else says why it cannot")
    void killsNamedConnectionsOrExplains() throws SQLException {
        boolean performanceSchema;
        try (Connection connection = server.openConnection();
             Statement statement = connection.createStatement();
             ResultSet on = statement.executeQuery("SELECT @@performance_schema")) {
            on.next();
            performanceSchema = on.getInt(1) != 0;
        }
        if (performanceSchema) {
            assertKillsNamedConnections();
        } else {
            assertThatThrownBy(() -> server.killConnectionsNamed(unique))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("performance_schema OFF")
                    .hasMessageContaining("--performance-schema=ON")
                    .hasMessageNotContaining("\n");
        }
    }
}
