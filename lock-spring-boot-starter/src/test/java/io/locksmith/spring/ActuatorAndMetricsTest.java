package io.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.spring.autoconfigure.LocksmithEndpoint;
import io.locksmith.tests.servers.RedisServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * What the starter adds beside the lock: meters and observations in the application's registries, the
 * {@code locksmith} Actuator endpoint and health indicator. Health is read through its {@code health()} method
 * by name, because its type differs between Boot lines.
 */
class ActuatorAndMetricsTest {

    @Test
    void lockedCallsAreMeteredWithLockTagsOnlyThroughTheMapping() {
        Fixtures.onRedis().withUserConfiguration(ServiceConfig.class)
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(LockTagMapping.class, () -> name -> name.substring(0, name.indexOf(':')))
                .run(context -> {
                    context.getBean(Service.class).handle("42");
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    assertThat(registry.get("locksmith.acquisitions")
                            .tags("backend", "redis", "outcome", "acquired", "lock", "order").timer().count())
                            .isEqualTo(1);
                    assertThat(registry.get("locksmith.holds").tags("end", "released", "lock", "order").timer()
                            .count()).isEqualTo(1);
                    assertThat(registry.get("locksmith.locks.held").gauge().value()).isZero();
                });
    }

    @Test
    void lockedCallsAreObservedAsWaitAndHold() {
        List<String> stopped = new CopyOnWriteArrayList<>();
        Supplier<ObservationRegistry> registry = () -> {
            ObservationRegistry observations = ObservationRegistry.create();
            observations.observationConfig().observationHandler(new ObservationHandler<>() {
                @Override
                public void onStop(Observation.Context context) {
                    stopped.add(context.getName());
                }

                @Override
                public boolean supportsContext(Observation.Context context) {
                    return true;
                }
            });
            return observations;
        };
        Fixtures.onRedis().withUserConfiguration(ServiceConfig.class)
                .withBean(ObservationRegistry.class, registry)
                .run(context -> {
                    context.getBean(Service.class).handle("7");
                    assertThat(stopped).containsExactly("locksmith.lock.wait", "locksmith.lock.hold");
                });
    }

    @Test
    void theEndpointListsTheLocksThisApplicationHoldsAndInspectsAnyName() {
        Fixtures.onRedis().withUserConfiguration(ServiceConfig.class)
                .withPropertyValues("management.endpoints.web.exposure.include=locksmith")
                .run(context -> {
                    LocksmithEndpoint endpoint = context.getBean(LocksmithEndpoint.class);
                    Service service = context.getBean(Service.class);
                    service.lookAt(endpoint);
                    Map<String, Object> whileHeld = service.handle("9");
                    @SuppressWarnings("unchecked")
                    List<Map<String, Object>> holds = (List<Map<String, Object>>) whileHeld.get("holds");
                    assertThat(holds).singleElement().satisfies(hold -> {
                        assertThat(hold).containsEntry("name", "order:9")
                                .containsEntry("fencingToken", service.lastToken())
                                .containsKeys("heldForMs", "leaseLeftMs", "since", "thread");
                        assertThat((Long) hold.get("leaseLeftMs")).isPositive();
                    });
                    assertThat((List<?>) endpoint.locks().get("holds")).as("none after the call").isEmpty();
                    @SuppressWarnings("unchecked")
                    Map<String, Object> inspected = (Map<String, Object>) endpoint.lock("order:9").get("lockProvider");
                    assertThat(inspected).containsEntry("locked", false).containsEntry("fencingToken",
                            service.lastToken());
                });
    }

    @Test
    void healthIsUpWhileTheStoreAnswersAndDownWhenItDoesNot() {
        RedisServer own = RedisServer.start();
        try {
            Fixtures.application().withPropertyValues("locksmith.uri=" + own.uri(),
                    "locksmith.operation-timeout=500ms").run(context -> {
                        assertThat(status(context)).isEqualTo("UP");
                        own.kill();
                        assertThat(status(context)).isEqualTo("DOWN");
                    });
        } finally {
            own.close();
        }
    }

    private static String status(ApplicationContext context) throws Exception {
        Object indicator = context.getBean("locksmithHealthIndicator");
        Object health = indicator.getClass().getMethod("health").invoke(indicator);
        Object status = health.getClass().getMethod("getStatus").invoke(health);
        return (String) status.getClass().getMethod("getCode").invoke(status);
    }

    @Configuration(proxyBeanMethods = false)
    static class ServiceConfig {
        @Bean
        Service service() {
            return new Service();
        }
    }

    /** A locked service that can look at the endpoint from inside its critical section (a proxy: use methods). */
    public static class Service {
        private volatile LocksmithEndpoint endpoint;
        private volatile long lastToken;

        public void lookAt(LocksmithEndpoint endpoint) {
            this.endpoint = endpoint;
        }

        public long lastToken() {
            return lastToken;
        }

        @Locked(name = "'order:' + #id")
        public Map<String, Object> handle(String id) {
            lastToken = CurrentLock.fencingToken();
            return endpoint == null ? Map.of() : endpoint.locks();
        }
    }
}
