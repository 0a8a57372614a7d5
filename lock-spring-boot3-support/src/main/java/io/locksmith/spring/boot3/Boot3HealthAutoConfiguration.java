package io.locksmith.spring.boot3;

import io.locksmith.LockProvider;
import io.locksmith.spring.support.StoreProbe;
import java.util.Map;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code locksmith} health indicator on Spring Boot 3.x, whose health types live in
 * {@code org.springframework.boot.actuate.health}; compiled against Boot 3.5, inert on Boot 4.
 */
@AutoConfiguration(afterName = "io.locksmith.spring.autoconfigure.LocksmithAutoConfiguration")
@ConditionalOnClass(name = {"org.springframework.boot.actuate.health.HealthIndicator",
    "org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator"})
public class Boot3HealthAutoConfiguration {

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
