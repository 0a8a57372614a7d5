package io.locksmith.tests.servers;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("DatabaseServer fixture: a private PostgreSQL")
class OwnPostgresServerTest extends AbstractOwnDatabaseServerTest {

    @Override
    Dialect dialect() {
        return Dialect.POSTGRES;
    }

    @Test
    @DisplayName("kill takes the backends with the postmaster: an open transaction's row lock is gone after restart")
    void killTakesBackends() throws SQLException {
        try (Connection setup = server.openConnection(); Statement statement = setup.createStatement()) {
            statement.execute("CREATE TABLE fixture_row (id INT PRIMARY KEY)");
            statement.execute("INSERT INTO fixture_row (id) VALUES (1)");
        }
        try (Connection holder = server.openConnection(); Statement statement = holder.createStatement()) {
            holder.setAutoCommit(false);
            statement.executeQuery("SELECT id FROM fixture_row WHERE id = 1 FOR UPDATE").close();
            long backend = server.connectionId(holder);

            server.kill();

            assertThat(ProcessHandle.of(backend).filter(ProcState::running)).as("backend %d", backend).isEmpty();
        }
        server.restart();
        try (Connection other = server.openConnection(); Statement statement = other.createStatement()) {
            other.setAutoCommit(false);
            try (ResultSet row = statement.executeQuery("SELECT id FROM fixture_row WHERE id = 1 FOR UPDATE NOWAIT")) {
                assertThat(row.next()).isTrue();
            }
            other.rollback();
            other.setAutoCommit(true);
            statement.execute("DROP TABLE fixture_row");
        }
    }
}
