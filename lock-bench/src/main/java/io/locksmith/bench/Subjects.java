package io.locksmith.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.DistributedReadWriteLock;
import io.locksmith.DistributedSemaphore;
import io.locksmith.LockObserver;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.Permit;
import io.locksmith.micrometer.LockMetrics;
import io.locksmith.micrometer.LockObservations;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisScripts;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.util.SafeEncoder;

/**
 * The subjects under test, by the name used as the JMH {@code subject} parameter: {@code <store>-<library>}, where
 * the library is {@code locksmith} ({@code locksmith-observed}, for {@code --paired} runs only: with
 * lock-micrometer's meters and observations set; {@code locksmith-session}, JDBC in session mode, for
 * {@code --multiprocess} runs only), a peer ({@code redisson}, {@code curator}, {@code spring}, {@code shedlock}) or
 * {@code floor} (the bare client doing the minimum round trips the protocol needs).
 */
final class Subjects {

    /** Every store with its subjects; the first is Locksmith, then its peers, then the floor if any. */
    static final Map<String, String[]> BY_STORE = Map.of(
            "local", new String[] {"local-locksmith"},
            "redis", new String[] {"redis-locksmith", "redis-redisson", "redis-redisson-fenced", "redis-spring-pubsub",
                "redis-spring-spin", "redis-floor", "redis-floor-scripts"},
            "redlock", new String[] {"redlock-locksmith", "redlock-redisson", "redlock-floor", "redlock-floor-scripts"},
            "zookeeper", new String[] {"zookeeper-locksmith", "zookeeper-curator", "zookeeper-floor"},
            "mariadb", new String[] {"mariadb-locksmith", "mariadb-spring", "mariadb-shedlock", "mariadb-floor"},
            "postgres", new String[] {"postgres-locksmith", "postgres-spring", "postgres-shedlock", "postgres-floor"});

    /** The system property that marks the smoke run inside the build. */
    static final String SMOKE = "bench.smoke";

    private Subjects() {
    }

