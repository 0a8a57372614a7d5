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
 *   <li>A container through Testcontainers, when it is on the classpath and a Docker engine answers: the image
 *       {@code LOCKSMITH_MARIADB_IMAGE} or {@code LOCKSMITH_POSTGRES_IMAGE} names (or {@code -Dlocksmith.mariadb.image},
 *       {@code -Dlocksmith.postgres.image}), else the official {@code mariadb:11} or {@code postgres:16}.</li>
 * </ol>
 * Otherwise the factory throws {@link ServerUnavailableException} saying what to install or set. The log (logger
 * {@code io.locksmith.tests.servers.DatabaseServer.mariadb} or {@code ….postgres}) says which path it took.
 *
 * <p>The tests must not kill, freeze or restart such a database: the machine's servers are shared with other test
 * runs and builds. For those faults, {@link #startOwnMariaDb()} and {@link #startOwnPostgres()} start a server of
 * the tests' own from the database binaries installed on the machine (or in a container, when they are not and a
 * Docker engine answers), which {@link #kill()}, {@link #pause()}, {@link #resume()} and {@link #restart()} act on;
 * see {@link #isControllable()}.
 */
public final class DatabaseServer implements AutoCloseable {

    static final String DATABASE = "test";

    private static final String LOOPBACK = "127.0.0.1";
    private static final int LOCAL_TIMEOUT_SECONDS = 5;
    private static final Duration CONTAINER_READY_LIMIT = Duration.ofSeconds(120);
    /** How long a restarted server may take to answer: PostgreSQL and InnoDB replay their logs after a kill. */
    private static final Duration RESTART_READY_LIMIT = Duration.ofSeconds(90);
    private static final int PROBE_TIMEOUT_SECONDS = 2;
    private static final Duration KILL_LIMIT = Duration.ofSeconds(10);
    private static final Pattern APPLICATION_NAME = Pattern.compile("[A-Za-z0-9._-]{1,63}");

    private final Dialect dialect;
    private final String jdbcUrl;
    private final String user;
    private final String password;
    private final String origin;
    private final Control control;

    private DatabaseServer(Dialect dialect, String jdbcUrl, String user, String password, String origin,
                           Control control) {
        this.dialect = dialect;
        this.jdbcUrl = jdbcUrl;
        this.user = user;
        this.password = password;
        this.origin = origin;
        this.control = control;
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

    /**
     * Starts a MariaDB database in a container through Testcontainers, whatever else the machine has: the path of
     * the contract run that proves the Testcontainers fixtures. The tests own it like a server of their own.
     *
     * @throws ServerUnavailableException if Testcontainers is not on the classpath or no Docker engine answers
     */
    public static DatabaseServer startMariaDbContainer() {
        return startInContainer(Dialect.MARIADB, Settings.system());
    }

    /**
     * Starts a PostgreSQL database in a container through Testcontainers, whatever else the machine has.
     *
     * @throws ServerUnavailableException if Testcontainers is not on the classpath or no Docker engine answers
     */
    public static DatabaseServer startPostgresContainer() {
        return startInContainer(Dialect.POSTGRES, Settings.system());
    }

    private static DatabaseServer startInContainer(Dialect dialect, Settings settings) {
        if (!dialect.driverPresent()) {
            throw new ServerUnavailableException("No JDBC driver for " + dialect.displayName()
                    + " on the test classpath: add " + dialect.driverCoordinates());
        }
        DockerEngine.require("A " + dialect.displayName() + " container");
        DatabaseServer server = startContainer(dialect, settings);
        logger(dialect).info("{} for tests: {}", dialect.displayName(), server);
        return server;
    }

    static DatabaseServer start(Dialect dialect, Settings settings) {
        DatabaseServer server = resolve(dialect, settings);
        logger(dialect).info("{} for tests: {}", dialect.displayName(), server);
        return server;
    }

    /**
     * Starts a MariaDB server of the tests' own on a free loopback port, with a fresh data directory and database
     * {@code test}, user {@code root} without password: from {@code mariadb-install-db} and {@code mariadbd}
     * ({@code LOCKSMITH_MARIADB_BIN} names their directory if they are not in the usual places or on the PATH), or
     * else a {@code mariadb:11} container. The tests may kill, pause and restart it; committed data survives a
     * kill. Starting takes a few seconds: share one per test class.
     *
     * @throws ServerUnavailableException if neither the binaries nor Docker can be had, saying what to install or
     *                                    set
     */
    public static DatabaseServer startOwnMariaDb() {
        return startOwn(Dialect.MARIADB, Settings.system());
    }

    /**
     * Starts a PostgreSQL server of the tests' own on a free loopback port, with a fresh data directory and database
     * {@code test}, user {@code postgres} with trust authentication: from {@code initdb} and {@code postgres}
     * (run as OS user {@code postgres} when the tests run as root; {@code LOCKSMITH_POSTGRES_BIN} names their
     * directory if they are not under {@code /usr/lib/postgresql/N/bin} or on the PATH), or else a
     * {@code postgres:16} container. The tests may kill, pause and restart it; committed data survives a kill.
     * Starting takes a few seconds: share one per test class.
     *
     * @throws ServerUnavailableException if neither the binaries nor Docker can be had, saying what to install or
     *                                    set
     */
    public static DatabaseServer startOwnPostgres() {
        return startOwn(Dialect.POSTGRES, Settings.system());
    }

    static DatabaseServer startOwn(Dialect dialect, Settings settings) {
        if (!dialect.driverPresent()) {
            throw new ServerUnavailableException("No JDBC driver for " + dialect.displayName()
                    + " on the test classpath: add " + dialect.driverCoordinates());
        }
        Optional<String> unavailable = OwnDatabase.unavailable(dialect, settings);
        DatabaseServer server;
        if (unavailable.isEmpty()) {
            OwnDatabase.Started own = OwnDatabase.start(dialect, settings);
            server = new DatabaseServer(dialect, own.jdbcUrl(), own.user(), "", own.origin(), own.process());
        } else if (DockerEngine.reachable()) {
            server = startContainer(dialect, settings);
        } else {
            throw new ServerUnavailableException(unavailable.get() + ", " + DockerEngine.howToGet());
        }
        logger(dialect).info("{} of the tests' own: {}", dialect.displayName(), server);
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
                            + " (user " + user + ")", Control.none(localUrl, "the machine's shared server",
                            "use DatabaseServer.startOwn" + (dialect == Dialect.POSTGRES ? "Postgres" : "MariaDb")
                                    + "() for a server of the tests' own"));
                } catch (SQLException e) {
                    if (localFailure == null) {
                        localFailure = localUrl + " refused user " + user + " (" + Await.describe(e) + ")";
                    }
                }
            }
        }
        if (DockerEngine.reachable()) {
            return startContainer(dialect, settings);
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
                    + url.source() + " (user " + user + ")", Control.none(url.text(), url.source()));
        } catch (SQLException e) {
            throw new ServerUnavailableException(url.source() + " names " + url.text() + " but user " + user
                    + " cannot connect (" + Await.describe(e) + "): fix the URL, or set "
                    + dialect.userSetting().describe() + " and " + dialect.passwordSetting().describe(), e);
        }
    }

    private static DatabaseServer startContainer(Dialect dialect, Settings settings) {
        DockerServer server = DockerServer.start(dialect.image(settings), dialect.defaultPort(),
                dialect.containerEnv(), listen -> dialect.containerArguments(listen.address(), listen.port()));
        try {
            String url = dialect.url(server.host(), server.port());
            String user = dialect.localUsers().get(0);
            String[] product = new String[1];
            // the official image's entrypoint runs a temporary server while it initialises: wait for the real one
            Await.until(server.path() + " at " + url + " did not answer select 1",
                    CONTAINER_READY_LIMIT, () -> {
                        server.checkRunning();
                        product[0] = product(dialect, url, user, "");
                        return true;
                    });
            return new DatabaseServer(dialect, url, user, "", server.path() + ", " + product[0] + ", at " + url
                    + " (user " + user + ", " + server.describe() + ")", server);
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    /**
     * Waits until the server at {@code url} answers {@code select 1} and returns its product; every probe is bounded
     * by connect and socket timeouts, so a frozen server costs a probe its timeout, not a hang.
     *
     * @param control checked between probes, so that a server that died fails at once
     */
    static String awaitAnswers(Dialect dialect, String url, String user, String password, Control control,
                               Duration limit, String failure) {
        String[] product = new String[1];
        Await.until(failure, limit, () -> {
            control.checkRunning();
            Properties properties = properties(dialect, user, password);
            dialect.addTimeouts(properties, PROBE_TIMEOUT_SECONDS);
            dialect.addSocketTimeout(properties, PROBE_TIMEOUT_SECONDS);
            product[0] = product(url, properties);
            return true;
        });
        return product[0];
    }

    /** Opens a connection with the fixture's timeouts; the caller closes it. */
    static Connection connect(Dialect dialect, String url, String user, String password) throws SQLException {
        return DriverManager.getConnection(url, properties(dialect, user, password));
    }

    /** Connects once, runs {@code select 1} and returns the product, such as "MariaDB 10.11.19-MariaDB". */
    private static String product(Dialect dialect, String url, String user, String password) throws SQLException {
        return product(url, properties(dialect, user, password));
    }

    private static String product(String url, Properties properties) throws SQLException {
        try (Connection connection = DriverManager.getConnection(url, properties);
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
        if (killConnections(List.of(connectionId)) == 0) {
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
            return killConnections(admin, Dialect.numbers(admin, dialect.byApplicationNameQuery(admin, origin), name));
        }
    }

    /**
     * Kills every connection of database user {@code user} and returns how many; the connection that issues the
     * kills is never among them. On a shared server this reaches other test runs too: prefer
     * {@link #killConnectionsNamed(String)} where the server supports it.
     */
    public int killConnectionsOfUser(String user) throws SQLException {
        try (Connection admin = openConnection()) {
            return killConnections(admin, Dialect.numbers(admin, dialect.byUserQuery(), user));
        }
    }

    private int killConnections(List<Long> ids) throws SQLException {
        try (Connection admin = openConnection()) {
            return killConnections(admin, ids);
        }
    }

    private int killConnections(Connection admin, List<Long> ids) throws SQLException {
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

    /**
     * Returns whether {@link #kill()}, {@link #pause()}, {@link #resume()} and {@link #restart()} work: true for
     * the servers of {@link #startOwnMariaDb()} and {@link #startOwnPostgres()} and for containers, false for the
     * machine's shared servers and for given URLs.
     */
    public boolean isControllable() {
        return control.isControllable();
    }

    /**
     * Kills the server abruptly, as a crash would (SIGKILL to the server and every process it started, or
     * {@code docker kill}); its port then refuses connections and its clients' connections fail. What it had not
     * yet written to its log files is lost; committed data is not.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void kill() {
        control.kill();
    }

    /**
     * Freezes the server (SIGSTOP to the server and every process it started, or {@code docker pause}): it accepts
     * connections but answers nothing, and keeps every open transaction and its locks.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void pause() {
        control.pause();
    }

    /**
     * Unfreezes a paused server (SIGCONT, or {@code docker unpause}) and waits until it answers {@code select 1}.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void resume() {
        control.resume();
        awaitAnswers(dialect, jdbcUrl, user, password, control, RESTART_READY_LIMIT, this
                + " did not answer select 1 after resume");
    }

    /**
     * Starts the server again on the same port and data, killing it first if it runs, and waits until it answers
     * {@code select 1} (after replaying its logs when it was killed).
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void restart() {
        control.restart();
        awaitAnswers(dialect, jdbcUrl, user, password, control, RESTART_READY_LIMIT, this
                + " did not answer select 1 after restart");
        logger(dialect).info("{} for tests restarted: {} ({})", dialect.displayName(), this, control.describe());
    }

    /**
     * Stops a server of the tests' own and deletes its data, or stops the container; a local or given server is
     * left alone.
     */
    @Override
    public void close() {
        control.close();
    }

    /** Returns which path the database took, e.g. "local MariaDB 10.11.19-MariaDB at jdbc:mariadb://… (user root)". */
    @Override
    public String toString() {
        return origin;
    }
}
