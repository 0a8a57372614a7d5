package io.locksmith.spring.autoconfigure;

import io.locksmith.micrometer.LockMetrics;
import io.locksmith.micrometer.LockObservations;
import io.locksmith.spring.LockTagMapping;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * lock-micrometer's meters in the application's {@link MeterRegistry} and its observations in the
 * {@link ObservationRegistry}, when the application has them (Actuator): both are {@link io.locksmith.LockObserver}
 * beans, which the providers the starter builds report to. Lock names become tags only through a
 * {@link LockTagMapping} bean.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
class LocksmithMetricsConfiguration {

    @Bean
    @ConditionalOnBean(MeterRegistry.class)
    @ConditionalOnMissingBean
    LockMetrics locksmithLockMetrics(MeterRegistry registry, ObjectProvider<LockTagMapping> mapping) {
        LockMetrics.Builder builder = LockMetrics.builder(registry);
        mapping.ifAvailable(m -> builder.lockTag(m::tagFor));
        return builder.build();
    }

    @Bean
    @ConditionalOnBean(ObservationRegistry.class)
    @ConditionalOnMissingBean
    LockObservations locksmithLockObservations(ObservationRegistry registry, ObjectProvider<LockTagMapping> mapping) {
        LockObservations observations = LockObservations.of(registry);
        LockTagMapping m = mapping.getIfAvailable();
        return m == null ? observations : observations.lockTag(m::tagFor);
    }
}
