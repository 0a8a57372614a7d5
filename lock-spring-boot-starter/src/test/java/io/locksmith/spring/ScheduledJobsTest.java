package io.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockLostException;
import io.locksmith.LockProvider;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * {@code @Locked} on {@code @Scheduled} methods, as ShedLock's {@code @SchedulerLock} is used: one instance runs
 * the job, the others skip it; {@code atLeast} keeps the lock past a short run; {@code lease} bounds a long one.
 * The jobs are called directly: the scheduler's timing is not what is tested.
 */
class ScheduledJobsTest {

    @Test
    void aScheduledJobSkipsWhileAnotherInstanceHoldsItsLock() {
        Fixtures.onRedis().withUserConfiguration(JobsConfig.class).run(context -> {
            Jobs jobs = context.getBean(Jobs.class);
            try (LockProvider other = Fixtures.otherRedisInstance(context.getBean(LockProvider.class))) {
                DistributedLock held = other.getLock("report");
                held.lock();
                jobs.report();
                assertThat(jobs.reports()).as("skipped while held elsewhere").isZero();
                held.unlock();
                jobs.report();
                assertThat(jobs.reports()).isEqualTo(1);
            }
        });
    }

    @Test
    void atLeastKeepsTheLockAfterTheJobReturnedUntilTheApplicationStops() {
        LockProvider[] other = new LockProvider[1];
        Fixtures.onRedis().withUserConfiguration(JobsConfig.class).run(context -> {
            Jobs jobs = context.getBean(Jobs.class);
            other[0] = Fixtures.otherRedisInstance(context.getBean(LockProvider.class));
            jobs.cleanup();
            assertThat(jobs.cleanups()).isEqualTo(1);
            assertThat(jobs.cleanupToken()).as("the holder's token reaches the job").isPositive();
            // atLeast is an hour: nothing but this application's stop can have released it yet
            assertThat(other[0].getLock("cleanup").tryLock()).as("held after the job returned").isFalse();
            jobs.cleanup();
            assertThat(jobs.cleanups()).as("the second run skips: the first one's hold lasts").isEqualTo(1);
        });
        try {
            DistributedLock lock = other[0].getLock("cleanup");
            assertThat(lock.tryLock()).as("released when the application stopped").isTrue();
            lock.unlock();
        } finally {
            other[0].close();
        }
    }

    @Test
    void atLeastEndsAndTheLockIsFreeAgain() {
        Fixtures.onRedis().withUserConfiguration(JobsConfig.class).run(context -> {
            Jobs jobs = context.getBean(Jobs.class);
            try (LockProvider other = Fixtures.otherRedisInstance(context.getBean(LockProvider.class))) {
                jobs.brief();
                DistributedLock lock = other.getLock("brief");
                // the holder keeps it 50 ms after the grant, then releases: wait for that, however slow the machine
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (!lock.tryLock()) {
                    assertThat(System.nanoTime() - deadline).as("released after atLeast").isNegative();
                    Thread.sleep(10);
                }
                lock.unlock();
            }
        });
    }

    @Test
    void aLeaseBoundsTheHoldOfAJobThatRunsTooLong() {
        Fixtures.onRedis().withUserConfiguration(JobsConfig.class).run(context -> {
            Jobs jobs = context.getBean(Jobs.class);
            try (LockProvider other = Fixtures.otherRedisInstance(context.getBean(LockProvider.class))) {
                DistributedLock theirs = other.getLock("stuck");
                jobs.stopWhen(theirs::tryLock);
                assertThatThrownBy(jobs::stuck).as("the job outlived its lease: its end reports the loss")
                        .isInstanceOf(LockLostException.class).hasMessageContaining("'stuck'");
                assertThat(theirs.isHeldByCurrentThread()).as("another instance took the lock once the lease ended")
                        .isTrue();
                theirs.unlock();
            }
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class JobsConfig {
        @Bean
        Jobs jobs() {
            return new Jobs();
        }
    }

    /**
     * Scheduled jobs as an application declares them; never started by a scheduler here. Read through methods: the
     * bean is a subclass proxy whose own fields are never set.
     */
    public static class Jobs {
        private final AtomicInteger reports = new AtomicInteger();
        private final AtomicInteger cleanups = new AtomicInteger();
        private final AtomicLong cleanupToken = new AtomicLong();
        private volatile BooleanSupplier stuckUntil;

        public int reports() {
            return reports.get();
        }

        public int cleanups() {
            return cleanups.get();
        }

        public long cleanupToken() {
            return cleanupToken.get();
        }

        public void stopWhen(BooleanSupplier condition) {
            stuckUntil = condition;
        }

        @Scheduled(fixedDelay = 60_000)
        @Locked(name = "'report'")
        public void report() {
            reports.incrementAndGet();
        }

        @Scheduled(fixedDelay = 60_000)
        @Locked(name = "'cleanup'", atLeast = "1h")
        public void cleanup() {
            cleanups.incrementAndGet();
            cleanupToken.set(CurrentLock.fencingToken());
        }

        @Scheduled(fixedDelay = 60_000)
        @Locked(name = "'brief'", atLeast = "50ms")
        public void brief() {
        }

        /** Runs until another instance gets the lock, which only the end of the 200 ms lease allows. */
        @Scheduled(fixedDelay = 60_000)
        @Locked(name = "'stuck'", lease = "200ms")
        public void stuck() throws InterruptedException {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!stuckUntil.getAsBoolean()) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("no other instance got the lock within 30 s of a 200 ms lease");
                }
                Thread.sleep(10);
            }
        }
    }
}
