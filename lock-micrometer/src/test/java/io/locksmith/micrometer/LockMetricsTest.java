package io.locksmith.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockObserver;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The meters over the real in-JVM store. */
class LockMetricsTest {

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final String server = "local://metrics-" + UUID.randomUUID();
    private final List<LockProvider> providers = new ArrayList<>();

    @AfterEach
    void close() {
        providers.forEach(LockProvider::close);
    }

    private LockProvider provider(LockObserver observer) {
        return provider(LockOptions.builder().observer(observer).build());
    }

    private LockProvider provider(LockOptions options) {
        LockProvider provider = LockProvider.open(server, options);
        providers.add(provider);
        return provider;
    }

    @Test
    void aCycleIsTimedAndTheHoldIsCountedWhileItLasts() {
        DistributedLock lock = provider(LockMetrics.builder(registry).build()).getLock("stock:42");
        lock.lock();
        assertThat(registry.get("locksmith.locks.held").tag("backend", "local").gauge().value()).isEqualTo(1);
        assertThat(registry.get("locksmith.holds.active").longTaskTimer().activeTasks()).isEqualTo(1);
        lock.unlock();
        assertThat(registry.get("locksmith.acquisitions").tags("backend", "local", "outcome", "acquired").timer()
                .count()).isEqualTo(1);
        assertThat(registry.get("locksmith.holds").tags("backend", "local", "end", "released").timer().count())
                .isEqualTo(1);
        assertThat(registry.get("locksmith.locks.held").gauge().value()).isZero();
        assertThat(registry.get("locksmith.holds.active").longTaskTimer().activeTasks()).isZero();
        assertThat(registry.getMeters()).as("no lock name reaches a tag unless mapped")
                .allSatisfy(meter -> assertThat(meter.getId().getTag(LockMetrics.LOCK_TAG)).isNull());
    }

    @Test
    void aBusyLockAndAnEndedWaitAreTheirOwnOutcomes() throws Exception {
        DistributedLock theirs = provider(LockObserver.NONE).getLock("busy");
        theirs.lock();
        DistributedLock ours = provider(LockMetrics.builder(registry).build()).getLock("busy");
        assertThat(ours.tryLock()).isFalse();
        assertThat(ours.tryLock(Duration.ofMillis(10), Duration.ofSeconds(1))).isFalse();
        assertThat(registry.get("locksmith.acquisitions").tag("outcome", "busy").timer().count()).isEqualTo(1);
        assertThat(registry.get("locksmith.acquisitions").tag("outcome", "timed_out").timer().count()).isEqualTo(1);
        assertThat(registry.get("locksmith.locks.held").gauge().value()).isZero();
        theirs.unlock();
    }

    @Test
    void lockNamesBecomeTagsOnlyThroughTheMapping() {
        LockProvider provider = provider(LockMetrics.builder(registry)
                .lockTag(name -> name.contains(":") ? name.substring(0, name.indexOf(':')) : null)
                .build());
        for (String name : List.of("stock:1", "stock:2", "order:7", "plain")) {
            DistributedLock lock = provider.getLock(name);
            lock.lock();
            lock.unlock();
        }
        assertThat(registry.get("locksmith.acquisitions").tags("lock", "stock", "outcome", "acquired").timer()
                .count()).isEqualTo(2);
        assertThat(registry.get("locksmith.acquisitions").tags("lock", "order", "outcome", "acquired").timer()
                .count()).isEqualTo(1);
        assertThat(registry.get("locksmith.acquisitions").tags("lock", "other", "outcome", "acquired").timer()
                .count()).isEqualTo(1);
        assertThat(registry.getMeters()).extracting(meter -> meter.getId().getTag(LockMetrics.LOCK_TAG))
                .containsOnly("stock", "order", "other", null); // null: backend-wide meters
    }

