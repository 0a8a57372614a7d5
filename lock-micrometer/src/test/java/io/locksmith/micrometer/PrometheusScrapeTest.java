package io.locksmith.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The meters under the names a Prometheus scrape gives them; docs/observability.md shows this scrape. */
class PrometheusScrapeTest {

    @Test
    void aScrapeAfterOneCycleShowsEveryMeter() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        LockOptions options = LockOptions.builder()
                .observer(LockMetrics.builder(registry).lockTag(name -> name.substring(0, name.indexOf(':'))).build())
                .build();
        try (LockProvider provider = LockProvider.open("local://scrape-" + UUID.randomUUID(), options)) {
            DistributedLock lock = provider.getLock("stock:42");
            lock.lock();
            lock.unlock();
            assertThat(lock.tryLock()).isTrue();
            String scrape = registry.scrape();
            System.out.println(scrape);
            assertThat(scrape)
                    .contains("locksmith_acquisitions_seconds_count{backend=\"local\",lock=\"stock\","
                            + "outcome=\"acquired\"} 2")
                    .contains("locksmith_holds_seconds_count{backend=\"local\",end=\"released\",lock=\"stock\"} 1")
                    .contains("locksmith_holds_active_seconds_count{backend=\"local\",lock=\"stock\"} 1")
                    .contains("locksmith_locks_held{backend=\"local\"} 1.0")
                    .contains("locksmith_losses_total{backend=\"local\",lock=\"stock\"} 0.0");
            lock.unlock();
        }
    }
}
