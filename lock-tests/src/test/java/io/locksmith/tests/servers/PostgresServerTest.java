package io.locksmith.tests.servers;

import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("DatabaseServer fixture: PostgreSQL (local server)")
class PostgresServerTest extends AbstractDatabaseServerTest {

    @Override
    Dialect dialect() {
        return Dialect.POSTGRES;
    }

    @Override
    String expectedOrigin() {
        return "local PostgreSQL ";
    }

    @Override
    void createUser(Statement admin, String user) throws SQLException {
        admin.execute("CREATE ROLE " + user + " LOGIN");
    }

    @Override
    void dropUser(Statement admin, String user) throws SQLException {
        admin.execute("DROP ROLE IF EXISTS " + user);
    }

    @Test
    @DisplayName("kills every connection with an application name, and only those")
    void killsNamedConnections() throws SQLException {
        assertKillsNamedConnections();
    }
}
