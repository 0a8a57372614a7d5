package io.locksmith.spring.autoconfigure;

import io.locksmith.spring.support.RedisTarget;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * The Redis server of Spring Boot 4's {@link DataRedisConnectionDetails} bean (from {@code spring.data.redis.*},
 * {@code @ServiceConnection} or Docker Compose), for the starter's provider; lock-spring-boot3-support has Boot 3's.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = "org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails")
class Boot4RedisConfiguration {

    @Bean
    @ConditionalOnBean(DataRedisConnectionDetails.class)
    @ConditionalOnMissingBean(RedisTarget.class)
    RedisTarget locksmithRedisTarget(DataRedisConnectionDetails details, Environment environment) {
        return () -> {
            if (details.getCluster() != null) {
                throw RedisTarget.cluster("the DataRedisConnectionDetails bean");
            }
            if (details.getSentinel() != null || details.getMasterReplica() != null) {
                throw RedisTarget.sentinel("the DataRedisConnectionDetails bean");
            }
            DataRedisConnectionDetails.Standalone standalone = details.getStandalone();
            // a rediss:// url sets no SSL bundle: its scheme says TLS
            boolean ssl = details.getSslBundle() != null || environment.getProperty("spring.data.redis.url", "")
                    .startsWith("rediss:");
            return RedisTarget.uri(ssl, details.getUsername(), details.getPassword(), standalone.getHost(),
                    standalone.getPort(), standalone.getDatabase());
        };
    }
}
