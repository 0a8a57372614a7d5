package io.locksmith.spring.autoconfigure;

import io.locksmith.LockObserver;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spring.LockOptionsCustomizer;
import io.locksmith.spring.LocksmithProperties;
import io.locksmith.spring.LocksmithProperties.Store;
import io.locksmith.spring.internal.HeldLocks;
import io.locksmith.spring.support.RedisTarget;
import java.util.Locale;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.ClassUtils;

/**
 * Locksmith for Spring Boot: one {@link LockProvider} bean, {@code @Locked}, meters, Actuator endpoint and health.
 *
 * <p>The provider comes from the first of these that applies, unless the application declares its own
 * {@link LockProvider} bean(s): {@code locksmith.uri}; Redis from {@code spring.data.redis.*} (with lock-redis);
 * the application's {@code CuratorFramework} bean (with lock-zookeeper); its {@code DataSource}, in lease mode
 * with the table created if missing (with lock-jdbc). {@code locksmith.store} picks one of the last three when the
 * application has several. The provider is closed when the context closes.
 */
@AutoConfiguration(afterName = {
    // the connections and registries the provider may be built over or report to, on Boot 3.5 and 4.0
    "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration",
    "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration"})
@ConditionalOnClass(LockProvider.class)
@ConditionalOnBooleanProperty(name = "locksmith.enabled", matchIfMissing = true)
@EnableConfigurationProperties(LocksmithProperties.class)
@Import({
    Boot4RedisConfiguration.class,
    LocksmithAutoConfiguration.FromUri.class,
    LocksmithAutoConfiguration.FromRedis.class,
    LocksmithAutoConfiguration.FromCurator.class,
    LocksmithAutoConfiguration.FromDataSource.class,
    LockedAdvisorConfiguration.class,
    LocksmithMetricsConfiguration.class,
    LocksmithEndpointConfiguration.class,
    LocksmithHealthConfiguration.class})