    @Test
    void aLostHoldIsCountedAsALoss() {
        DistributedLock lock = provider(LockMetrics.builder(registry).build()).getLock("short");
        assertThat(lockBriefly(lock)).isTrue();
        awaitTrue(() -> registry.get("locksmith.losses").counter().count() == 1);
        assertThat(registry.get("locksmith.holds").tag("end", "lost").timer().count()).isEqualTo(1);
        assertThat(registry.get("locksmith.locks.held").gauge().value()).isZero();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
    }

    @Test
    void aFailingStoreIsCountedByOperation() {
        LockProvider provider = provider(LockOptions.builder()
                .observer(LockMetrics.builder(registry).build())
                .storeWrapper(store -> new RefusesAcquisitions<>(store))
                .build());
        assertThatThrownBy(() -> provider.getLock("down").tryLock()).isInstanceOf(LockBackendException.class);
        assertThat(registry.get("locksmith.backend.failures").tags("backend", "local", "operation", "acquire")
                .counter().count()).isEqualTo(1);
        assertThat(registry.get("locksmith.acquisitions").tag("outcome", "failed").timer().count()).isEqualTo(1);
    }

    @Test
    void renewalRoundsAreTimed() {
        LockProvider provider = provider(LockOptions.builder()
                .leaseTime(Duration.ofSeconds(3))
                .renewInterval(Duration.ofMillis(20))
                .observer(LockMetrics.builder(registry).build())
                .build());
        DistributedLock lock = provider.getLock("renewed");
        lock.lock();
        awaitTrue(() -> registry.find("locksmith.renewals").tag("result", "ok").timer() != null
                && registry.get("locksmith.renewals").tag("result", "ok").timer().count() > 0);
        lock.unlock();
        assertThat(registry.get("locksmith.renewals").tag("result", "failed").timer().count()).isZero();
    }

    @Test
    void theBackendTagNamesTheKindOfStoreNotTheServer() {
        assertThat(LockMetrics.backendKind("redis://10.0.0.1:6379/0")).isEqualTo("redis");
        assertThat(LockMetrics.backendKind("rediss://cache:6380/2")).isEqualTo("redis");
        assertThat(LockMetrics.backendKind("redlock://a:1,b:2,c:3")).isEqualTo("redlock");
        assertThat(LockMetrics.backendKind("zookeeper://zk1:2181,zk2:2181/locks")).isEqualTo("zookeeper");
        assertThat(LockMetrics.backendKind("jdbc:postgresql://db:5432/app [lease mode]"))
                .isEqualTo("jdbc-postgresql-lease");
        assertThat(LockMetrics.backendKind("jdbc:mariadb://db/app [session mode]")).isEqualTo("jdbc-mariadb-session");
        assertThat(LockMetrics.backendKind("local://default")).isEqualTo("local");
        assertThat(LockMetrics.backendKind("JDBC HikariDataSource (table locksmith_locks) [lease mode]"))
                .isEqualTo("jdbc-lease");
        assertThat(LockMetrics.backendKind("redis (RedisClient)")).isEqualTo("redis");
    }

    @Test
    void everyMeterIsDescribed() {
        DistributedLock lock = provider(LockMetrics.builder(registry).build()).getLock("described");
        lock.lock();
        lock.unlock();
        assertThat(registry.getMeters()).extracting(Meter::getId)
                .allSatisfy(id -> assertThat(id.getDescription()).as(id.getName()).isNotBlank());
    }

    /** A hold with a lease so short that it ends unrenewed. */
    private static boolean lockBriefly(DistributedLock lock) {
        try {
            return lock.tryLock(Duration.ZERO, Duration.ofMillis(20));
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Waits for an effect the scheduler is certain to produce (an ended lease, a renewal round); the bound only
     * keeps a broken build from hanging and is far beyond any lease or interval used here.
     */
    static void awaitTrue(BooleanSupplier condition) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("the condition did not come true within 30 s");
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** A store whose acquisitions fail before they reach it. */
    private static final class RefusesAcquisitions<H> extends ForwardingLockStore<H> {

        RefusesAcquisitions(LockStore<H> delegate) {
            super(delegate);
        }

        @Override
        public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
            throw new LockBackendException("connection refused");
        }
    }
}