    /** Opens one contender (one client "process") of {@code subject}. */
    static Contender open(String subject) throws Exception {
        return switch (subject) {
            case "local-locksmith" -> locksmith("local://bench");
            case "local-locksmith-observed" -> observed("local://bench");
            case "redis-locksmith" -> locksmith("redis://" + Servers.get(Servers.REDIS));
            case "redis-locksmith-observed" -> observed("redis://" + Servers.get(Servers.REDIS));
            case "redis-locksmith-fifo" -> locksmith("redis://" + Servers.get(Servers.REDIS) + "?fairness=fifo");
            case "redlock-locksmith" -> locksmith("redlock://" + Servers.get(Servers.REDLOCK));
            case "zookeeper-locksmith" -> locksmith("zookeeper://" + Servers.get(Servers.ZOOKEEPER) + "/bench");
            case "mariadb-locksmith" -> locksmith(jdbcUri(Servers.MARIADB));
            case "postgres-locksmith" -> locksmith(jdbcUri(Servers.POSTGRES));
            case "mariadb-locksmith-session" -> locksmith(jdbcUri(Servers.MARIADB) + "&locksmith.mode=session");
            case "postgres-locksmith-session" -> locksmith(jdbcUri(Servers.POSTGRES) + "&locksmith.mode=session");
            case "redis-locksmith-semaphore" -> locksmithSemaphore("redis://" + Servers.get(Servers.REDIS), false);
            case "redis-locksmith-semaphore-stored" ->
                locksmithSemaphore("redis://" + Servers.get(Servers.REDIS), true);
            case "zookeeper-locksmith-semaphore" ->
                locksmithSemaphore("zookeeper://" + Servers.get(Servers.ZOOKEEPER) + "/bench", false);
            case "redis-redisson-semaphore" -> redissonSemaphore(Servers.get(Servers.REDIS));
            case "redis-locksmith-read" -> locksmithReadWrite("redis://" + Servers.get(Servers.REDIS), true);
            case "redis-locksmith-write" -> locksmithReadWrite("redis://" + Servers.get(Servers.REDIS), false);
            case "zookeeper-locksmith-read" ->
                locksmithReadWrite("zookeeper://" + Servers.get(Servers.ZOOKEEPER) + "/bench", true);
            case "zookeeper-locksmith-write" ->
                locksmithReadWrite("zookeeper://" + Servers.get(Servers.ZOOKEEPER) + "/bench", false);
            case "redlock-locksmith-read" -> locksmithReadWrite("redlock://" + Servers.get(Servers.REDLOCK), true);
            case "redlock-locksmith-write" -> locksmithReadWrite("redlock://" + Servers.get(Servers.REDLOCK), false);
            case "mariadb-locksmith-read" -> locksmithReadWrite(jdbcUri(Servers.MARIADB), true);
            case "mariadb-locksmith-write" -> locksmithReadWrite(jdbcUri(Servers.MARIADB), false);
            case "postgres-locksmith-read" -> locksmithReadWrite(jdbcUri(Servers.POSTGRES), true);
            case "postgres-locksmith-write" -> locksmithReadWrite(jdbcUri(Servers.POSTGRES), false);
            case "mariadb-locksmith-session-read" ->
                locksmithReadWrite(jdbcUri(Servers.MARIADB) + "&locksmith.mode=session", true);
            case "mariadb-locksmith-session-write" ->
                locksmithReadWrite(jdbcUri(Servers.MARIADB) + "&locksmith.mode=session", false);
            case "postgres-locksmith-session-read" ->
                locksmithReadWrite(jdbcUri(Servers.POSTGRES) + "&locksmith.mode=session", true);
            case "postgres-locksmith-session-write" ->
                locksmithReadWrite(jdbcUri(Servers.POSTGRES) + "&locksmith.mode=session", false);
            case "redis-redisson-read" -> redissonReadWrite(Servers.get(Servers.REDIS), true);
            case "redis-redisson-write" -> redissonReadWrite(Servers.get(Servers.REDIS), false);
            case "zookeeper-curator-read" -> curatorReadWrite(true);
            case "zookeeper-curator-write" -> curatorReadWrite(false);
            case "zookeeper-curator-semaphore" -> curatorSemaphore();
            case "redis-redisson" -> redisson(Servers.get(Servers.REDIS), RedissonKind.PLAIN);
            case "redis-redisson-fenced" -> redisson(Servers.get(Servers.REDIS), RedissonKind.FENCED);
            case "redis-redisson-fair" -> redisson(Servers.get(Servers.REDIS), RedissonKind.FAIR);
            case "redis-spring-pubsub" -> springRedis(RedisLockRegistry.RedisLockType.PUB_SUB_LOCK);
            case "redis-spring-spin" -> springRedis(RedisLockRegistry.RedisLockType.SPIN_LOCK);
            case "mariadb-shedlock" -> shedLock(Servers.MARIADB, "timestamp(3)");
            case "postgres-shedlock" -> shedLock(Servers.POSTGRES, "timestamp");
            case "redlock-redisson" -> redissonRedLock(Servers.get(Servers.REDLOCK).split(","));
            case "zookeeper-curator" -> curator();
            case "mariadb-spring" -> spring(Servers.MARIADB, "schema-mysql.sql");
            case "postgres-spring" -> spring(Servers.POSTGRES, "schema-postgresql.sql");
            case "redis-floor" -> redisFloor();
            case "redis-floor-scripts" -> redisScriptsFloor();
            case "redlock-floor" -> redlockFloor(Servers.get(Servers.REDLOCK).split(","));
            case "redlock-floor-scripts" -> redlockScriptsFloor(Servers.get(Servers.REDLOCK).split(","));
            case "zookeeper-floor" -> zookeeperFloor();
            case "mariadb-floor" -> jdbcFloor(Servers.MARIADB);
            case "postgres-floor" -> jdbcFloor(Servers.POSTGRES);
            default -> throw new IllegalArgumentException("Unknown subject '" + subject + "'");
        };
    }

    private static String jdbcUri(String database) {
        String url = Servers.get(database + ".url");
        String password = Servers.get(database + ".password");
        return url + (url.contains("?") ? "&" : "?") + "user=" + Servers.get(database + ".user")
                + (password.isEmpty() ? "" : "&password=" + password);
    }

