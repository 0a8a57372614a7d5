package io.locksmith.spring.autoconfigure;

import io.locksmith.LockProvider;
import io.locksmith.spring.support.StoreProbe;
import java.util.Map;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code locksmith} health indicator on Spring Boot 4, whose health types live in
 * {@code org.springframework.boot.health.contributor}; lock-spring-boot3-support has Boot 3's.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = {"org.springframework.boot.health.contributor.HealthIndicator",
    "org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator"})
class LocksmithHealthConfiguration {

    @Bean
    @ConditionalOnBean(LockProvider.class)
    @ConditionalOnMissingBean(name = "locksmithHealthIndicator")
    @ConditionalOnEnabledHealthIndicator("locksmith")
    LocksmithHealthIndicator locksmithHealthIndicator(Map<String, LockProvider> providers) {
        return new LocksmithHealthIndicator(new StoreProbe(providers));
    }

    /** Up when every lock store answers. */
    static final class LocksmithHealthIndicator extends AbstractHealthIndicator {
        private final StoreProbe probe;

        LocksmithHealthIndicator(StoreProbe probe) {
            super("Lock store health check failed");
            this.probe = probe;
        }

        @Override
        protected void doHealthCheck(Health.Builder builder) {
            StoreProbe.Result result = probe.check();
            (result.up() ? builder.up() : builder.down()).withDetails(result.details());
        }
    }
}
