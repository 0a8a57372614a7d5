package io.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LeadershipListener;
import io.locksmith.LockProvider;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@link LockLeadership}: an application leads while it runs, and steps down when it stops, before its provider
 * closes, so another instance can take over at once.
 */
class LeadershipBeanTest {

    @Test
    void theApplicationLeadsWhileItRunsAndStepsDownBeforeItsProviderCloses() {
        AtomicReference<LockProvider> other = new AtomicReference<>();
        Recorder[] recorder = new Recorder[1];
        try {
            Fixtures.onRedis().withUserConfiguration(LeaderConfig.class).run(context -> {
                recorder[0] = context.getBean(Recorder.class);
                LockLeadership leadership = context.getBean(LockLeadership.class);
                other.set(Fixtures.otherRedisInstance(context.getBean(LockProvider.class)));
                recorder[0].probe = other.get().getLock("report");
                awaitTrue("the application is elected", () -> !recorder[0].events.isEmpty());
                assertThat(leadership.isRunning()).isTrue();
                assertThat(leadership.isLeader()).isTrue();
                assertThat(recorder[0].events.get(0)).startsWith("elected ");
                assertThat(leadership.epoch()).as("epoch() of the leading bean")
                        .hasValue(Long.parseLong(recorder[0].events.get(0).substring("elected ".length())));
                assertThat(other.get().getLock("report").tryLock()).as("another instance's tryLock() of the "
                        + "leader's lock").isFalse();
            });
            assertThat(recorder[0].events).as("what the listener heard up to the application's stop").hasSize(2);
            assertThat(recorder[0].events.get(1)).as("the step-down at the application's stop")
                    .endsWith(" CLOSED, lock still held");
            DistributedLock lock = other.get().getLock("report");
            assertThat(lock.tryLock()).as("another instance's tryLock() after the application stopped").isTrue();
            lock.unlock();
        } finally {
            if (other.get() != null) {
                other.get().close();
            }
        }
    }

    @Test
    void aBadNameIsRefusedWhenTheBeanIsMade() {
        Fixtures.onRedis().run(context -> {
            LockProvider locks = context.getBean(LockProvider.class);
            assertThatThrownBy(() -> new LockLeadership(locks, "", new Recorder()))
                    .isInstanceOf(IllegalArgumentException.class);
            LockLeadership idle = new LockLeadership(locks, "idle", new Recorder());
            assertThat(idle.isRunning()).as("before start()").isFalse();
            assertThat(idle.isLeader()).isFalse();
            assertThat(idle.epoch()).isEmpty();
        });
    }

    private static void awaitTrue(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("waiting until %s", what).isNegative();
            Thread.sleep(10);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class LeaderConfig {
        @Bean
        Recorder recorder() {
            return new Recorder();
        }

        @Bean
        LockLeadership reportLeadership(LockProvider locks, Recorder recorder) {
            return new LockLeadership(locks, "report", recorder);
        }
    }

    /** Records what it hears; when told to step down, checks with another instance that the lock is still held. */
    static final class Recorder implements LeadershipListener {
        final List<String> events = new CopyOnWriteArrayList<>();
        volatile DistributedLock probe;

        @Override
        public void elected(long epoch) {
            events.add("elected " + epoch);
        }

        @Override
        public void revoked(long epoch, Reason reason) {
            DistributedLock check = probe;
            boolean free = check != null && check.tryLock();
            if (free) {
                check.unlock();
            }
            events.add("revoked " + epoch + " " + reason + (free ? ", lock was free" : ", lock still held"));
        }
    }
}
