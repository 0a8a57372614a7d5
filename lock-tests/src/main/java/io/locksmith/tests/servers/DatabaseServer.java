package io.locksmith.tests.servers;

import java.io.IOException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A MariaDB/MySQL or PostgreSQL database for tests, found or started per run, with helpers that kill connections
 * the way a network failure or a DBA would.
 *
 * <p>The database comes from the first of these that applies:
 * <ol>
 *   <li>An explicit URL: {@code LOCKSMITH_MARIADB_URL} (a {@code jdbc:mariadb://} or {@code jdbc:mysql://} URL)
 *       with {@code LOCKSMITH_MARIADB_USER} and {@code LOCKSMITH_MARIADB_PASSWORD}, or {@code LOCKSMITH_POSTGRES_URL}
 *       with {@code LOCKSMITH_POSTGRES_USER} and {@code LOCKSMITH_POSTGRES_PASSWORD}; each also as a system property
 *       such as {@code -Dlocksmith.mariadb.url}. User and password default to those of the local path.</li>
 *   <li>A local server: MariaDB/MySQL at {@code 127.0.0.1:3306} as {@code root} with an empty password, or
 *       PostgreSQL at {@code 127.0.0.1:5432} as {@code postgres} (then {@code root}, then the OS user) with trust
 *       authentication; database {@code test} in both.</li>
 *   <li>A {@code mariadb:11} or {@code postgres:16} container through Testcontainers, when it is on the classpath
 *       and a Docker engine answers.</li>
 * </ol>
 * Otherwise the factory throws {@link ServerUnavailableException} saying what to install or set. The log (logger
 * {@code io.locksmith.tests.servers.DatabaseServer.mariadb} or {@code ….postgres}) says which path it took.
 */
public final class DatabaseServer implements AutoCloseable {

    static final String DATABASE = "test";

    private static final String LOOPBACK = "127.0.0.1";
    private static final int LOCAL_TIMEOUT_SECONDS = 5;
    private static final Duration CONTAINER_READY_LIMIT = Duration.ofSeconds(120);
    private static final Duration KILL_LIMIT = Duration.ofSeconds(10);
    private static final Pattern APPLICATION_NAME = Pattern.compile("[A-Za-z0-9._-]{1,63}");

    private final Dialect dialect;
    private final String jdbcUrl;
    private final String user;
    private final String password;
    private final String origin;
    private final Control container;

    private DatabaseServer(Dialect dialect, String jdbcUrl, String user, String password, String origin,
                           Control container) {
        this.dialect = dialect;
        this.jdbcUrl = jdbcUrl;
        this.user = user;
        this.password = password;
        this.origin = origin;
        this.container = container;
    }

    /**
     * Returns a MariaDB or MySQL database that answers {@code select 1}.
     *
     * @throws ServerUnavailableException if none can be had, saying what to install or set
     */
    public static DatabaseServer startMariaDb() {
        return start(Dialect.MARIADB, Settings.system());
    }

    /**
     * Returns a PostgreSQL database that answers {@code select 1}.
     *
     * @throws ServerUnavailableException if none can be had, saying what to install or set
     */
    public static DatabaseServer startPostgres() {
        return start(Dialect.POSTGRES, Settings.system());
    }

    static DatabaseServer start(Dialect dialect, Settings settings) {
        DatabaseServer server = resolve(dialect, settings);
        logger(dialect).info("{} for tests: {}", dialect.displayName(), server);
        return server;
    }

    private static Logger logger(Dialect dialect) {
        return LoggerFactory.getLogger(DatabaseServer.class.getName() + "." + dialect.name().toLowerCase(Locale.ROOT));
    }

    private static DatabaseServer resolve(Dialect dialect, Settings settings) {
        if (!dialect.driverPresent()) {
            throw new ServerUnavailableException("No JDBC driver for " + dialect.displayName()
                    + " on the test classpath: add " + dialect.driverCoordinates());
        }
        Optional<Settings.Value> given = settings.get(dialect.urlSetting());
        if (given.isPresent()) {
            return external(dialect, settings, given.get());
        }
        String localUrl = dialect.url(LOOPBACK, dialect.defaultPort());
        String localFailure;
        try {
            Tcp.connect(LOOPBACK, dialect.defaultPort(), Duration.ofSeconds(LOCAL_TIMEOUT_SECONDS));
            localFailure = null;
        } catch (IOException e) {
            localFailure = "nothing accepts connections at " + LOOPBACK + ":" + dialect.defaultPort();
        }
        if (localFailure == null) {
            for (String user : dialect.localUsers()) {
                try {
                    String product = product(dialect, localUrl, user, "");
                    return new DatabaseServer(dialect, localUrl, user, "", "local " + product + " at " + localUrl
                            + " (user " + user + ")", null);
                } catch (SQLException e) {
                    if (localFailure == null) {
                        localFailure = localUrl + " refused user " + user + " (" + Await.describe(e) + ")";
                    }
                }
            }
        }
        if (DockerEngine.reachable()) {
            return startContainer(dialect);
        }
        throw new ServerUnavailableException("No " + dialect.displayName() + " for the tests: " + localFailure
                + "; " + dialect.localAdvice()
                + ", or set " + dialect.urlSetting().describe(dialect.scheme() + "://host:port/db")
                + " with " + dialect.userSetting().describe() + " and " + dialect.passwordSetting().describe()
                + ", " + DockerEngine.howToGet());
    }

    private static DatabaseServer external(Dialect dialect, Settings settings, Settings.Value url) {
        String user = settings.get(dialect.userSetting()).map(Settings.Value::text)
                .orElse(dialect.localUsers().get(0));
        String password = settings.get(dialect.passwordSetting()).map(Settings.Value::text).orElse("");
        try {
            DriverManager.getDriver(url.text());
        } catch (SQLException e) {
            throw new ServerUnavailableException(url.source() + " names " + url.text()
                    + " but no JDBC driver on the test classpath takes that URL: add " + dialect.driverCoordinates());
        }
        try {
            String product = product(dialect, url.text(), user, password);
            return new DatabaseServer(dialect, url.text(), user, password, product + " at " + url.text() + " from "
                    + url.source() + " (user " + user + ")", null);
        } catch (SQLException e) {
            throw new ServerUnavailableException(url.source() + " names " + url.text() + " but user " + user
                    + " cannot connect (" + Await.describe(e) + "): fix the URL, or set "
                    + dialect.userSetting().describe() + " and " + dialect.passwordSetting().describe(), e);
        }
    }

    private static DatabaseServer startContainer(Dialect dialect) {
        DockerServer server = DockerServer.start(dialect.image(), dialect.defaultPort(), dialect.containerEnv(),
                List.of());
        try {
            String url = dialect.url(server.host(), server.port());
            String user = dialect.localUsers().get(0);
            String[] product = new String[1];
            // the image's entrypoint runs a temporary server while it initialises: wait for the real one
            Await.until("Testcontainers " + dialect.image() + " at " + url + " did not answer select 1",
                    CONTAINER_READY_LIMIT, () -> {
                        server.checkRunning();
                        product[0] = product(dialect, url, user, "");
                        return true;
                    });
            return new DatabaseServer(dialect, url, user, "", "Testcontainers " + dialect.image() + " ("
                    + product[0] + ") at " + url + " (user " + user + ", " + server.describe() + ")", server);
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    /** Connects once, runs {@code select 1} and returns the product, such as "MariaDB 10.11.19-MariaDB". */
    private static String product(Dialect dialect, String url, String user, String password) throws SQLException {
        try (Connection connection = DriverManager.getConnection(url, properties(dialect, user, password));
             Statement statement = connection.createStatement();
             ResultSet one = statement.executeQuery("select 1")) {
            one.next();
            DatabaseMetaData metaData = connection.getMetaData();
            return metaData.getDatabaseProductName() + " " + metaData.getDatabaseProductVersion();
        }
    }

    private static Properties properties(Dialect dialect, String user, String password) {
        Properties properties = new Properties();
        properties.setProperty("user", user);
        properties.setProperty("password", password);
        dialect.addTimeouts(properties, LOCAL_TIMEOUT_SECONDS);
        return properties;
    }

    /** Returns the JDBC URL of the database, e.g. {@code jdbc:mariadb://127.0.0.1:3306/test}. */
    public String jdbcUrl() {
        return jdbcUrl;
    }

    /**
     * Returns the JDBC URL with connections tagged by {@code applicationName}, which
     * {@link #killConnectionsNamed(String)} finds them by: PostgreSQL's {@code ApplicationName}, MariaDB's and
     * MySQL's {@code program_name} connection attribute.
     *
     * @param applicationName 1 to 63 letters, digits, dots, dashes or underscores
     */
    public String jdbcUrl(String applicationName) {
        return dialect.withApplicationName(jdbcUrl, checkedApplicationName(applicationName));
    }

    /** Returns the user to connect as. */
    public String user() {
        return user;
    }

    /** Returns the password to connect with, empty for the local and container paths. */
    public String password() {
        return password;
    }

    /** Opens a new connection to the database as {@link #user()}; the caller closes it. */
    public Connection openConnection() throws SQLException {
        return DriverManager.getConnection(jdbcUrl, properties(dialect, user, password));
    }

    /**
     * Returns the id the server knows {@code connection} by, as {@link #killConnection(long)} takes it: MariaDB's
     * {@code CONNECTION_ID()}, PostgreSQL's {@code pg_backend_pid()}.
     */
    public long connectionId(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
             ResultSet id = statement.executeQuery(dialect.connectionIdQuery())) {
            id.next();
            return id.getLong(1);
        }
    }

    /**
     * Kills one connection from the server side ({@code KILL CONNECTION id}, {@code pg_terminate_backend(id)}) and
     * returns once the server has dropped it; the owner's next statement fails.
     *
     * @throws IllegalStateException if the server has no connection with that id
     */
    public void killConnection(long connectionId) throws SQLException {
        if (kill(List.of(connectionId)) == 0) {
            throw new IllegalStateException("No connection " + connectionId + " to kill on " + origin);
        }
    }

    /**
     * Kills every connection tagged with {@code applicationName} (see {@link #jdbcUrl(String)}) and returns how many;
     * the connection that issues the kills is never among them.
     *
     * @throws IllegalStateException if the server cannot tell connections' names, e.g. MariaDB without
     *                               performance_schema
     */
    public int killConnectionsNamed(String applicationName) throws SQLException {
        String name = checkedApplicationName(applicationName);
        try (Connection admin = openConnection()) {
            return kill(admin, Dialect.numbers(admin, dialect.byApplicationNameQuery(admin, origin), name));
        }
    }

    /**
     * Kills every connection of database user {@code user} and returns how many; the connection that issues the
     * kills is never among them. On a shared server this reaches other test runs too: prefer
     * {@link #killConnectionsNamed(String)} where the server supports it.
     */
    public int killConnectionsOfUser(String user) throws SQLException {
        try (Connection admin = openConnection()) {
            return kill(admin, Dialect.numbers(admin, dialect.byUserQuery(), user));
        }
    }

    private int kill(List<Long> ids) throws SQLException {
        try (Connection admin = openConnection()) {
            return kill(admin, ids);
        }
    }

    private int kill(Connection admin, List<Long> ids) throws SQLException {
        int killed = 0;
        for (long id : ids) {
            if (dialect.kill(admin, id)) {
                killed++;
            }
        }
        // both servers kill asynchronously: wait until they no longer list the connections, so the caller sees
        // them dead
        Await.until(origin + " still lists killed connections " + ids, KILL_LIMIT, () -> {
            for (long id : ids) {
                if (Dialect.numbers(admin, dialect.stillThereQuery(), id).get(0) > 0) {
                    return false;
                }
            }
            return true;
        });
        return killed;
    }

    private static String checkedApplicationName(String applicationName) {
        if (applicationName == null || !APPLICATION_NAME.matcher(applicationName).matches()) {
            throw new IllegalArgumentException("Application name must be 1 to 63 letters, digits, dots, dashes or"
                    + " underscores, was \"" + applicationName + "\"");
        }
        return applicationName;
    }

    /** Stops the container if the tests started one; a local or given server is left alone. */
    @Override
    public void close() {
        if (container != null) {
            container.close();
        }
    }

    /** Returns which path the database took, e.g. "local MariaDB 10.11.19-MariaDB at jdbc:mariadb://… (user root)". */
    @Override
    public String toString() {
        return origin;
    }
}
