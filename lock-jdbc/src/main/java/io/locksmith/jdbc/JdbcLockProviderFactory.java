package io.locksmith.jdbc;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.LockProviderFactory;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Opens JDBC lock providers for {@code jdbc:mysql:}, {@code jdbc:mariadb:}, {@code jdbc:postgresql:} and
 * {@code jdbc:h2:} URLs, through {@link LockProvider#open(String)}:
 *
 * <pre>{@code
 * LockProvider.open("jdbc:postgresql://db:5432/app?user=app&password=secret&locksmith.mode=session")
 * LockProvider.open("jdbc:h2:mem:locks;DB_CLOSE_DELAY=-1;locksmith.table=app_locks")
 * }</pre>
 *
 * <p>Parameters starting with {@code locksmith.} are Locksmith's and are removed before the URL goes to the
 * driver: {@code locksmith.mode} ({@code lease}, the default, or {@code session}), {@code locksmith.table}
 * (default {@value JdbcLockProviders#DEFAULT_TABLE}), {@code locksmith.createTable} ({@code true}, the default,
 * or {@code false}) and {@code locksmith.poolSize} (default 10 in lease mode, 50 in session mode, where every
 * held lock keeps a connection). They follow the URL's own syntax: after {@code ?} joined by {@code &}, or for
 * H2 after {@code ;}.
 *
 * <p>The provider owns a HikariCP pool ({@code com.zaxxer:HikariCP} must be on the class path, with the
 * database's driver) whose connection and connect timeouts follow the options' operation timeout, and closes
 * it when it is closed. Nothing connects before the first lock operation.
 */
public final class JdbcLockProviderFactory implements LockProviderFactory {

    private static final Map<String, String> DRIVERS = Map.of(
            "mysql", "com.mysql:mysql-connector-j",
            "mariadb", "org.mariadb.jdbc:mariadb-java-client",
            "postgresql", "org.postgresql:postgresql",
            "h2", "com.h2database:h2");
    private static final Map<String, String> DRIVER_CLASSES = Map.of(
            "mysql", "com.mysql.cj.jdbc.Driver",
            "mariadb", "org.mariadb.jdbc.Driver",
            "postgresql", "org.postgresql.Driver",
            "h2", "org.h2.Driver");
    private static final String PREFIX = "locksmith.";
    private static final List<String> PARAMETERS = List.of("locksmith.mode", "locksmith.table",
            "locksmith.createTable", "locksmith.poolSize");

    /** Creates the factory; {@link java.util.ServiceLoader} calls this. */
    public JdbcLockProviderFactory() {
    }

    @Override
    public Set<String> schemes() {
        return Set.of("jdbc");
    }

    @Override
    public LockProvider create(URI uri, LockOptions options) {
        Url url = Url.parse(uri.toString());
        try {
            DriverManager.getDriver(url.jdbcUrl);
        } catch (SQLException e) {
            if (driverPresent(url.subScheme)) {
                throw new IllegalArgumentException("The " + url.subScheme + " JDBC driver does not accept the URL '"
                        + LockTable.describe(url.jdbcUrl) + "': check its syntax", e);
            }
            throw new IllegalArgumentException("No JDBC driver on the class path takes '" + LockTable.describe(url.jdbcUrl)
                    + "': add " + DRIVERS.get(url.subScheme), e);
        }
        try {
            Class.forName("com.zaxxer.hikari.HikariDataSource", false, JdbcLockProviderFactory.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("The jdbc: URI form of Locksmith pools its connections with HikariCP: add"
                    + " com.zaxxer:HikariCP to the class path, or build the provider with"
                    + " JdbcLockProviders.builder(yourDataSource)", e);
        }
        return HikariPools.open(url, options);
    }

    private static boolean driverPresent(String subScheme) {
        try {
            Class.forName(DRIVER_CLASSES.get(subScheme), false, JdbcLockProviderFactory.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * Rejects a port that is not a number from 1 to 65535 before a driver sees it: drivers differ in what they do
     * with one (refuse the URL, log a warning, or fail every connection attempt until the timeout).
     */
    static void checkPorts(String subScheme, String text) {
        if (subScheme.equals("h2")) {
            return; // H2 names files and in-memory databases; its TCP form is checked by H2 itself
        }
        String rest = text.substring(("jdbc:" + subScheme + ":").length());
        int slashes = rest.indexOf("//");
        // "jdbc:mariadb://…" or a MySQL/MariaDB high-availability prefix such as "jdbc:mysql:replication://…"
        if (slashes < 0 || !rest.substring(0, slashes).matches("([A-Za-z]+:)?")) {
            return;
        }
        String afterSlashes = rest.substring(slashes + 2);
        int query = afterSlashes.indexOf('?');
        // user info may hold any character (a password); the hosts start after its last '@'
        int at = afterSlashes.lastIndexOf('@', query < 0 ? afterSlashes.length() - 1 : query - 1);
        String hosts = afterSlashes.substring(at + 1);
        for (char end : new char[] {'/', '?', ';'}) {
            int cut = hosts.indexOf(end);
            if (cut >= 0) {
                hosts = hosts.substring(0, cut);
            }
        }
        for (String host : hosts.split(",", -1)) {
            if (host.startsWith("address=") || host.startsWith("(")) {
                continue; // MySQL's key-value host form
            }
            String port = null;
            if (host.startsWith("[")) {
                int close = host.indexOf(']');
                if (close >= 0 && host.startsWith(":", close + 1)) {
                    port = host.substring(close + 2);
                }
            } else if (host.lastIndexOf(':') >= 0) {
                port = host.substring(host.lastIndexOf(':') + 1);
            }
            if (port != null && (!port.matches("[0-9]{1,5}") || Integer.parseInt(port) < 1
                    || Integer.parseInt(port) > 65_535)) {
                throw new IllegalArgumentException("Invalid JDBC URL '" + LockTable.describe(text)
                        + "': the port must be a number from 1 to 65535, got '" + port + "'");
            }
        }
    }

    /** A parsed {@code jdbc:} URI: the driver's URL and Locksmith's parameters. */
    static final class Url {
        final String subScheme;
        final String jdbcUrl;
        final JdbcLockProviders.Mode mode;
        final String table;
        final boolean createTable;
        final int poolSize;

        private Url(String subScheme, String jdbcUrl, Map<String, String> params) {
            this.subScheme = subScheme;
            this.jdbcUrl = jdbcUrl;
            String modeText = params.getOrDefault("locksmith.mode", "lease").toLowerCase(Locale.ROOT);
            this.mode = switch (modeText) {
                case "lease" -> JdbcLockProviders.Mode.LEASE;
                case "session" -> JdbcLockProviders.Mode.SESSION;
                default -> throw new IllegalArgumentException("locksmith.mode must be lease or session, got '"
                        + params.get("locksmith.mode") + "'");
            };
            this.table = JdbcLockProviders.checkTable(params.getOrDefault("locksmith.table",
                    JdbcLockProviders.DEFAULT_TABLE));
            String create = params.getOrDefault("locksmith.createTable", "true").toLowerCase(Locale.ROOT);
            if (!create.equals("true") && !create.equals("false")) {
                throw new IllegalArgumentException("locksmith.createTable must be true or false, got '"
                        + params.get("locksmith.createTable") + "'");
            }
            this.createTable = Boolean.parseBoolean(create);
            String size = params.get("locksmith.poolSize");
            int defaultSize = mode == JdbcLockProviders.Mode.SESSION ? 50 : 10;
            try {
                this.poolSize = size == null ? defaultSize : Integer.parseInt(size);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("locksmith.poolSize must be a whole number, got '" + size + "'");
            }
            if (poolSize < 1) {
                throw new IllegalArgumentException("locksmith.poolSize must be at least 1, got " + poolSize);
            }
        }

        static Url parse(String text) {
            String lower = text.toLowerCase(Locale.ROOT);
            if (!lower.startsWith("jdbc:")) {
                throw new IllegalArgumentException("Expected a jdbc: URL, got '" + LockTable.describe(text) + "'");
            }
            int colon = lower.indexOf(':', 5);
            String subScheme = colon < 0 ? "" : lower.substring(5, colon);
            if (!DRIVERS.containsKey(subScheme)) {
                throw new IllegalArgumentException("Locksmith's JDBC backend takes jdbc:mysql:, jdbc:mariadb:,"
                        + " jdbc:postgresql: and jdbc:h2: URLs, got '" + LockTable.describe(text) + "'");
            }
            checkPorts(subScheme, text);
            Map<String, String> params = new TreeMap<>();
            String jdbcUrl = subScheme.equals("h2") ? stripH2(text, params) : stripQuery(text, params);
            for (String key : params.keySet()) {
                if (!PARAMETERS.contains(key)) {
                    throw new IllegalArgumentException("Unknown parameter '" + key + "' in '" + LockTable.describe(text)
                            + "'; Locksmith's parameters are " + String.join(", ", PARAMETERS));
                }
            }
            return new Url(subScheme, jdbcUrl, params);
        }

        /** {@code …?a=1&locksmith.mode=session&b=2} → {@code …?a=1&b=2}. */
        private static String stripQuery(String text, Map<String, String> params) {
            int q = text.indexOf('?');
            if (q < 0) {
                return text;
            }
            List<String> kept = new ArrayList<>();
            for (String pair : text.substring(q + 1).split("&")) {
                if (pair.startsWith(PREFIX)) {
                    put(params, pair);
                } else if (!pair.isEmpty()) {
                    kept.add(pair);
                }
            }
            return text.substring(0, q) + (kept.isEmpty() ? "" : "?" + String.join("&", kept));
        }

        /** {@code jdbc:h2:mem:x;A=1;locksmith.mode=session} → {@code jdbc:h2:mem:x;A=1}. */
        private static String stripH2(String text, Map<String, String> params) {
            String[] parts = text.split(";");
            StringBuilder kept = new StringBuilder(parts[0]);
            for (int i = 1; i < parts.length; i++) {
                if (parts[i].startsWith(PREFIX)) {
                    put(params, parts[i]);
                } else if (!parts[i].isEmpty()) {
                    kept.append(';').append(parts[i]);
                }
            }
            return kept.toString();
        }

        private static void put(Map<String, String> params, String pair) {
            int eq = pair.indexOf('=');
            String key = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            if (params.put(key, value) != null) {
                throw new IllegalArgumentException("Parameter '" + key + "' is given twice");
            }
        }

        /** Whether the driver URL already sets {@code key}. */
        boolean sets(String key) {
            String lower = jdbcUrl.toLowerCase(Locale.ROOT);
            String k = key.toLowerCase(Locale.ROOT) + "=";
            return lower.contains("?" + k) || lower.contains("&" + k) || lower.contains(";" + k);
        }
    }
}
