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
     * before the first use, and eviction of connections H2 reports broken.
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
        return config;
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
