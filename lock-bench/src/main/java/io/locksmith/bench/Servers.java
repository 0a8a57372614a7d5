package io.locksmith.bench;

import io.locksmith.tests.servers.DatabaseServer;
import io.locksmith.tests.servers.RedisServer;
import io.locksmith.tests.servers.ZooKeeperServer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The servers of one benchmark run, started once by the lock-tests fixtures and handed to every JMH fork and every
 * {@link MultiProcess} worker as {@code -Dbench.*} system properties, so every subject of the run talks to the very
 * same servers.
 */
final class Servers implements AutoCloseable {

    static final String REDIS = "bench.redis";
    static final String REDLOCK = "bench.redlock";
    static final String ZOOKEEPER = "bench.zookeeper";
    static final String MARIADB = "bench.mariadb";
    static final String POSTGRES = "bench.postgres";
    /**
     * How many Redlock masters a run starts, read from the coordinator's system properties (default
     * {@value #DEFAULT_REDLOCK_MASTERS}); the issue that asked for the multi-process table measured Redlock over 3.
     */
    static final String REDLOCK_MASTERS = "bench.redlock.masters";
    static final int DEFAULT_REDLOCK_MASTERS = 5;

    private final List<AutoCloseable> owned = new ArrayList<>();
    private final Map<String, String> properties = new LinkedHashMap<>();
    private final Map<String, String> descriptions = new LinkedHashMap<>();

    /** The stores a subject's name starts with ({@code redis-locksmith} is a {@code redis} subject). */
    static final List<String> STORES = List.of("redis", "redlock", "zookeeper", "mariadb", "postgres");

    /** Starts (or finds) every server; a server that cannot be had fails the run, saying what to install. */
    static Servers start() {
        return start(STORES);
    }

    /**
     * Starts (or finds) the servers of the given {@link #STORES} only, for a run whose subjects need no others;
     * {@code local} needs none.
     */
    static Servers start(Collection<String> stores) {
        Servers servers = new Servers();
        try {
            if (stores.contains("redis")) {
                RedisServer redis = servers.own(RedisServer.start());
                servers.properties.put(REDIS, redis.host() + ":" + redis.port());
                servers.descriptions.put("Redis", redis.toString());
            }
            if (stores.contains("redlock")) {
                List<RedisServer> masters = RedisServer.startIndependent(
                        redlockMasters(System.getProperty(REDLOCK_MASTERS)));
                masters.forEach(servers::own);
                servers.properties.put(REDLOCK, masters.stream().map(m -> m.host() + ":" + m.port())
                        .collect(Collectors.joining(",")));
                servers.descriptions.put("Redlock masters", masters.size() + " × " + masters.get(0));
            }
            if (stores.contains("zookeeper")) {
                ZooKeeperServer zookeeper = servers.own(ZooKeeperServer.start());
                servers.properties.put(ZOOKEEPER, zookeeper.connectString());
                servers.descriptions.put("ZooKeeper", zookeeper.toString());
            }
            if (stores.contains("mariadb")) {
                DatabaseServer mariadb = servers.own(DatabaseServer.startMariaDb());
                servers.putDatabase(MARIADB, mariadb);
                servers.descriptions.put("MariaDB", mariadb.toString());
            }
            if (stores.contains("postgres")) {
                DatabaseServer postgres = servers.own(DatabaseServer.startPostgres());
                servers.putDatabase(POSTGRES, postgres);
                servers.descriptions.put("PostgreSQL", postgres.toString());
            }
            servers.properties.forEach(System::setProperty);
            return servers;
        } catch (RuntimeException e) {
            servers.close();
            throw e;
        }
    }

    /** The number of Redlock masters {@code value} of {@link #REDLOCK_MASTERS} asks for (null: the default). */
    static int redlockMasters(String value) {
        if (value == null) {
            return DEFAULT_REDLOCK_MASTERS;
        }
        try {
            int masters = Integer.parseInt(value.trim());
            if (masters >= 1) {
                return masters;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("-D" + REDLOCK_MASTERS + "=" + value
                + ": expected a whole number of Redlock masters, at least 1 (default " + DEFAULT_REDLOCK_MASTERS + ")");
    }

    private void putDatabase(String key, DatabaseServer server) {
        properties.put(key + ".url", server.jdbcUrl());
        properties.put(key + ".user", server.user());
        properties.put(key + ".password", server.password() == null ? "" : server.password());
    }

    private <T extends AutoCloseable> T own(T server) {
        owned.add(server);
        return server;
    }

    /** The {@code -D} arguments that point a forked JVM at these servers. */
    List<String> jvmArgs() {
        return properties.entrySet().stream().map(e -> "-D" + e.getKey() + "=" + e.getValue()).toList();
    }

    /** What each server is (kind, version, address), for the report. */
    Map<String, String> descriptions() {
        return descriptions;
    }

    /** The value of a {@code bench.*} property, set by {@link #start()} in this JVM or passed to a fork. */
    static String get(String key) {
        String value = System.getProperty(key);
        if (value == null) {
            throw new IllegalStateException("System property " + key + " is not set: run the benchmarks through"
                    + " io.locksmith.bench.BenchMain (scripts/bench), which starts the servers");
        }
        return value;
    }

    @Override
    public void close() {
        for (int i = owned.size() - 1; i >= 0; i--) {
            try {
                owned.get(i).close();
            } catch (Exception e) {
                System.err.println("closing " + owned.get(i) + ": " + e);
            }
        }
    }
}
