package io.locksmith.spring.autoconfigure;

import io.locksmith.LockProvider;
import io.locksmith.spring.internal.HeldLocks;
import java.util.Map;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The {@code locksmith} Actuator endpoint, when Actuator is present and the endpoint is exposed. */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = {"org.springframework.boot.actuate.endpoint.annotation.Endpoint",
    "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint"})
class LocksmithEndpointConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(endpoint = LocksmithEndpoint.class)
    LocksmithEndpoint locksmithEndpoint(Map<String, LockProvider> providers, HeldLocks held) {
        return new LocksmithEndpoint(providers, held);
    }
}
