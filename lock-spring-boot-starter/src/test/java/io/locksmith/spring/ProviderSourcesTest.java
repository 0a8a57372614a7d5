package io.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockProvider;
import io.locksmith.spring.internal.LockedAdvisor;
import io.locksmith.tests.servers.RedisServer;
import io.locksmith.tests.servers.ZooKeeperServer;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Where the starter's one provider comes from, and what happens when the application has several sources. */
class ProviderSourcesTest {

    @Test
    void fromTheUriWhenItIsSetAndClosedWithTheContext() {
        AtomicReference<LockProvider> seen = new AtomicReference<>();
        Fixtures.application().withPropertyValues("locksmith.uri=" + Fixtures.redis().uri()).run(context -> {
            LockProvider provider = context.getBean(LockProvider.class);
            assertThat(provider.backend()).startsWith("redis://");
            cycle(provider);
            seen.set(provider);
        });
        assertThatThrownBy(() -> seen.get().getLock("after")).as("closed with the context")
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void fromSpringDataRedisPropertiesWithCredentialsThatNeedEncoding() {
        String password = "p@ss:w/rd %&";
        try (RedisServer secured = RedisServer.start("--requirepass", password)) {
            Fixtures.application().withPropertyValues("spring.data.redis.host=" + secured.host(),
                    "spring.data.redis.port=" + secured.port(), "spring.data.redis.password=" + password)
                    .run(context -> {
                        LockProvider provider = context.getBean(LockProvider.class);
                        assertThat(provider.backend()).isEqualTo("redis://" + secured.host() + ":" + secured.port()
                                + "/0").doesNotContain("p@ss");
                        cycle(provider);
                    });
        }
    }

    @Test
    void fromBootsRedisConnectionDetailsAsServiceConnectionsProvideThem() {
        // the connection details bean wins over spring.data.redis.*, which names a port nothing listens on
        Fixtures.application().withPropertyValues("spring.data.redis.port=1")
                .withBean("redisConnectionDetails", connectionDetailsType(), () -> connectionDetails(
                        Fixtures.redis().host(), Fixtures.redis().port()))
                .run(context -> {
                    LockProvider provider = context.getBean(LockProvider.class);
                    assertThat(provider.backend()).isEqualTo("redis://" + Fixtures.redis().host() + ":"
                            + Fixtures.redis().port() + "/0");
                    cycle(provider);
                });
    }

    @Test
    void fromTheDataSourceWhenRedisIsNotConfigured() {
        try (HikariDataSource pool = Fixtures.postgresPool()) {
            Fixtures.application().withBean(DataSource.class, () -> pool).run(context -> {
                LockProvider provider = context.getBean(LockProvider.class);
                assertThat(provider.backend()).contains("HikariDataSource").endsWith("[lease mode]");
                cycle(provider);
            });
        }
    }

    @Test
    void configuredRedisWinsOverADataSourceUnlessTheStoreIsNamed() {
        try (HikariDataSource pool = Fixtures.postgresPool()) {
            Fixtures.onRedis().withBean(DataSource.class, () -> pool).run(context ->
                    assertThat(context).getBean(LockProvider.class).extracting(LockProvider::backend)
                            .asString().startsWith("redis://"));
            Fixtures.onRedis().withBean(DataSource.class, () -> pool)
                    .withPropertyValues("locksmith.store=jdbc", "locksmith.jdbc.mode=session").run(context ->
                            assertThat(context.getBean(LockProvider.class).backend()).endsWith("[session mode]"));
        }
    }

    @Test
    void twoDataSourcesWithoutAPrimaryGiveNoProviderAndALockedCallSaysWhatToDo() {
        try (HikariDataSource one = Fixtures.postgresPool(); HikariDataSource two = Fixtures.postgresPool()) {
            Fixtures.application().withBean("one", DataSource.class, () -> one)
                    .withBean("two", DataSource.class, () -> two)
                    .withUserConfiguration(JobConfig.class)
                    .run(context -> {
                        assertThat(context).hasNotFailed().doesNotHaveBean(LockProvider.class);
                        assertThatThrownBy(() -> context.getBean(Job.class).run())
                                .isInstanceOf(IllegalStateException.class)
                                .hasMessageContaining("needs a LockProvider bean and there is none")
                                .hasMessageContaining("locksmith.uri");
                    });
        }
    }

    @Test
    void theApplicationsOwnProvidersAreUsedByName() {
        Fixtures.application().withUserConfiguration(TwoProvidersConfig.class, JobConfig.class).run(context -> {
            assertThat(context.getBeansOfType(LockProvider.class)).containsOnlyKeys("orders", "reports");
            assertThatThrownBy(() -> context.getBean(Job.class).run()).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("2 LockProvider beans [orders, reports]")
                    .hasMessageContaining("provider = ");
            assertThat(context.getBean(Job.class).runOnReports()).isTrue();
        });
    }

    @Test
    void fromTheApplicationsCuratorFramework() throws Exception {
        try (ZooKeeperServer zookeeper = ZooKeeperServer.start();
                CuratorFramework curator = CuratorFrameworkFactory.newClient(zookeeper.connectString(),
                        new ExponentialBackoffRetry(100, 3))) {
            curator.start();
            Fixtures.application().withBean(CuratorFramework.class, () -> curator).run(context -> {
                LockProvider provider = context.getBean(LockProvider.class);
                assertThat(provider.backend()).startsWith("zookeeper");
                cycle(provider);
            });
        }
    }

    @Test
    void disabledMeansNoProviderAndNoAdvice() {
        Fixtures.onRedis().withPropertyValues("locksmith.enabled=false").run(context ->
                assertThat(context).doesNotHaveBean(LockProvider.class).doesNotHaveBean(LockedAdvisor.class));
    }

    /** Boot's Redis connection details type: DataRedisConnectionDetails on Boot 4, RedisConnectionDetails on 3. */
    @SuppressWarnings("unchecked")
    private static Class<Object> connectionDetailsType() {
        for (String name : List.of("org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails",
                "org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails")) {
            try {
                return (Class<Object>) Class.forName(name);
            } catch (ClassNotFoundException notOnThisLine) {
                // the other Boot line's
            }
        }
        throw new AssertionError("neither Boot line's Redis connection details type is on the class path");
    }

    /** Connection details naming one standalone server, as a service connection makes them. */
    private static Object connectionDetails(String host, int port) {
        Class<?> type = connectionDetailsType();
        ClassLoader loader = type.getClassLoader();
        try {
            Class<?> standaloneType = Class.forName(type.getName() + "$Standalone");
            Object standalone = Proxy.newProxyInstance(loader, new Class<?>[] {standaloneType},
                    (proxy, method, args) -> switch (method.getName()) {
                        case "getHost" -> host;
                        case "getPort" -> port;
                        case "getDatabase" -> 0;
                        case "toString" -> "standalone " + host + ":" + port;
                        case "hashCode" -> System.identityHashCode(proxy);
                        case "equals" -> proxy == args[0];
                        default -> null;
                    });
            return Proxy.newProxyInstance(loader, new Class<?>[] {type}, (proxy, method, args) ->
                    switch (method.getName()) {
                        case "getStandalone" -> standalone;
                        case "toString" -> "connection details of " + host + ":" + port;
                        case "hashCode" -> System.identityHashCode(proxy);
                        case "equals" -> proxy == args[0];
                        default -> null; // no user, password, SSL bundle, sentinel, cluster
                    });
        } catch (ClassNotFoundException e) {
            throw new AssertionError(e);
        }
    }

    private static void cycle(LockProvider provider) {
        DistributedLock lock = provider.getLock("source-check");
        assertThat(lock.tryLock()).isTrue();
        lock.unlock();
    }

    @Configuration(proxyBeanMethods = false)
    static class JobConfig {
        @Bean
        Job job() {
            return new Job();
        }
    }

    /** A job locked through the only provider, and one through a named provider. */
    public static class Job {
        @Locked(name = "'job'")
        public boolean run() {
            return true;
        }

        @Locked(name = "'job'", provider = "reports")
        public boolean runOnReports() {
            return CurrentLock.name().equals("job");
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoProvidersConfig {
        @Bean(destroyMethod = "close")
        LockProvider orders() {
            return LockProvider.open(Fixtures.redis().uri());
        }

        @Bean(destroyMethod = "close")
        LockProvider reports() {
            return LockProvider.open("local://reports");
        }
    }
}
