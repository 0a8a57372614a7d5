package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Redlock keeps working while a minority of its masters is down, and stops (and says so) without a majority. */
@DisplayName("redlock availability with masters killed")
class RedlockAvailabilityTest {

    private final ExecutorService threads = Executors.newCachedThreadPool();
    private String namespace;
    private LockOptions options;

    @BeforeEach
    void setUp() {
        TestNodes.servers();
        namespace = TestNodes.namespace();
        options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(5))
                .operationTimeout(Duration.ofSeconds(1)).build();
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        TestNodes.healAll();
    }

    private LockProvider open() {
        return LockProvider.open(TestNodes.uri(TestNodes.COUNT, "nodeTimeout=200ms"), options);
    }

    @Test
    @DisplayName("2 of 5 masters killed: locks still acquire, exclude and release, and nothing is left behind")
    void minorityDown() throws Exception {
        try (LockProvider a = open(); LockProvider b = open()) {
            TestNodes.kill(3);
            TestNodes.kill(4);
            DistributedLock lockA = a.getLock("stock");
            DistributedLock lockB = b.getLock("stock");
            for (int round = 0; round < 3; round++) {
                assertThat(lockA.tryLock(5, TimeUnit.SECONDS)).as("A acquires with 3 of 5 masters").isTrue();
                assertThat(lockB.tryLock()).as("B while A holds").isFalse();
                assertThat(lockB.isLocked()).isTrue();
                lockA.unlock();
                assertThat(lockB.tryLock(5, TimeUnit.SECONDS)).as("B after A released").isTrue();
                lockB.unlock();
            }
            assertThat(TestNodes.heldAnywhere(3, namespace)).isEmpty();
        }
    }

    @Test
    @DisplayName("3 of 5 masters killed: acquisition fails with LockBackendException well within the wait, "
            + "and works again once they return")
    void majorityDown() throws Exception {
        try (LockProvider provider = open()) {
            DistributedLock lock = provider.getLock("stock");
            assertThat(lock.tryLock()).isTrue();
            lock.unlock();
            TestNodes.kill(0);
            TestNodes.kill(1);
            TestNodes.kill(2);
            assertThatThrownBy(lock::tryLock).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("quorum 3");
            // a 60 s wait: the failure must come from the missing quorum, not from the wait running out
            Future<Boolean> waiting = threads.submit(() -> lock.tryLock(60, TimeUnit.SECONDS));
            Throwable failure = null;
            try {
                waiting.get(15, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                failure = e.getCause();
            }
            assertThat(failure).as("tryLock(60 s) with 3 of 5 masters down").isInstanceOf(LockBackendException.class);
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            TestNodes.restart(0);
            TestNodes.restart(1);
            TestNodes.restart(2);
            boolean acquired = false;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!acquired && System.nanoTime() - deadline < 0) {
                try {
                    acquired = lock.tryLock();
                } catch (LockBackendException stillDown) {
                    Thread.sleep(50);
                }
            }
            assertThat(acquired).as("acquires again after the masters returned").isTrue();
            lock.unlock();
        }
        assertThat(TestNodes.heldAnywhere(TestNodes.COUNT, namespace)).isEmpty();
    }

    @Test
    @DisplayName("a provider cannot be opened while a majority of masters is down")
    void openNeedsQuorum() {
        TestNodes.kill(0);
        TestNodes.kill(1);
        TestNodes.kill(2);
        assertThatThrownBy(this::open).isInstanceOf(LockBackendException.class).hasMessageContaining("quorum 3");
    }
}
