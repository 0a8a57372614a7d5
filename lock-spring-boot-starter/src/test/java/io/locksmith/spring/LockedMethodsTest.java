package io.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockProvider;
import io.locksmith.spring.Locked.OnBusy;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** {@code @Locked} on bean methods, two application instances on one real Redis server. */
class LockedMethodsTest {

    @Test
    void twoInstancesNeverRunTheSameLockedSectionAtOnce() throws Exception {
        Stock.inside.set(0);
        Stock.overlaps.set(0);
        Fixtures.onRedis().withUserConfiguration(StockConfig.class).run(first ->
                Fixtures.onRedis().withUserConfiguration(StockConfig.class)
                        .withPropertyValues("locksmith.namespace=" + first.getBean(LockProvider.class).options()
                                .namespace())
                        .run(second -> {
                            Stock a = first.getBean(Stock.class);
                            Stock b = second.getBean(Stock.class);
                            ExecutorService pool = Executors.newFixedThreadPool(4);
                            List<Future<?>> calls = new ArrayList<>();
                            for (int i = 0; i < 100; i++) {
                                Stock stock = i % 2 == 0 ? a : b;
                                calls.add(pool.submit(() -> stock.deduct("sku-1", 0)));
                            }
                            for (Future<?> call : calls) {
                                call.get();
                            }
                            pool.shutdown();
                            assertThat(Stock.overlaps).as("calls inside the section at once").hasValue(0);
                            assertThat(a.calls() + b.calls()).isEqualTo(100);
                        }));
    }

    @Test
    void theFencingTokenReachesTheMethodAndGrowsFromCallToCall() {
        Fixtures.onRedis().withUserConfiguration(StockConfig.class).run(context -> {
            Stock stock = context.getBean(Stock.class);
            long first = stock.deduct("sku-2", -1);
            long second = stock.deduct("sku-2", -1);
            assertThat(stock.lastCurrentToken()).as("CurrentLock gives the injected token").isEqualTo(second);
            assertThat(first).isPositive();
            assertThat(second).isGreaterThan(first);
            assertThat(CurrentLock.isPresent()).as("outside any locked call").isFalse();
        });
    }

    @Test
    void aNestedCallOnALockHeldByAHolderThreadRunsUnderThatHold() {
        // the outer hold belongs to a holder thread (atLeast): without re-entry by lock name, the inner call on the
        // caller's thread would find the lock held and fail
        Fixtures.onRedis().withUserConfiguration(StockConfig.class).run(context -> {
            Stock stock = context.getBean(Stock.class);
            assertThat(stock.outer(context.getBean(Inner.class))).as("the inner call ran with the outer token")
                    .isTrue();
        });
    }

    @Test
    void aBusyLockWaitsFailsOrSkipsAsTheAnnotationSays() {
        Fixtures.onRedis().withUserConfiguration(StockConfig.class).run(context -> {
            Stock stock = context.getBean(Stock.class);
            try (LockProvider other = Fixtures.otherRedisInstance(context.getBean(LockProvider.class))) {
                DistributedLock held = other.getLock("stock:sku-4");
                held.lock();
                assertThatThrownBy(() -> stock.failFast("sku-4")).isInstanceOf(LockBusyException.class)
                        .hasMessageContaining("'stock:sku-4'").hasMessageContaining("Stock.failFast");
                assertThatThrownBy(() -> stock.waitBriefly("sku-4")).isInstanceOf(LockBusyException.class)
                        .hasMessageContaining("wait limit 20 ms");
                assertThat(stock.skip("sku-4")).isEmpty();
                assertThat(stock.skipCount("sku-4")).isZero();
                assertThat(stock.calls()).as("no busy call ran").isZero();
                held.unlock();
                assertThat(stock.skip("sku-4")).contains("ran");
            }
        });
    }

    @Test
    void aWrongAnnotationStopsTheApplicationNamingTheMethod() {
        Fixtures.onRedis().withUserConfiguration(WrongConfig.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .hasMessageContaining("@Locked on " + Wrong.class.getName() + ".longerAtLeastThanLease")
                    .hasMessageContaining("atLeast (PT1M) must not exceed lease (PT10S)");
        });
    }

    @Test
    void aNameThatEvaluatesToNothingIsRefusedAtTheCall() {
        Fixtures.onRedis().withUserConfiguration(StockConfig.class).run(context -> {
            Stock stock = context.getBean(Stock.class);
            assertThatThrownBy(() -> stock.deduct(null, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("Stock.deduct").hasMessageContaining("'stock:' + #sku");
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class StockConfig {
        @Bean
        Stock stock() {
            return new Stock();
        }

        @Bean
        Inner inner() {
            return new Inner();
        }
    }

    /** Called from inside {@link Stock#outer}, through its proxy. */
    public static class Inner {
        @Locked(name = "'nested'", onBusy = OnBusy.FAIL)
        public long inner() {
            return CurrentLock.fencingToken();
        }
    }

    /**
     * A stock service as an application writes it. The tests read its state through methods: the bean they get is
     * a subclass proxy whose own fields are never set.
     */
    public static class Stock {
        static final AtomicInteger inside = new AtomicInteger();
        static final AtomicInteger overlaps = new AtomicInteger();
        private final AtomicInteger calls = new AtomicInteger();
        private volatile long lastCurrentToken;

        public int calls() {
            return calls.get();
        }

        public long lastCurrentToken() {
            return lastCurrentToken;
        }

        @Locked(name = "#sku == null ? null : 'stock:' + #sku")
        public long deduct(String sku, @FencingToken long token) {
            if (inside.incrementAndGet() > 1) {
                overlaps.incrementAndGet();
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            calls.incrementAndGet();
            lastCurrentToken = CurrentLock.fencingToken();
            inside.decrementAndGet();
            return token;
        }

        @Locked(name = "'nested'", atLeast = "1ms", onBusy = OnBusy.FAIL)
        public boolean outer(Inner inner) {
            return inner.inner() == CurrentLock.fencingToken();
        }

        @Locked(name = "'stock:' + #sku", onBusy = OnBusy.FAIL)
        public void failFast(String sku) {
            calls.incrementAndGet();
        }

        @Locked(name = "'stock:' + #sku", waitFor = "20ms")
        public void waitBriefly(String sku) {
            calls.incrementAndGet();
        }

        @Locked(name = "'stock:' + #sku", onBusy = OnBusy.SKIP)
        public Optional<String> skip(String sku) {
            return Optional.of("ran");
        }

        @Locked(name = "'stock:' + #sku", onBusy = OnBusy.SKIP)
        public int skipCount(String sku) {
            calls.incrementAndGet();
            return 1;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class WrongConfig {
        @Bean
        Wrong wrong() {
            return new Wrong();
        }
    }

    /** An annotation that cannot hold. */
    public static class Wrong {
        @Locked(name = "'job'", lease = "10s", atLeast = "1m")
        public void longerAtLeastThanLease() {
        }
    }
}
