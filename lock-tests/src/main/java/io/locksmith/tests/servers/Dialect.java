package io.locksmith.tests.servers;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/** What differs between the database servers {@link DatabaseServer} handles: addresses, drivers and admin SQL. */
enum Dialect {

    MARIADB("MariaDB/MySQL", "mariadb", 3306, "mariadb:11",
            Map.of("MARIADB_ALLOW_EMPTY_ROOT_PASSWORD", "1", "MARIADB_DATABASE", DatabaseServer.DATABASE),
            "install and start MariaDB there (apt-get install mariadb-server) with user root, an empty password"
                    + " and a database test") {

        @Override
        String scheme() {
            // the MariaDB driver takes both URL forms; Connector/J only jdbc:mysql
            return OptionalDependency.MARIADB_DRIVER.present() || !OptionalDependency.MYSQL_DRIVER.present()
                    ? "jdbc:mariadb"
                    : "jdbc:mysql";
        }

        @Override
        String driverCoordinates() {
            return OptionalDependency.MARIADB_DRIVER.coordinates() + " (or "
                    + OptionalDependency.MYSQL_DRIVER.coordinates() + ")";
        }

        @Override
        boolean driverPresent() {
            return OptionalDependency.MARIADB_DRIVER.present() || OptionalDependency.MYSQL_DRIVER.present();
        }

        @Override
        List<String> localUsers() {
            return List.of("root");
        }

        @Override
        List<String> containerArguments(String address, int port) {
            return List.of("--port=" + port, "--bind-address=" + address);
        }

        @Override
        String withApplicationName(String url, String applicationName) {
            return url + (url.contains("?") ? "&" : "?") + "connectionAttributes=program_name:" + applicationName;
        }

        @Override
        void addTimeouts(Properties properties, int seconds) {
            properties.setProperty("connectTimeout", Integer.toString(seconds * 1000));
        }

        @Override
        void addSocketTimeout(Properties properties, int seconds) {
            properties.setProperty("socketTimeout", Integer.toString(seconds * 1000));
        }

        @Override
        String connectionIdQuery() {
            return "SELECT CONNECTION_ID()";
        }

        @Override
        String byUserQuery() {
            return "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND ID <> CONNECTION_ID()";
        }

        @Override
        String byApplicationNameQuery(Connection admin, String server) throws SQLException {
            try (Statement statement = admin.createStatement();
                 ResultSet enabled = statement.executeQuery("SELECT @@performance_schema")) {
                if (!enabled.next() || enabled.getInt(1) == 0) {
                    throw new IllegalStateException(server + " runs with performance_schema OFF, so it does not"
                            + " know connections' application names: start it with --performance-schema=ON, or"
                            + " kill connections by user or by id");
                }
            }
            return "SELECT PROCESSLIST_ID FROM performance_schema.session_connect_attrs"
                    + " WHERE ATTR_NAME = 'program_name' AND ATTR_VALUE = ? AND PROCESSLIST_ID <> CONNECTION_ID()";
        }

        @Override
        String stillThereQuery() {
            return "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?";
        }

        @Override
        boolean kill(Connection admin, long id) throws SQLException {
            try (Statement statement = admin.createStatement()) {
                statement.execute("KILL CONNECTION " + id);
                return true;
            } catch (SQLException e) {
                if (e.getErrorCode() == UNKNOWN_THREAD) {
                    return false;
                }
                throw e;
            }
        }
    },

    POSTGRES("PostgreSQL", "postgres", 5432, "postgres:16",
            Map.of("POSTGRES_HOST_AUTH_METHOD", "trust", "POSTGRES_DB", DatabaseServer.DATABASE),
            "install and start PostgreSQL there (apt-get install postgresql) with trust authentication for user"
                    + " postgres and a database test") {

        @Override
        String scheme() {
            return "jdbc:postgresql";
        }

        @Override
        String driverCoordinates() {
            return OptionalDependency.POSTGRES_DRIVER.coordinates();
        }

        @Override
        boolean driverPresent() {
            return OptionalDependency.POSTGRES_DRIVER.present();
        }

        @Override
        List<String> containerArguments(String address, int port) {
            return List.of("-p", Integer.toString(port), "-c", "listen_addresses=" + address);
        }

        @Override
        List<String> localUsers() {
            Set<String> users = new LinkedHashSet<>(List.of("postgres", "root"));
            String osUser = System.getProperty("user.name");
            if (osUser != null && !osUser.isBlank()) {
                users.add(osUser);
            }
            return List.copyOf(users);
        }

        @Override
        String withApplicationName(String url, String applicationName) {
            return url + (url.contains("?") ? "&" : "?") + "ApplicationName=" + applicationName;
        }

        @Override
        void addTimeouts(Properties properties, int seconds) {
            properties.setProperty("connectTimeout", Integer.toString(seconds));
            properties.setProperty("loginTimeout", Integer.toString(seconds));
        }

        @Override
        void addSocketTimeout(Properties properties, int seconds) {
            properties.setProperty("socketTimeout", Integer.toString(seconds));
        }

        @Override
        String connectionIdQuery() {
            return "SELECT pg_backend_pid()";
        }

        @Override
        String byUserQuery() {
            return "SELECT pid FROM pg_stat_activity WHERE usename = ? AND pid <> pg_backend_pid()"
                    + " AND backend_type = 'client backend'";
        }

        @Override
        String byApplicationNameQuery(Connection admin, String server) {
            return "SELECT pid FROM pg_stat_activity WHERE application_name = ? AND pid <> pg_backend_pid()"
                    + " AND backend_type = 'client backend'";
        }

        @Override
        String stillThereQuery() {
            return "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ?";
        }

        @Override
        boolean kill(Connection admin, long id) throws SQLException {
            try (PreparedStatement statement = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
                statement.setInt(1, Math.toIntExact(id));
                try (ResultSet terminated = statement.executeQuery()) {
                    return terminated.next() && terminated.getBoolean(1);
                }
            }
        }
    };

