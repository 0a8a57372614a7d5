package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisKeys;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A semaphore's permit count on Redlock: a change is stored on a quorum with the next version, and a read takes the
 * highest version among a quorum's answers, so a master that missed a change is outvoted.
 */
@DisplayName("redlock semaphore permit counts with masters paused")
class RedlockPermitCountTest {

    private String namespace;
    private LockOptions options;

    @BeforeEach
    void setUp() {
        TestNodes.servers();
        namespace = TestNodes.namespace();
        options = LockOptions.builder().namespace(namespace).operationTimeout(Duration.ofSeconds(1)).build();
    }

    @AfterEach
    void tearDown() {
        TestNodes.healAll();
    }

    private LockProvider open() {
        return LockProvider.open(TestNodes.uri(TestNodes.COUNT, "nodeTimeout=200ms"), options);
    }

    private String record(int node) {
        String key = new RedisKeys(namespace).permits("exports");
        return TestNodes.call(node, jedis -> jedis.get(key));
    }

    @Test
    @DisplayName("a change made while 2 of 5 masters are paused is read back whichever quorum answers, and the next "
            + "change builds on its version")
    void minorityMissesAChange() {
        try (LockProvider provider = open()) {
            provider.setSemaphorePermits("exports", 3);
            for (int i = 0; i < TestNodes.COUNT; i++) {
                assertThat(record(i)).as("master %d after the first change", i).isEqualTo("1:3");
            }
            TestNodes.pause(3);
            TestNodes.pause(4);
            provider.setSemaphorePermits("exports", 5);
            TestNodes.resume(3);
            TestNodes.resume(4);
            assertThat(record(3)).as("a master paused during the change").isEqualTo("1:3");
            assertThat(record(0)).as("a master of the change's quorum").isEqualTo("2:5");
            assertThat(provider.semaphorePermits("exports")).hasValue(5);

            // a quorum of one current master and the two stale ones still reads the change
            TestNodes.pause(0);
            TestNodes.pause(1);
            assertThat(provider.semaphorePermits("exports")).as("read from masters 2, 3 and 4").hasValue(5);
            assertThat(provider.getSemaphore("exports").permits()).isEqualTo(5);
            TestNodes.resume(0);
            TestNodes.resume(1);

            provider.setSemaphorePermits("exports", 2);
            for (int i = 0; i < TestNodes.COUNT; i++) {
                assertThat(record(i)).as("master %d after the third change", i).isEqualTo("3:2");
            }
        }
    }

    @Test
    @DisplayName("with 3 of 5 masters paused a change and a read fail, naming the missing quorum; the count is "
            + "unchanged once they answer again")
    void noQuorumNoChange() {
        try (LockProvider provider = open()) {
            provider.setSemaphorePermits("exports", 4);
            TestNodes.pause(0);
            TestNodes.pause(1);
            TestNodes.pause(2);
            assertThatThrownBy(() -> provider.setSemaphorePermits("exports", 9))
                    .isInstanceOf(LockBackendException.class).hasMessageContaining("a quorum of 3 is needed");
            assertThatThrownBy(() -> provider.semaphorePermits("exports"))
                    .isInstanceOf(LockBackendException.class).hasMessageContaining("a quorum of 3 is needed");
            TestNodes.resume(0);
            TestNodes.resume(1);
            TestNodes.resume(2);
            assertThat(provider.semaphorePermits("exports")).hasValue(4);
        }
    }

    @Test
    @DisplayName("a change whose write reaches only 2 of 5 masters fails, saying the count may be either; a later "
            + "read that hears those 2 sees it")
    void writeWithoutQuorumFails() {
        try (TestNodes.Opened opened = TestNodes.open(TestNodes.COUNT, options, Duration.ofMillis(200),
                i -> store -> i >= 3 ? store : new ForwardingStore(store) {
                    @Override
                    public void setPermitRecord(String name, String record) {
                        if (!record.startsWith("1:")) {
                            throw new LockBackendException("refused by the test");
                        }
                        super.setPermitRecord(name, record);
                    }
                })) {
            LockProvider provider = opened.provider();
            provider.setSemaphorePermits("exports", 4);
            assertThatThrownBy(() -> provider.setSemaphorePermits("exports", 9))
                    .isInstanceOf(LockBackendException.class).hasMessageContaining("stored on 2 node(s)")
                    .hasMessageContaining("the old count or the new one");
            assertThat(record(0)).isEqualTo("1:4");
            assertThat(record(3)).isEqualTo("2:9");
            assertThat(provider.semaphorePermits("exports")).as("a read that hears masters holding the failed "
                    + "change's version").hasValue(9);
        }
    }
}
