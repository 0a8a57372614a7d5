package io.locksmith.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedSemaphore;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.Permit;
import io.locksmith.local.LocalLockServer;
import io.locksmith.spi.LockStores;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The semaphore's two ways to take a permit lock: on the caller's thread for the built-in provider's locks, and
 * through {@code tryAcquireAsync} for the locks of any other {@link LockProvider} implementation (a decorator).
 */
class SlotSemaphoreTest {

    private final LocalLockServer server = LocalLockServer.named("semaphore-" + UUID.randomUUID());
    private final LockOptions options = LockOptions.builder().operationTimeout(Duration.ofSeconds(1)).build();
    private final List<LockProvider> providers = new ArrayList<>();

    @AfterEach
    void closeProviders() {
        providers.forEach(LockProvider::close);
        assertThat(server.heldKeys()).as("locks left in the store").isEmpty();
    }

    private LockProvider provider() {
        LockProvider provider = LockStores.newProvider(server.newStore(options), options);
        providers.add(provider);
        return provider;
    }

    @Test
    @DisplayName("a permit taken on the caller's thread is its handle's: not re-entered by that thread, closed by "
            + "another")
    void ownedByTheHandle() throws Exception {
        DistributedSemaphore semaphore = provider().getSemaphore("owned", 2);

        List<Permit> both = semaphore.tryAcquire(2, Duration.ZERO).orElseThrow();
        assertThat(both).extracting(Permit::lockName).doesNotHaveDuplicates();
        assertThat(semaphore.tryAcquire(Duration.ZERO)).as("a third permit of two, same thread").isEmpty();
        assertThat(semaphore.availablePermits()).isZero();

        CompletableFuture.runAsync(() -> both.forEach(Permit::close)).join();
        assertThat(semaphore.availablePermits()).isEqualTo(2);
        assertThat(both).noneMatch(Permit::isValid);
    }

    @Test
    @DisplayName("through another LockProvider implementation the permits come from tryAcquireAsync, with the same "
            + "bound, all-or-nothing requests and hand-over")
    void throughADecoratingProvider() throws Exception {
        AtomicInteger asyncAttempts = new AtomicInteger();
        LockProvider decorated = decorate(provider(), asyncAttempts);
        DistributedSemaphore semaphore = decorated.getSemaphore("decorated", 2);

        Permit first = semaphore.acquire();
        assertThat(asyncAttempts.get()).as("attempts through the decorator's tryAcquireAsync").isPositive();
        assertThat(semaphore.tryAcquire(2, Duration.ofMillis(50))).as("two more of two, one held").isEmpty();
        assertThat(semaphore.availablePermits()).as("nothing kept by the refused request").isEqualTo(1);

        Permit second = semaphore.tryAcquire(Duration.ZERO).orElseThrow();
        assertThat(second.lockName()).isNotEqualTo(first.lockName());
        CompletableFuture<Optional<Permit>> waiter = CompletableFuture.supplyAsync(() -> {
            try {
                return semaphore.tryAcquire(Duration.ofSeconds(30));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        first.close();
        Permit handedOver = waiter.join().orElseThrow();
        assertThat(handedOver.isValid()).isTrue();
        handedOver.close();
        second.close();
        assertThat(semaphore.availablePermits()).isEqualTo(2);
    }

    /** {@code provider} seen through proxies: its locks are not the built-in ones, and count async attempts. */
    private static LockProvider decorate(LockProvider provider, AtomicInteger asyncAttempts) {
        InvocationHandler providerCalls = (proxy, method, args) -> {
            if (method.isDefault() && method.getName().equals("getSemaphore")) {
                return InvocationHandler.invokeDefault(proxy, method, args); // builds on the proxy's getLock
            }
            Object result = invoke(provider, method, args);
            if (result instanceof DistributedLock lock) {
                return Proxy.newProxyInstance(SlotSemaphoreTest.class.getClassLoader(),
                        new Class<?>[] {DistributedLock.class}, (p, m, a) -> {
                            if (m.getName().equals("tryAcquireAsync")) {
                                asyncAttempts.incrementAndGet();
                            }
                            return invoke(lock, m, a);
                        });
            }
            return result;
        };
        return (LockProvider) Proxy.newProxyInstance(SlotSemaphoreTest.class.getClassLoader(),
                new Class<?>[] {LockProvider.class}, providerCalls);
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
