package io.locksmith.tests.servers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * What a private database server ({@link DatabaseServer#startOwnMariaDb()}, {@link DatabaseServer#startOwnPostgres()})
 * must do: answer on its own port, lose its connections but not its committed data to a kill, answer nothing while
 * paused, and leave nothing behind. One subclass per dialect; one server per class, since starting one takes seconds.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractOwnDatabaseServerTest {

    private static final Pattern DATA = Pattern.compile("data in (\\S+)\\)");

    DatabaseServer server;

    abstract Dialect dialect();

    @BeforeAll
    void start() {
        server = DatabaseServer.startOwn(dialect(), Settings.system());
    }

    @AfterAll
    void stop() {
        Matcher data = DATA.matcher(server.toString());
        server.close();
        assertThat(data.find()).as("the data directory in %s", server).isTrue();
        assertThat(Path.of(data.group(1)).getParent()).as("the temp directory of %s, after close", server)
                .doesNotExist();
    }

    @Test
    @DisplayName("answers select 1 in database test on a port of its own, and may be killed and paused")
    void answers() throws SQLException {
        assertThat(server.isControllable()).isTrue();
        assertThat(server.toString()).startsWith("own ");
        assertThat(server.jdbcUrl()).startsWith(dialect().scheme() + "://127.0.0.1:").endsWith("/test")
                .doesNotContain(":" + dialect().defaultPort() + "/");
        try (Connection connection = server.openConnection()) {
            assertThat(AbstractDatabaseServerTest.selectOne(connection)).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("kill drops every connection and refuses new ones; restart keeps committed data")
    void killKeepsCommittedData() throws SQLException {
        try (Connection connection = server.openConnection(); Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE fixture_kill (id INT PRIMARY KEY)");
            statement.execute("INSERT INTO fixture_kill (id) VALUES (42)");

            server.kill();

            assertThatThrownBy(() -> AbstractDatabaseServerTest.selectOne(connection))
                    .isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> server.openConnection()).isInstanceOf(SQLException.class);
        }
        server.restart();
        try (Connection connection = server.openConnection(); Statement statement = connection.createStatement();
             ResultSet rows = statement.executeQuery("SELECT id FROM fixture_kill")) {
            assertThat(rows.next()).isTrue();
            assertThat(rows.getInt(1)).isEqualTo(42);
            statement.execute("DROP TABLE fixture_kill");
        }
    }

    @Test
    @DisplayName("pause leaves a query unanswered and keeps the connection; resume answers it")
    void pauseAndResume() throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", server.user());
        properties.setProperty("password", server.password());
        dialect().addSocketTimeout(properties, 1);
        try (Connection held = server.openConnection(); Connection probe = DriverManager.getConnection(
                server.jdbcUrl(), properties)) {
            server.pause();
            try {
                assertThatThrownBy(() -> AbstractDatabaseServerTest.selectOne(probe)).isInstanceOf(SQLException.class);
            } finally {
                server.resume();
            }
            assertThat(AbstractDatabaseServerTest.selectOne(held)).as("a connection that was idle").isEqualTo(1);
        }
    }

    @Test
    @DisplayName("without binaries, explains in one line what to install or set")
    void explainsMissingBinaries() {
        String setting = dialect() == Dialect.POSTGRES ? "locksmith.postgres.bin" : "locksmith.mariadb.bin";
        Path nowhere = Path.of("/nonexistent-locksmith-binaries");
        assertThat(Files.exists(nowhere)).isFalse();
        assertThat(OwnDatabase.unavailable(dialect(), Settings.of(Map.of(setting, nowhere.toString()))))
                .hasValueSatisfying(message -> assertThat(message)
                        .contains("-D" + setting + "=" + nowhere)
                        .contains("apt-get install")
                        .doesNotContain("\n"));
        assertThat(OwnDatabase.unavailable(dialect(), Settings.system())).isEmpty();
    }
}