public class LocksmithAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(LocksmithAutoConfiguration.class);

    /** The holds of the providers the starter builds, for the Actuator endpoint. */
    @Bean
    @ConditionalOnMissingBean
    public HeldLocks locksmithHeldLocks() {
        return new HeldLocks();
    }

    /** The options of the providers the starter builds: the properties, every LockObserver bean, the customizers. */
    static LockOptions options(LocksmithProperties properties, ObjectProvider<LockObserver> observers,
            ObjectProvider<LockOptionsCustomizer> customizers) {
        LockOptions.Builder builder = properties.toOptions()
                .observer(LockObserver.composite(observers.orderedStream().toArray(LockObserver[]::new)));
        customizers.orderedStream().forEach(customizer -> customizer.customize(builder));
        return builder.build();
    }

    private static LockProvider opened(LockProvider provider, String from) {
        log.info("Locksmith: LockProvider on {} (client {}), from {}", provider.backend(), provider.clientId(), from);
        return provider;
    }

    /** From {@code locksmith.uri}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty("locksmith.uri")
    @ConditionalOnMissingBean(LockProvider.class)
    static class FromUri {
        @Bean(destroyMethod = "close")
        LockProvider lockProvider(LocksmithProperties properties, ObjectProvider<LockObserver> observers,
                ObjectProvider<LockOptionsCustomizer> customizers) {
            return opened(LockProvider.open(properties.getUri(), options(properties, observers, customizers)),
                    "locksmith.uri");
        }
    }

    /**
     * From Boot's Redis connection details bean when there is one (spring-data-redis on the class path), else from
     * {@code spring.data.redis.*}: a client of the provider's own, closed with it.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.locksmith.redis.RedisLockProviders")
    @ConditionalOnMissingBean(LockProvider.class)
    @Conditional(StoreChosen.Redis.class)
    static class FromRedis {
        @Bean(destroyMethod = "close")
        LockProvider lockProvider(Environment environment, ObjectProvider<RedisTarget> details,
                LocksmithProperties properties, ObjectProvider<LockObserver> observers,
                ObjectProvider<LockOptionsCustomizer> customizers) {
            RedisTarget target = details.getIfAvailable();
            String uri = target != null ? target.uri() : RedisSettings.from(environment).uri();
            return opened(LockProvider.open(uri, options(properties, observers, customizers)),
                    target != null ? "Boot's Redis connection details" : "spring.data.redis.*");
        }
    }

    /** Over the application's CuratorFramework, which the provider does not close. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.locksmith.zookeeper.ZooKeeperLockProviders")
    @ConditionalOnSingleCandidate(type = "org.apache.curator.framework.CuratorFramework")
    @ConditionalOnMissingBean(LockProvider.class)
    @Conditional(StoreChosen.ZooKeeper.class)
    static class FromCurator {
        @Bean(destroyMethod = "close")
        LockProvider lockProvider(org.apache.curator.framework.CuratorFramework curator,
                LocksmithProperties properties, ObjectProvider<LockObserver> observers,
                ObjectProvider<LockOptionsCustomizer> customizers) {
            return opened(io.locksmith.zookeeper.ZooKeeperLockProviders.builder(curator)
                    .options(options(properties, observers, customizers))
                    .build(), "the CuratorFramework bean");
        }
    }

    /** Over the application's DataSource, which the provider does not close. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.locksmith.jdbc.JdbcLockProviders")
    @ConditionalOnSingleCandidate(DataSource.class)
    @ConditionalOnMissingBean(LockProvider.class)
    @Conditional(StoreChosen.Jdbc.class)
    static class FromDataSource {
        @Bean(destroyMethod = "close")
        LockProvider lockProvider(DataSource dataSource, LocksmithProperties properties,
                ObjectProvider<LockObserver> observers, ObjectProvider<LockOptionsCustomizer> customizers) {
            LocksmithProperties.Jdbc jdbc = properties.getJdbc();
            return opened(io.locksmith.jdbc.JdbcLockProviders.builder(dataSource)
                    .mode(jdbc.getMode() == LocksmithProperties.Mode.SESSION
                            ? io.locksmith.jdbc.JdbcLockProviders.Mode.SESSION
                            : io.locksmith.jdbc.JdbcLockProviders.Mode.LEASE)
                    .table(jdbc.getTable())
                    .createTable(jdbc.isCreateTable())
                    .options(options(properties, observers, customizers))
                    .build(), "the DataSource bean (" + jdbc.getMode().name().toLowerCase(Locale.ROOT) + " mode)");
        }
    }

    /**
     * Whether a source builds the provider. Spring does not evaluate the imported configurations in the order they
     * are listed, so the precedence is spelled out here and the sources exclude each other: none when
     * {@code locksmith.uri} is set; the one {@code locksmith.store} names; otherwise Redis if the application
     * configured it (properties or Boot's connection details bean), else ZooKeeper if it has a CuratorFramework bean,
     * else JDBC.
     */
    abstract static class StoreChosen implements Condition {
        private static final String[] REDIS_DETAILS = {
            "org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails",
            "org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails"};

        private final Store store;

        StoreChosen(Store store) {
            this.store = store;
        }

        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            Environment environment = context.getEnvironment();
            if (environment.containsProperty("locksmith.uri")) {
                return false;
            }
            String chosen = environment.getProperty("locksmith.store");
            if (chosen != null && !chosen.isBlank()) {
                return chosen.trim().equalsIgnoreCase(store.name());
            }
            boolean redis = redisConfigured(context);
            return switch (store) {
                case REDIS -> redis;
                case ZOOKEEPER -> !redis;
                case JDBC -> !redis && !has(context, "io.locksmith.zookeeper.ZooKeeperLockProviders",
                        "org.apache.curator.framework.CuratorFramework");
            };
        }

        private static boolean redisConfigured(ConditionContext context) {
            if (!ClassUtils.isPresent("io.locksmith.redis.RedisLockProviders", context.getClassLoader())) {
                return false;
            }
            if (RedisSettings.isConfigured(context.getEnvironment())) {
                return true;
            }
            for (String details : REDIS_DETAILS) {
                if (has(context, details, details)) {
                    return true;
                }
            }
            return false;
        }

        /** Whether {@code module} is on the class path and the application has a bean of {@code type}. */
        private static boolean has(ConditionContext context, String module, String type) {
            ClassLoader loader = context.getClassLoader();
            return ClassUtils.isPresent(module, loader) && ClassUtils.isPresent(type, loader)
                    && context.getBeanFactory().getBeanNamesForType(ClassUtils.resolveClassName(type, loader), true,
                            false).length > 0;
        }

        static final class Redis extends StoreChosen {
            Redis() {
                super(Store.REDIS);
            }
        }

        static final class ZooKeeper extends StoreChosen {
            ZooKeeper() {
                super(Store.ZOOKEEPER);
            }
        }

        static final class Jdbc extends StoreChosen {
            Jdbc() {
                super(Store.JDBC);
            }
        }
    }
}
