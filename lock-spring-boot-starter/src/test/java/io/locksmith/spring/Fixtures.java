package io.locksmith.spring;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders;
import io.locksmith.spring.autoconfigure.LocksmithAutoConfiguration;
import io.locksmith.spring.boot3.Boot3HealthAutoConfiguration;
import io.locksmith.spring.boot3.Boot3RedisAutoConfiguration;
import io.locksmith.tests.servers.DatabaseServer;
import io.locksmith.tests.servers.RedisServer;
import java.util.UUID;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The servers and application contexts the starter's tests share: real Redis (a server of the tests' own) and
 * PostgreSQL (the machine's), as an application would have them; nothing here is specific to one Boot line.
 */
final class Fixtures {

    private static RedisServer redis;
    private static DatabaseServer postgres;

    private Fixtures() {
    }

    static synchronized RedisServer redis() {
        if (redis == null) {
            redis = RedisServer.start();
        }
        return redis;
    }

    static synchronized DatabaseServer postgres() {
        if (postgres == null) {
            postgres = DatabaseServer.startPostgres();
        }
        return postgres;
    }

    /**
     * An application with the starter and nothing else, each run in a namespace of its own: the starter's two
     * auto-configurations, as its jars list them (Boot 3's health one stands aside on Boot 4 and the reverse).
     */
    static ApplicationContextRunner application() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class,
                        Boot3HealthAutoConfiguration.class, Boot3RedisAutoConfiguration.class))
                .withPropertyValues("locksmith.namespace=t" + UUID.randomUUID().toString().substring(0, 8));
    }

    /** The same application on Redis through spring.data.redis.*, as a Boot application configures it. */
    static ApplicationContextRunner onRedis() {
        return application().withPropertyValues("spring.data.redis.host=" + redis().host(),
                "spring.data.redis.port=" + redis().port());
    }

    /** A pool on the PostgreSQL test database, configured as Boot configures Hikari. */
    static HikariDataSource postgresPool() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(postgres().jdbcUrl());
        config.setUsername(postgres().user());
        config.setPassword(postgres().password());
        config.setMaximumPoolSize(10);
        return new HikariDataSource(config);
    }

    /** Another instance of the application on Redis: a provider of its own on the same server and namespace. */
    static LockProvider otherRedisInstance(LockProvider ours) {
        return LockProvider.open(redis().uri(), sameNamespace(ours));
    }

    /** Another instance of the application on PostgreSQL, through a pool of its own. */
    static LockProvider otherJdbcInstance(LockProvider ours, HikariDataSource pool) {
        return JdbcLockProviders.builder(pool).options(sameNamespace(ours)).build();
    }

    private static LockOptions sameNamespace(LockProvider ours) {
        return LockOptions.builder().namespace(ours.options().namespace()).build();
    }
}