    private static Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(Servers.get(database + ".url"), Servers.get(database + ".user"),
                Servers.get(database + ".password"));
    }

    private static Contender locksmith(String uri) {
        return locksmith(uri, LockOptions.defaults());
    }

    /** Locksmith with lock-micrometer's meters and observations set, into in-memory registries. */
    private static Contender observed(String uri) {
        ObservationRegistry observations = ObservationRegistry.create();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        return locksmith(uri, LockOptions.builder()
                .observer(LockObserver.composite(LockMetrics.builder(meters).build(),
                        LockObservations.of(observations)))
                .build());
    }

    private static Contender locksmith(String uri, LockOptions options) {
        LockProvider provider = LockProvider.open(uri, options);
        Map<String, DistributedLock> locks = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return locks.computeIfAbsent(name, provider::getLock);
            }

            @Override
            public void close() {
                provider.close();
            }
        };
    }

    /** How many permits the semaphore subjects' semaphores have (every cycle finds all of them free). */
    static final int PERMITS = 4;

    /**
     * A semaphore as a {@code Lock} for the uncontended cycle: {@code lock()} takes one permit, {@code unlock()}
     * gives back the one this thread took last.
     */
    private abstract static class PermitLock<P> extends LockAdapter {
        private final ThreadLocal<java.util.ArrayDeque<P>> held = ThreadLocal.withInitial(java.util.ArrayDeque::new);

        abstract P take() throws Exception;

        abstract void giveBack(P permit) throws Exception;

        @Override
        public void lock() {
            try {
                held.get().push(take());
            } catch (Exception e) {
                throw new IllegalStateException("taking a permit failed", e);
            }
        }

        @Override
        public void unlock() {
            try {
                giveBack(held.get().pop());
            } catch (Exception e) {
                throw new IllegalStateException("giving a permit back failed", e);
            }
        }
    }

    /**
     * Locksmith's {@code DistributedSemaphore}: each permit a hold with a renewed lease; {@code stored}: with the
     * permit count kept in the store ({@code getSemaphore(name)}), read at every take.
     */
    private static Contender locksmithSemaphore(String uri, boolean stored) {
        LockProvider provider = LockProvider.open(uri);
        Map<String, Lock> semaphores = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return semaphores.computeIfAbsent(name, n -> {
                    String semaphoreName = "semaphore-" + (stored ? "stored-" : "") + n;
                    if (stored) {
                        provider.setSemaphorePermits(semaphoreName, PERMITS);
                    }
                    DistributedSemaphore semaphore = stored ? provider.getSemaphore(semaphoreName)
                            : provider.getSemaphore(semaphoreName, PERMITS);
                    return new PermitLock<Permit>() {
                        @Override
                        Permit take() throws InterruptedException {
                            return semaphore.acquire();
                        }

                        @Override
                        void giveBack(Permit permit) {
                            permit.close();
                        }
                    };
                });
            }

            @Override
            public void close() {
                provider.close();
            }
        };
    }

    /**
     * Redisson's {@code RPermitExpirableSemaphore}, each permit with a 30 s lease (Locksmith's default lease;
     * Redisson does not renew a permit's lease).
     */
    private static Contender redissonSemaphore(String hostPort) {
        RedissonClient client = Redisson.create(redissonConfig(hostPort));
        Map<String, Lock> semaphores = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return semaphores.computeIfAbsent(name, n -> {
                    RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore("redisson-semaphore:" + n);
                    semaphore.trySetPermits(PERMITS);
                    return new PermitLock<String>() {
                        @Override
                        String take() throws InterruptedException {
                            return semaphore.acquire(30, TimeUnit.SECONDS);
                        }

                        @Override
                        void giveBack(String permit) {
                            semaphore.release(permit);
                        }
                    };
                });
            }

            @Override
            public void close() {
                client.shutdown(0, 5, TimeUnit.SECONDS);
            }
        };
    }

    /** Curator's {@code InterProcessSemaphoreV2}: a lease is an ephemeral node, so it ends with the session. */
    private static Contender curatorSemaphore() throws InterruptedException {
        CuratorFramework client = curatorClient();
        Map<String, Lock> semaphores = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return semaphores.computeIfAbsent(name, n -> {
                    InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, "/curator-semaphore/" + n,
                            PERMITS);
                    return new PermitLock<Lease>() {
                        @Override
                        Lease take() throws Exception {
                            return semaphore.acquire();
                        }

                        @Override
                        void giveBack(Lease lease) {
                            semaphore.returnLease(lease);
                        }
                    };
                });
            }

            @Override
            public void close() {
                client.close();
            }
        };
    }

    /** One side of Locksmith's {@code DistributedReadWriteLock}: the read lock, or the write lock. */
    private static Contender locksmithReadWrite(String uri, boolean read) {
        LockProvider provider = LockProvider.open(uri);
        Map<String, Lock> locks = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return locks.computeIfAbsent(name, n -> {
                    DistributedReadWriteLock rw = provider.getReadWriteLock("rw-" + n);
                    return read ? rw.readLock() : rw.writeLock();
                });
            }

            @Override
            public void close() {
                provider.close();
            }
        };
    }

    /** One side of Redisson's {@code RReadWriteLock}, renewed by its watchdog like {@code RLock}. */
    private static Contender redissonReadWrite(String hostPort, boolean read) {
        RedissonClient client = Redisson.create(redissonConfig(hostPort));
        Map<String, Lock> locks = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return locks.computeIfAbsent(name, n -> {
                    RReadWriteLock rw = client.getReadWriteLock("redisson-rw:" + n);
                    return read ? rw.readLock() : rw.writeLock();
                });
            }

            @Override
            public void close() {
                client.shutdown(0, 5, TimeUnit.SECONDS);
            }
        };
    }

    /** One side of Curator's {@code InterProcessReadWriteLock}: read and write nodes in one sequence. */
    private static Contender curatorReadWrite(boolean read) throws InterruptedException {
        CuratorFramework client = curatorClient();
        Map<String, Lock> locks = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return locks.computeIfAbsent(name, n -> {
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, "/curator-rw/" + n);
                    return curatorLock(read ? rw.readLock() : rw.writeLock(), n);
                });
            }

            @Override
            public void close() {
                client.close();
            }
        };
    }

    /** Which of Redisson's Redis locks: {@code RLock}, {@code RFencedLock} or the FIFO {@code RFairLock}. */
    private enum RedissonKind { PLAIN, FENCED, FAIR }

    private static Contender redisson(String hostPort, RedissonKind kind) {
        RedissonClient client = Redisson.create(redissonConfig(hostPort));
        Map<String, RLock> locks = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return locks.computeIfAbsent(name, n -> switch (kind) {
                    case PLAIN -> client.getLock("redisson:" + n);
                    case FENCED -> client.getFencedLock("redisson-fenced:" + n);
                    case FAIR -> client.getFairLock("redisson-fair:" + n);
                });
            }

            @Override
            public void close() {
                client.shutdown(0, 5, TimeUnit.SECONDS);
            }
        };
    }

    /**
     * Redisson's defaults; the smoke run ({@code -Dbench.smoke=true}) only checks that the benchmarks work, so it
     * spares each of its many short-lived clients the 24 idle connections Redisson opens up front.
     */
    static Config redissonConfig(String hostPort) {
        Config config = new Config();
        var server = config.useSingleServer().setAddress("redis://" + hostPort);
        if (Boolean.getBoolean(SMOKE)) {
            server.setConnectionMinimumIdleSize(1);
        }
        return config;
    }

    private static Contender springRedis(RedisLockRegistry.RedisLockType type) {
        String[] hostPort = Servers.get(Servers.REDIS).split(":");
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(hostPort[0], Integer.parseInt(hostPort[1])));
        factory.afterPropertiesSet();
        factory.start();
        RedisLockRegistry registry = new RedisLockRegistry(factory, "spring-" + type.name().toLowerCase(Locale.ROOT));
        registry.setRedisLockType(type);
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return registry.obtain(name);
            }

            @Override
            public void close() {
                registry.destroy();
                factory.destroy();
            }
        };
    }

    /**
     * ShedLock's JDBC provider ({@code JdbcTemplateLockProvider}, the only one in ShedLock 7, with its defaults: the
     * client's clock, a transaction per statement). ShedLock never waits (it skips a task whose lock is taken), so it fits the
     * uncontended cycle only: here {@code lock()} expects the lock free and fails otherwise.
     */
    private static Contender shedLock(String database, String timestamp) throws SQLException {
        try (Connection connection = connect(database); Statement statement = connection.createStatement()) {
            statement.execute("create table if not exists shedlock (name varchar(64) not null, lock_until "
                    + timestamp + " not null, locked_at " + timestamp + " not null, locked_by varchar(255) not null,"
                    + " primary key (name))");
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(Servers.get(database + ".url"));
        config.setUsername(Servers.get(database + ".user"));
        config.setPassword(Servers.get(database + ".password"));
        config.setMaximumPoolSize(10);
        HikariDataSource dataSource = new HikariDataSource(config);
        JdbcTemplateLockProvider provider = new JdbcTemplateLockProvider(dataSource);
        Map<String, SimpleLock> held = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return new LockAdapter() {
                    @Override
                    public void lock() {
                        // ShedLock's own clock: it truncates to milliseconds, as its SQL comparisons expect
                        SimpleLock lock = provider.lock(new LockConfiguration(ClockProvider.now(), name,
                                Duration.ofSeconds(30), Duration.ZERO)).orElseThrow(() -> new IllegalStateException(
                                        "ShedLock found " + name + " taken; it only fits uncontended scenarios"));
                        held.put(name, lock);
                    }

                    @Override
                    public void unlock() {
                        held.remove(name).unlock();
                    }
                };
            }

            @Override
            public void close() {
                dataSource.close();
            }
        };
    }

    @SuppressWarnings("deprecation") // RedissonRedLock is Redisson's Redlock over independent masters
    private static Contender redissonRedLock(String[] masters) {
        RedissonClient[] clients = Arrays.stream(masters).map(master -> Redisson.create(redissonConfig(master)))
                .toArray(RedissonClient[]::new);
        Map<String, Lock> locks = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return locks.computeIfAbsent(name, n -> new RedissonRedLock(Arrays.stream(clients)
                        .map(c -> c.getLock("redisson:" + n)).toArray(RLock[]::new)));
            }

            @Override
            public void close() {
                for (RedissonClient client : clients) {
                    client.shutdown(0, 5, TimeUnit.SECONDS);
                }
            }
        };
    }

    private static CuratorFramework curatorClient() throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(Servers.get(Servers.ZOOKEEPER),
                new ExponentialBackoffRetry(100, 3));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("Curator did not connect to " + Servers.get(Servers.ZOOKEEPER));
        }
        return client;
    }

    private static Contender curator() throws InterruptedException {
        CuratorFramework client = curatorClient();
        Map<String, Lock> locks = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return locks.computeIfAbsent(name, n -> curatorLock(new InterProcessMutex(client, "/curator/" + n), n));
            }

            @Override
            public void close() {
                client.close();
            }
        };
    }

    /** A Curator lock recipe as a {@code Lock}. */
    private static Lock curatorLock(InterProcessLock recipe, String name) {
        return new LockAdapter() {
            @Override
            public void lock() {
                try {
                    recipe.acquire();
                } catch (Exception e) {
                    throw new IllegalStateException("Curator acquire of " + name, e);
                }
            }

            @Override
            public void unlock() {
                try {
                    recipe.release();
                } catch (Exception e) {
                    throw new IllegalStateException("Curator release of " + name, e);
                }
            }
        };
    }

    private static Contender spring(String database, String schema) throws SQLException, IOException {
        createSpringTable(database, schema);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(Servers.get(database + ".url"));
        config.setUsername(Servers.get(database + ".user"));
        config.setPassword(Servers.get(database + ".password"));
        config.setMaximumPoolSize(10);
        HikariDataSource dataSource = new HikariDataSource(config);
        DefaultLockRepository repository = new DefaultLockRepository(dataSource);
        repository.setTransactionManager(new DataSourceTransactionManager(dataSource));
        repository.afterPropertiesSet();
        repository.afterSingletonsInstantiated();
        JdbcLockRegistry registry = new JdbcLockRegistry(repository);
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return registry.obtain(name);
            }

            @Override
            public void close() {
                repository.close();
                dataSource.close();
            }
        };
    }

    /** Creates Spring Integration's INT_LOCK table from the DDL its jar ships, unless it exists. */
    private static void createSpringTable(String database, String schema) throws SQLException, IOException {
        String ddl;
        try (InputStream in = DefaultLockRepository.class.getResourceAsStream("/org/springframework/integration/jdbc/"
                + schema)) {
            if (in == null) {
                throw new IllegalStateException("spring-integration-jdbc ships no " + schema);
            }
            ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        String create = Arrays.stream(ddl.split(";"))
                .filter(statement -> statement.contains("CREATE TABLE INT_LOCK "))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException(schema + " has no CREATE TABLE INT_LOCK"));
        try (Connection connection = connect(database)) {
            if (hasSpringTable(connection)) {
                return;
            }
            try (Statement statement = connection.createStatement()) {
                statement.execute(create.strip());
            } catch (SQLException e) {
                // the worker processes of a multi-process run open their subjects at once: another one may have
                // created it between the look and the CREATE
                if (!hasSpringTable(connection)) {
                    throw e;
                }
            }
        }
    }

    private static boolean hasSpringTable(Connection connection) throws SQLException {
        try (var tables = connection.getMetaData().getTables(null, null, "%", new String[] {"TABLE"})) {
            while (tables.next()) {
                if (tables.getString("TABLE_NAME").equalsIgnoreCase("INT_LOCK")) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Two script round trips on one connection: the least a Redis lock needs (acquire, release). */
    private static Contender redisFloor() {
        String[] hostPort = Servers.get(Servers.REDIS).split(":");
        Jedis jedis = new Jedis(hostPort[0], Integer.parseInt(hostPort[1]));
        String sha = jedis.scriptLoad("return 1");
        return new Contender() {
            @Override
            public Lock lock(String name) {
                String key = "floor:" + name;
                return new LockAdapter() {
                    @Override
                    public void lock() {
                        synchronized (jedis) {
                            jedis.evalsha(sha, 1, key);
                        }
                    }

                    @Override
                    public void unlock() {
                        synchronized (jedis) {
                            jedis.evalsha(sha, 1, key);
                        }
                    }
                };
            }

            @Override
            public void close() {
                jedis.close();
            }
        };
    }

    /**
     * The protocol's own floor: Locksmith's acquire and release scripts, as the Redis backend calls them, on one
     * bare connection. Against {@code redis-floor} it shows what the scripts' work in the server adds to a round
     * trip; against {@code redis-locksmith}, what the client side adds.
     */
    private static Contender redisScriptsFloor() {
        String[] hostPort = Servers.get(Servers.REDIS).split(":");
        Jedis jedis = new Jedis(hostPort[0], Integer.parseInt(hostPort[1]));
        String acquire = jedis.scriptLoad(RedisScripts.ACQUIRE.text());
        String release = jedis.scriptLoad(RedisScripts.RELEASE.text());
        String owner = UUID.randomUUID().toString().replace("-", "");
        String lease = "30000";
        long[] attempts = {0};
        return new Contender() {
            @Override
            public Lock lock(String name) {
                RedisKeys keys = new RedisKeys("floor-scripts");
                List<String> acquireKeys = List.of(keys.lock(name), keys.fence(name), keys.cancelled(name),
                        keys.claim(name), keys.queue(name), keys.queueDeadlines(name));
                List<String> releaseKeys = List.of(keys.lock(name), keys.claim(name), keys.queue(name),
                        keys.queueDeadlines(name));
                String channel = keys.channel(name);
                String[] attempt = {""};
                return new LockAdapter() {
                    @Override
                    public void lock() {
                        synchronized (jedis) {
                            attempt[0] = Long.toString(++attempts[0]);
                            Object token = jedis.evalsha(acquire, acquireKeys, List.of(owner, lease, attempt[0]));
                            if (!(token instanceof Long t) || t <= 0) {
                                throw new IllegalStateException("floor lock " + name + " was not free: " + token);
                            }
                        }
                    }

                    @Override
                    public void unlock() {
                        synchronized (jedis) {
                            jedis.evalsha(release, releaseKeys, List.of(owner, attempt[0], channel));
                        }
                    }
                };
            }

            @Override
            public void close() {
                jedis.close();
            }
        };
    }

    /**
     * The floor of a parallel fan-out to the Redlock masters: one thread writes a trivial loaded script call to
     * each master's connection, then reads the answers, to acquire and again to release. Against
     * {@code redis-floor} it shows what talking to five servers at once costs on this machine whatever the
     * client does; against {@code redlock-locksmith}, what Locksmith adds.
     */
    private static Contender redlockFloor(String[] masters) {
        redis.clients.jedis.Connection[] connections = connectAll(masters);
        String sha = loadEverywhere(connections, "return 1");
        String[] call = {sha, "1", "floor:redlock"};
        return fanOutFloor(connections, () -> call, () -> call, false);
    }

    /**
     * The protocol's floor over the Redlock masters: Locksmith's own acquire and release scripts, as its Redis
     * backend calls them, written to all five masters before reading their answers. Against {@code redlock-floor}
     * it shows what the scripts' work on five servers adds; against {@code redlock-locksmith}, what the client
     * side adds.
     */
    private static Contender redlockScriptsFloor(String[] masters) {
        redis.clients.jedis.Connection[] connections = connectAll(masters);
        String acquire = loadEverywhere(connections, RedisScripts.ACQUIRE.text());
        String release = loadEverywhere(connections, RedisScripts.RELEASE.text());
        String owner = UUID.randomUUID().toString().replace("-", "");
        RedisKeys redisKeys = new RedisKeys("floor-scripts");
        List<String> keys = List.of(redisKeys.lock("redlock"), redisKeys.fence("redlock"),
                redisKeys.cancelled("redlock"), redisKeys.claim("redlock"), redisKeys.queue("redlock"),
                redisKeys.queueDeadlines("redlock"), redisKeys.channel("redlock"));
        long[] attempts = {0};
        String[] attempt = {""};
        return fanOutFloor(connections, () -> {
            attempt[0] = Long.toString(++attempts[0]);
            return new String[] {acquire, "6", keys.get(0), keys.get(1), keys.get(2), keys.get(3), keys.get(4),
                keys.get(5), owner, "30000", attempt[0]};
        }, () -> new String[] {release, "4", keys.get(0), keys.get(3), keys.get(4), keys.get(5), owner, attempt[0],
            keys.get(6)}, true);
    }

    private static redis.clients.jedis.Connection[] connectAll(String[] masters) {
        redis.clients.jedis.Connection[] connections = new redis.clients.jedis.Connection[masters.length];
        for (int i = 0; i < masters.length; i++) {
            String[] hostPort = masters[i].split(":");
            connections[i] = new redis.clients.jedis.Connection(hostPort[0], Integer.parseInt(hostPort[1]));
        }
        return connections;
    }

    /** Loads {@code text} on every connection; returns its SHA. */
    private static String loadEverywhere(redis.clients.jedis.Connection[] connections, String text) {
        String sha = null;
        for (redis.clients.jedis.Connection connection : connections) {
            connection.sendCommand(Protocol.Command.SCRIPT, "LOAD", text);
            sha = SafeEncoder.encode((byte[]) connection.getOne());
        }
        return sha;
    }

    /**
     * A lock whose acquire and release each write one {@code EVALSHA} (the arguments after the command name) to
     * every connection before reading the answers: the parallel fan-out from one thread, with no client machinery.
     * With {@code tokens}, every master must answer an acquisition with a fencing token, as Locksmith's script
     * does when it takes the lock.
     */
    private static Contender fanOutFloor(redis.clients.jedis.Connection[] connections,
            java.util.function.Supplier<String[]> acquire, java.util.function.Supplier<String[]> release,
            boolean tokens) {
        java.util.function.BiConsumer<String[], Boolean> round = (args, acquiring) -> {
            for (redis.clients.jedis.Connection connection : connections) {
                connection.sendCommand(Protocol.Command.EVALSHA, args);
                connection.getMany(0); // flushes without reading: every call is on the wire before any answer
            }
            for (redis.clients.jedis.Connection connection : connections) {
                Object answer = connection.getOne();
                if (acquiring && tokens && !(answer instanceof Long token && token > 0)) {
                    throw new IllegalStateException("floor lock was not free on " + connection + ": " + answer);
                }
            }
        };
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return new LockAdapter() {
                    @Override
                    public void lock() {
                        synchronized (connections) {
                            round.accept(acquire.get(), true);
                        }
                    }

                    @Override
                    public void unlock() {
                        synchronized (connections) {
                            round.accept(release.get(), false);
                        }
                    }
                };
            }

            @Override
            public void close() {
                for (redis.clients.jedis.Connection connection : connections) {
                    connection.close();
                }
            }
        };
    }

    /** Create an ephemeral sequential node and list its siblings to acquire, delete it to release. */
    private static Contender zookeeperFloor() throws InterruptedException {
        CuratorFramework client = curatorClient();
        Map<String, String> held = new ConcurrentHashMap<>();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                String parent = "/floor/" + name;
                return new LockAdapter() {
                    @Override
                    public void lock() {
                        try {
                            String node = client.create().creatingParentContainersIfNeeded()
                                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(parent + "/n-");
                            client.getChildren().forPath(parent);
                            held.put(name, node);
                        } catch (Exception e) {
                            throw new IllegalStateException("floor acquire of " + name, e);
                        }
                    }

                    @Override
                    public void unlock() {
                        try {
                            client.delete().forPath(held.remove(name));
                        } catch (Exception e) {
                            throw new IllegalStateException("floor release of " + name, e);
                        }
                    }
                };
            }

            @Override
            public void close() {
                client.close();
            }
        };
    }

    /** One UPDATE per acquire and one per release on one bare auto-commit connection. */
    private static Contender jdbcFloor(String database) throws SQLException {
        Connection connection = connect(database);
        try (Statement statement = connection.createStatement()) {
            statement.execute("create table if not exists bench_floor"
                    + " (name varchar(255) primary key, owner varchar(64))");
        }
        String owner = UUID.randomUUID().toString();
        PreparedStatement acquire = connection.prepareStatement(
                "update bench_floor set owner = ? where name = ? and owner is null");
        PreparedStatement release = connection.prepareStatement(
                "update bench_floor set owner = null where name = ? and owner = ?");
        Set<String> rows = ConcurrentHashMap.newKeySet();
        return new Contender() {
            @Override
            public Lock lock(String name) {
                return new LockAdapter() {
                    @Override
                    public void lock() {
                        try {
                            synchronized (connection) {
                                if (rows.add(name)) {
                                    try (Statement statement = connection.createStatement()) {
                                        statement.executeUpdate("delete from bench_floor where name = '" + name
                                                + "'");
                                        statement.executeUpdate("insert into bench_floor values ('" + name
                                                + "', null)");
                                    }
                                }
                                acquire.setString(1, owner);
                                acquire.setString(2, name);
                                if (acquire.executeUpdate() != 1) {
                                    throw new IllegalStateException("floor row " + name + " was not free");
                                }
                            }
                        } catch (SQLException e) {
                            throw new IllegalStateException("floor acquire of " + name, e);
                        }
                    }

                    @Override
                    public void unlock() {
                        try {
                            synchronized (connection) {
                                release.setString(1, name);
                                release.setString(2, owner);
                                release.executeUpdate();
                            }
                        } catch (SQLException e) {
                            throw new IllegalStateException("floor release of " + name, e);
                        }
                    }
                };
            }

            @Override
            public void close() {
                try {
                    connection.close();
                } catch (SQLException e) {
                    throw new IllegalStateException("closing the floor's connection", e);
                }
            }
        };
    }
}
