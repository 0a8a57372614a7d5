package io.locksmith.spring.boot3;

import io.locksmith.spring.support.RedisTarget;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * The Redis server of Spring Boot 3's {@link RedisConnectionDetails} bean (from {@code spring.data.redis.*},
 * {@code @ServiceConnection} or Docker Compose), for the starter's provider; compiled against Boot 3.5, inert on
 * Boot 4.
 */
@AutoConfiguration(
        afterName = "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
        beforeName = "io.locksmith.spring.autoconfigure.LocksmithAutoConfiguration")
@ConditionalOnClass(name = "org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails")
public class Boot3RedisAutoConfiguration {

    @Bean
    @ConditionalOnBean(RedisConnectionDetails.class)
    @ConditionalOnMissingBean(RedisTarget.class)
    RedisTarget locksmithRedisTarget(RedisConnectionDetails details, Environment environment) {
        return () -> {
            if (details.getCluster() != null) {
                throw RedisTarget.cluster("the RedisConnectionDetails bean");
            }
            if (details.getSentinel() != null) {
                throw RedisTarget.sentinel("the RedisConnectionDetails bean");
            }
            RedisConnectionDetails.Standalone standalone = details.getStandalone();
            // a rediss:// url sets no SSL bundle: its scheme says TLS
            boolean ssl = standalone.getSslBundle() != null || environment.getProperty("spring.data.redis.url", "")
                    .startsWith("rediss:");
            return RedisTarget.uri(ssl, details.getUsername(), details.getPassword(), standalone.getHost(),
                    standalone.getPort(), standalone.getDatabase());
        };
    }
}
