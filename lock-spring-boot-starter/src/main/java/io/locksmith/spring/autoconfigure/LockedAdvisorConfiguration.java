package io.locksmith.spring.autoconfigure;

import io.locksmith.spring.LocksmithProperties;
import io.locksmith.spring.internal.HolderThreads;
import io.locksmith.spring.internal.LockProviders;
import io.locksmith.spring.internal.LockedAdvisor;
import io.locksmith.spring.internal.LockedInterceptor;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.config.EmbeddedValueResolver;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Applies {@code @Locked}: an advisor around the annotated methods, and an auto-proxy creator if the application
 * has none (Boot registers one unless {@code spring.aop.auto=false}). Infrastructure beans, so that they are made
 * before the application's beans are proxied; the lock providers are looked up only when a locked method runs.
 */
@Configuration(proxyBeanMethods = false)
@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
@Import(LockedAdvisorConfiguration.AutoProxy.class)
class LockedAdvisorConfiguration {

    @Bean(destroyMethod = "close")
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static HolderThreads locksmithHolderThreads() {
        return new HolderThreads();
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static LockedAdvisor locksmithLockedAdvisor(ConfigurableListableBeanFactory beans, Environment environment,
            HolderThreads holders) {
        LockedInterceptor interceptor = new LockedInterceptor(new LockProviders(beans),
                new EmbeddedValueResolver(beans), beans, holders);
        int order = environment.getProperty("locksmith.advisor-order", Integer.class,
                new LocksmithProperties().getAdvisorOrder());
        return new LockedAdvisor(interceptor, order);
    }

    /** Registers Spring's infrastructure auto-proxy creator unless a creator is there already. */
    static class AutoProxy implements ImportBeanDefinitionRegistrar {
        @Override
        public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
            AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
        }
    }
}