    /** MariaDB's and MySQL's ER_NO_SUCH_THREAD: the connection to kill is already gone. */
    private static final int UNKNOWN_THREAD = 1094;

    private final String displayName;
    private final Settings.Key urlSetting;
    private final Settings.Key userSetting;
    private final Settings.Key passwordSetting;
    private final Settings.Key imageSetting;
    private final int defaultPort;
    private final String image;
    private final Map<String, String> containerEnv;
    private final String localAdvice;

    Dialect(String displayName, String settingName, int defaultPort, String image, Map<String, String> containerEnv,
            String localAdvice) {
        this.displayName = displayName;
        String variable = "LOCKSMITH_" + settingName.toUpperCase(java.util.Locale.ROOT);
        this.urlSetting = new Settings.Key("locksmith." + settingName + ".url", variable + "_URL");
        this.userSetting = new Settings.Key("locksmith." + settingName + ".user", variable + "_USER");
        this.passwordSetting = new Settings.Key("locksmith." + settingName + ".password", variable + "_PASSWORD");
        this.imageSetting = new Settings.Key("locksmith." + settingName + ".image", variable + "_IMAGE");
        this.defaultPort = defaultPort;
        this.image = image;
        this.containerEnv = containerEnv;
        this.localAdvice = localAdvice;
    }

    /** Returns the JDBC URL prefix to use, such as {@code jdbc:postgresql}. */
    abstract String scheme();

    /** Returns the driver artifacts to add when none is on the classpath. */
    abstract String driverCoordinates();

    /** Returns whether a driver for this dialect is on the classpath. */
    abstract boolean driverPresent();

    /** Returns the users to try, in order, on a local server. */
    abstract List<String> localUsers();

    /**
     * Returns the container's arguments that make the server listen on {@code address:port}: flags only, which the
     * official image's entrypoint and the images scripts/docker-images builds both hand to the server.
     */
    abstract List<String> containerArguments(String address, int port);

    /** Returns {@code url} with connections tagged by {@code applicationName}. */
    abstract String withApplicationName(String url, String applicationName);

    /** Adds the driver's connect and login timeouts to connection properties. */
    abstract void addTimeouts(Properties properties, int seconds);

    /**
     * Adds the driver's timeout on every read from the server, so that a probe of a frozen server (one that
     * accepted the connection but answers nothing) fails instead of waiting forever.
     */
    abstract void addSocketTimeout(Properties properties, int seconds);

    /** Returns the query giving the id the server knows the current connection by. */
    abstract String connectionIdQuery();

    /** Returns the query listing the ids of a user's connections, other than the current one. */
    abstract String byUserQuery();

    /**
     * Returns the query listing the ids of the connections tagged with an application name, other than the current
     * one.
     *
     * @throws IllegalStateException if the server cannot tell, saying why
     */
    abstract String byApplicationNameQuery(Connection admin, String server) throws SQLException;

    /** Returns the query counting the connections with a given id (0 once it is gone). */
    abstract String stillThereQuery();

    /** Kills the connection with the given id; returns false if there is none. */
    abstract boolean kill(Connection admin, long id) throws SQLException;

    /** Returns the URL of database {@code test} at {@code host:port}. */
    String url(String host, int port) {
        return url(host, port, DatabaseServer.DATABASE);
    }

    /** Returns the URL of {@code database} at {@code host:port}; an empty name for none (MariaDB, MySQL). */
    String url(String host, int port, String database) {
        return scheme() + "://" + host + ":" + port + "/" + database;
    }

    /** Runs {@code query}, which takes one parameter and returns one integer column, and returns that column. */
    static List<Long> numbers(Connection admin, String query, Object parameter) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (PreparedStatement statement = admin.prepareStatement(query)) {
            statement.setObject(1, parameter);
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    ids.add(rows.getLong(1));
                }
            }
        }
        return ids;
    }

    String displayName() {
        return displayName;
    }

    Settings.Key urlSetting() {
        return urlSetting;
    }

    Settings.Key userSetting() {
        return userSetting;
    }

    Settings.Key passwordSetting() {
        return passwordSetting;
    }

    int defaultPort() {
        return defaultPort;
    }

    /** Returns the container image: the one {@link #imageSetting()} names, else the official one. */
    String image(Settings settings) {
        return settings.get(imageSetting).map(Settings.Value::text).orElse(image);
    }

    /** Returns the setting that names the container image, such as {@code LOCKSMITH_MARIADB_IMAGE}. */
    Settings.Key imageSetting() {
        return imageSetting;
    }

    Map<String, String> containerEnv() {
        return containerEnv;
    }

    /** Returns what to do so the local path works, for the "no server" message. */
    String localAdvice() {
        return localAdvice;
    }
}
