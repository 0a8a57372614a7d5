package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** One master frozen with SIGSTOP: every acquisition still succeeds, in one round each, without it. */
@DisplayName("redlock with one master paused (SIGSTOP)")
class RedlockSlowNodeTest {

    @AfterEach
    void tearDown() {
        TestNodes.healAll();
    }

    @Test
    @DisplayName("acquisitions succeed in one round each, bounded by the node timeout rather than the pause")
    void pausedNodeIsOutwaited() throws Exception {
        String namespace = TestNodes.namespace();
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(5))
                .operationTimeout(Duration.ofSeconds(1)).build();
        try (TestNodes.Opened opened = TestNodes.open(TestNodes.COUNT, options, Duration.ofMillis(200))) {
            TestNodes.pause(4);
            DistributedLock lock = opened.provider().getLock("slow");
            for (int i = 0; i < 5; i++) {
                // tryLock() is a single round: the paused master never answers, so success means the round
                // stopped waiting for it after the node timeout and decided with the other four
                assertThat(lock.tryLock()).as("tryLock() #%d with one master paused", i + 1).isTrue();
                lock.unlock();
            }
            assertThat(lock.tryLock(2, TimeUnit.SECONDS)).isTrue();
            lock.unlock();
            assertThat(opened.store().attempts()).as("acquisition rounds for 6 acquisitions").isEqualTo(6);
            assertThat(TestNodes.heldAnywhere(4, namespace)).isEmpty();
            TestNodes.resume(4);
        }
        // what the paused master ran when it woke (late acquisitions) is cancelled or expires with its lease
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (!TestNodes.heldNames(4, namespace).isEmpty() && System.nanoTime() - deadline < 0) {
            Thread.sleep(100);
        }
        assertThat(TestNodes.heldNames(4, namespace)).isEmpty();
    }
}
