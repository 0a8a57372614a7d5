package io.locksmith.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.internal.BrokenConnectionOverride;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/** The HikariCP pool of a provider opened from a {@code jdbc:} URI; kept apart so HikariCP stays optional. */
final class HikariPools {

    private static final AtomicInteger POOLS = new AtomicInteger();

    private HikariPools() {
    }

    /**
     * The pool settings of a provider: a connection within the operation timeout or a failure, no connection
     * before the first use, eviction of connections H2 reports broken, on MariaDB Connector/J server-side prepared
     * statements (see {@link #serverPreparedStatements}), and on PostgreSQL sockets that hand notifications over
     * at once (see {@link #promptNotifications}).
     */
    static HikariConfig config(String jdbcUrl, int size, Duration operationTimeout) {
        long timeoutMillis = Math.max(250, operationTimeout.toMillis());
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(Math.min(1, size));
        config.setConnectionTimeout(timeoutMillis);
        config.setValidationTimeout(timeoutMillis);
        // start without the database: the first lock operation fails with LockBackendException instead
        config.setInitializationFailTimeout(-1);
        config.setAutoCommit(true);
        config.setTransactionIsolation(defaultIsolation(jdbcUrl));
        config.setExceptionOverrideClassName(BrokenConnectionOverride.class.getName());
        if (serverPreparedStatements(jdbcUrl)) {
            config.addDataSourceProperty("useServerPrepStmts", "true");
        }
        if (promptNotifications(jdbcUrl)) {
            config.addDataSourceProperty("socketFactory", PromptNotificationSocketFactory.class.getName());
        }
        return config;
    }

    /**
     * Whether the pool asks MariaDB Connector/J for server-side prepared statements: unless the URL says otherwise,
     * on {@code jdbc:mariadb:} URLs. The driver's default sends every statement as text, which the server parses
     * each time; prepared once per connection (the driver caches them, {@code prepStmtCacheSize} 250), a lock cycle's
     * two statements travel as a statement id and binary parameters. Measured on the uncontended lease-mode cycle
     * against the bare-JDBC floor (docs/benchmarks.md): 0.72× the floor with text statements, 0.88–0.92× with these.
     * Not on MySQL Connector/J, whose server-side statements are not cached by default and would cost a round trip
     * more per statement.
     */
    static boolean serverPreparedStatements(String jdbcUrl) {
        return jdbcUrl.startsWith("jdbc:mariadb:") && !jdbcUrl.contains("useServerPrepStmts=");
    }

    /**
     * Whether the pool gives the PostgreSQL driver {@link PromptNotificationSocketFactory}'s sockets: on {@code
     * jdbc:postgresql:} URLs that name no {@code socketFactory} of their own. With the driver's sockets every
     * notification reaches the listening thread a millisecond late, and in lease mode that millisecond lies on
     * every hand-off between processes (docs/benchmarks.md: 355 against 424 handoffs/s in the multi-process
     * scenario).
     */
    static boolean promptNotifications(String jdbcUrl) {
        return jdbcUrl.startsWith("jdbc:postgresql:") && !jdbcUrl.contains("socketFactory=");
    }

    /**
     * The database's own default isolation level, set explicitly. Left unset, HikariCP reads it from the pool's
     * first connection, and if that connection dies during the read it goes on setting level -1 on every new
     * connection, which drivers refuse: the pool never works again (HikariCP issues 1944, 2269). Stating the level
     * skips the detection. MySQL and MariaDB default to REPEATABLE READ (and a lower level there would break
     * statement-based binary logging); PostgreSQL and H2 to READ COMMITTED.
     */
    static String defaultIsolation(String jdbcUrl) {
        return jdbcUrl.startsWith("jdbc:mysql:") || jdbcUrl.startsWith("jdbc:mariadb:")
                ? "TRANSACTION_REPEATABLE_READ" : "TRANSACTION_READ_COMMITTED";
    }

    static LockProvider open(JdbcLockProviderFactory.Url url, LockOptions options) {
        // on PostgreSQL in lease mode the provider keeps one connection listening for releases once it waits
        boolean listens = url.subScheme.equals("postgresql") && url.mode == JdbcLockProviders.Mode.LEASE;
        HikariConfig config = config(url.jdbcUrl, url.poolSize + (listens ? 1 : 0), options.operationTimeout());
        config.setPoolName("locksmith-" + url.subScheme + "-" + POOLS.incrementAndGet());
        long timeoutMillis = config.getConnectionTimeout();
        switch (url.subScheme) {
            case "mysql", "mariadb" -> {
                if (!url.sets("connectTimeout")) {
                    config.addDataSourceProperty("connectTimeout", Long.toString(timeoutMillis));
                }
            }
            case "postgresql" -> {
                String seconds = Integer.toString(LockTable.seconds(options.operationTimeout()));
                if (!url.sets("connectTimeout")) {
                    config.addDataSourceProperty("connectTimeout", seconds);
                }
                if (!url.sets("loginTimeout")) {
                    config.addDataSourceProperty("loginTimeout", seconds);
                }
                // The driver connects on a thread of its own that outlives loginTimeout; without a socket timeout
                // it waits forever for a server that accepted the connection but never answers. Every lock
                // operation sets its own network timeout on the connection it borrows.
                if (!url.sets("socketTimeout")) {
                    config.addDataSourceProperty("socketTimeout", seconds);
                }
            }
            default -> {
                // H2 runs in this JVM or over its own TCP protocol without connect options
            }
        }
        HikariDataSource pool = new HikariDataSource(config);
        try {
            return JdbcLockProviders.builder(pool)
                    .mode(url.mode)
                    .table(url.table)
                    .createTable(url.createTable)
                    .options(options)
                    .closing(pool, LockTable.describe(url.jdbcUrl))
                    .build();
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }
}
