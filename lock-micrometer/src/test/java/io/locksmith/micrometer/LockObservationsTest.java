package io.locksmith.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockObserver;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The observations (spans) of waits and holds over the real in-JVM store. */
class LockObservationsTest {

    private final ObservationRegistry registry = ObservationRegistry.create();
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
    private final String server = "local://observations-" + UUID.randomUUID();
    private LockProvider provider;
    private LockProvider other;

    LockObservationsTest() {
        registry.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public void onStart(Observation.Context context) {
                events.add("start " + context.getName());
            }

            @Override
            public void onError(Observation.Context context) {
                events.add("error " + context.getName());
            }

            @Override
            public void onStop(Observation.Context context) {
                events.add("stop " + context.getName());
                stopped.add(context);
            }

            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }
        });
    }

    @AfterEach
    void close() {
        if (provider != null) {
            provider.close();
        }
        if (other != null) {
            other.close();
        }
    }

    private DistributedLock lock(LockObserver observer, String name) {
        provider = LockProvider.open(server, LockOptions.builder().observer(observer).build());
        return provider.getLock(name);
    }

    @Test
    void aWaitAndAHoldAreChildrenOfTheCallersObservation() {
        DistributedLock lock = lock(LockObservations.of(registry), "stock:42");
        Observation request = Observation.start("request", registry);
        long token;
        try (Observation.Scope scope = request.openScope()) {
            lock.lock();
            token = lock.fencingToken();
            lock.unlock();
        }
        request.stop();
        assertThat(events).containsExactly("start request", "start " + LockObservations.WAIT,
                "stop " + LockObservations.WAIT, "start " + LockObservations.HOLD, "stop " + LockObservations.HOLD,
                "stop request");
        Observation.Context wait = stopped.get(0);
        Observation.Context hold = stopped.get(1);
        assertThat(wait.getParentObservation()).isSameAs(request);
        assertThat(hold.getParentObservation()).isSameAs(request);
        assertThat(wait.getLowCardinalityKeyValue("locksmith.outcome").getValue()).isEqualTo("acquired");
        assertThat(wait.getLowCardinalityKeyValue("locksmith.backend").getValue()).isEqualTo("local");
        assertThat(wait.getHighCardinalityKeyValue("locksmith.lock.name").getValue()).isEqualTo("stock:42");
        assertThat(wait.getLowCardinalityKeyValue(LockMetrics.LOCK_TAG)).as("no mapping, no lock tag").isNull();
        assertThat(hold.getLowCardinalityKeyValue("locksmith.end").getValue()).isEqualTo("released");
        assertThat(hold.getHighCardinalityKeyValue("locksmith.fencing.token").getValue())
                .isEqualTo(Long.toString(token));
        assertThat(hold).isInstanceOf(LockObservationContext.class);
        assertThat(((LockObservationContext) hold).lockName()).isEqualTo("stock:42");
    }

    @Test
    void aWaitThatFindsTheLockBusyEndsWithoutAHold() {
        other = LockProvider.open(server);
        DistributedLock theirs = other.getLock("busy");
        theirs.lock();
        DistributedLock ours = lock(LockObservations.of(registry).lockTag(name -> "all"), "busy");
        assertThat(ours.tryLock()).isFalse();
        theirs.unlock();
        assertThat(events).containsExactly("start " + LockObservations.WAIT, "stop " + LockObservations.WAIT);
        assertThat(stopped.get(0).getLowCardinalityKeyValue("locksmith.outcome").getValue()).isEqualTo("busy");
        assertThat(stopped.get(0).getLowCardinalityKeyValue(LockMetrics.LOCK_TAG).getValue()).isEqualTo("all");
    }

    @Test
    void aLostHoldEndsItsObservationWithTheReason() {
        DistributedLock lock = lock(LockObservations.of(registry), "short");
        try {
            assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(20))).isTrue();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        LockMetricsTest.awaitTrue(() -> stopped.size() == 2);
        Observation.Context hold = stopped.get(1);
        assertThat(hold.getLowCardinalityKeyValue("locksmith.end").getValue()).isEqualTo("lost");
        assertThat(hold.getHighCardinalityKeyValue("locksmith.end.reason").getValue()).contains("lease");
    }

    @Test
    void aNoopRegistryCostsNoObservation() {
        assertThat(LockObservations.of(ObservationRegistry.NOOP).acquisitionStarted("local://x", "x")).isNull();
    }
}
