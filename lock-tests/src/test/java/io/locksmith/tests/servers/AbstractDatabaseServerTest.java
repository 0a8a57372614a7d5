package io.locksmith.tests.servers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** What every {@link DatabaseServer} dialect must do on this machine; one subclass per dialect. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractDatabaseServerTest {

    /** A name no concurrent run uses, so kills never reach other runs' connections. */
    final String unique = "locksmith_fixture_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

    DatabaseServer server;

    abstract Dialect dialect();

    abstract String expectedOrigin();

    /** Creates a database user with an empty password that may connect to database {@code test}. */
    abstract void createUser(Statement admin, String user) throws SQLException;

    abstract void dropUser(Statement admin, String user) throws SQLException;

    @BeforeAll
    void start() {
        server = DatabaseServer.start(dialect(), Settings.system());
    }

    @AfterAll
    void stop() {
        server.close();
    }

    @Test
    @DisplayName("finds the local server and answers select 1")
    void answersSelectOne() throws SQLException {
        assertThat(server.toString()).startsWith(expectedOrigin());
        try (Connection connection = server.openConnection();
             Statement statement = connection.createStatement();
             ResultSet one = statement.executeQuery("select 1")) {
            assertThat(one.next()).isTrue();
            assertThat(one.getInt(1)).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("creates, fills and reads a temporary table")
    void usesTemporaryTable() throws SQLException {
        try (Connection connection = server.openConnection();
             Statement statement = connection.createStatement()) {
            statement.execute("create temporary table fixture_check (id int primary key, name varchar(20))");
            assertThat(statement.executeUpdate("insert into fixture_check (id, name) values (1, 'one'), (2, 'two')"))
                    .isEqualTo(2);
            try (ResultSet rows = statement.executeQuery("select name from fixture_check where id = 2")) {
                assertThat(rows.next()).isTrue();
                assertThat(rows.getString(1)).isEqualTo("two");
                assertThat(rows.next()).isFalse();
            }
        }
    }

    @Test
    @DisplayName("kills another connection by id: its next query fails, others go on")
    void killsConnectionById() throws SQLException {
        try (Connection victim = server.openConnection(); Connection bystander = server.openConnection()) {
            long id = server.connectionId(victim);
            assertThat(id).isNotEqualTo(server.connectionId(bystander));

            server.killConnection(id);

            assertThatThrownBy(() -> selectOne(victim)).isInstanceOf(SQLException.class);
            assertThat(selectOne(bystander)).isEqualTo(1);
            assertThatThrownBy(() -> server.killConnection(id))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("No connection " + id);
        }
    }

    @Test
    @DisplayName("kills every connection of a user, and only those")
    void killsConnectionsOfUser() throws SQLException {
        try (Connection admin = server.openConnection(); Statement statement = admin.createStatement()) {
            createUser(statement, unique);
            try (Connection victim1 = DriverManager.getConnection(server.jdbcUrl(), unique, "");
                 Connection victim2 = DriverManager.getConnection(server.jdbcUrl(), unique, "");
                 Connection bystander = server.openConnection()) {
                assertThat(selectOne(victim1)).isEqualTo(1);

                assertThat(server.killConnectionsOfUser(unique)).isEqualTo(2);

                assertThatThrownBy(() -> selectOne(victim1)).isInstanceOf(SQLException.class);
                assertThatThrownBy(() -> selectOne(victim2)).isInstanceOf(SQLException.class);
                assertThat(selectOne(bystander)).isEqualTo(1);
                assertThat(selectOne(admin)).isEqualTo(1);
            } finally {
                dropUser(statement, unique);
            }
        }
    }

    @Test
    @DisplayName("uses a given URL, user and password")
    void usesGivenUrl() throws SQLException {
        String prefix = "locksmith." + (dialect() == Dialect.MARIADB ? "mariadb" : "postgres");
        try (DatabaseServer given = DatabaseServer.start(dialect(), Settings.of(Map.of(
                prefix + ".url", server.jdbcUrl(), prefix + ".user", server.user(), prefix + ".password", "")))) {
            assertThat(given.toString()).contains(" from -D" + prefix + ".url (user " + server.user() + ")");
            assertThat(given.jdbcUrl()).isEqualTo(server.jdbcUrl());
            try (Connection connection = given.openConnection()) {
                assertThat(selectOne(connection)).isEqualTo(1);
            }
        }
    }

    @Test
    @DisplayName("explains in one line that a given URL does not answer")
    void explainsUnreachableUrl() {
        String prefix = "locksmith." + (dialect() == Dialect.MARIADB ? "mariadb" : "postgres");
        String url = dialect().url("127.0.0.1", Tcp.freePort());
        assertThatThrownBy(() -> DatabaseServer.start(dialect(), Settings.of(Map.of(prefix + ".url", url))))
                .isInstanceOf(ServerUnavailableException.class)
                .hasMessageContaining("-D" + prefix + ".url names " + url + " but user ")
                .hasMessageContaining("cannot connect")
                .hasMessageNotContaining("\n");
    }

    @Test
    @DisplayName("rejects application names it could not pass safely in a URL")
    void rejectsBadApplicationName() {
        assertThatThrownBy(() -> server.jdbcUrl("a name&x=1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\"a name&x=1\"");
        assertThat(server.jdbcUrl("fixture-app")).startsWith(server.jdbcUrl()).contains("fixture-app");
    }

    /** Opens two connections tagged {@code unique} and one tagged otherwise, kills by name, checks who died. */
    void assertKillsNamedConnections() throws SQLException {
        try (Connection victim1 = DriverManager.getConnection(server.jdbcUrl(unique), server.user(), server.password());
             Connection victim2 = DriverManager.getConnection(server.jdbcUrl(unique), server.user(), server.password());
             Connection bystander = DriverManager.getConnection(server.jdbcUrl(unique + "_other"), server.user(),
                     server.password())) {
            assertThat(selectOne(victim1)).isEqualTo(1);

            assertThat(server.killConnectionsNamed(unique)).isEqualTo(2);

            assertThatThrownBy(() -> selectOne(victim1)).isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> selectOne(victim2)).isInstanceOf(SQLException.class);
            assertThat(selectOne(bystander)).isEqualTo(1);
        }
    }

    static int selectOne(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement(); ResultSet one = statement.executeQuery("select 1")) {
            one.next();
            return one.getInt(1);
        }
    }
}
