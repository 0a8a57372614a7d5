package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Fencing tokens over 5 masters whose counters diverge. */
@DisplayName("redlock fencing tokens")
class RedlockFencingTest {

    private String namespace;
    private TestNodes.Opened opened;

    @BeforeEach
    void open() {
        TestNodes.servers();
        namespace = TestNodes.namespace();
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(5))
                .operationTimeout(Duration.ofSeconds(1)).build();
        opened = TestNodes.open(TestNodes.COUNT, options, Duration.ofMillis(200));
    }

    @AfterEach
    void close() {
        opened.close();
        TestNodes.healAll();
    }

    @Test
    @DisplayName("tokens keep growing across a restart of one master without persistence, which is raised again")
    void restartOfOneMaster() {
        DistributedLock lock = opened.provider().getLock("fenced");
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            tokens.add(acquireAndRelease(lock));
        }
        TestNodes.kill(0);
        TestNodes.restart(0);
        assertThat(counter(0)).as("the restarted master forgot its counter").isZero();
        for (int i = 0; i < 4; i++) {
            tokens.add(acquireAndRelease(lock));
        }
        assertThat(tokens).isSorted().doesNotHaveDuplicates();
        assertThat(counter(0)).as("the restarted master's counter after it joined a quorum again")
                .isEqualTo(tokens.get(tokens.size() - 1));
    }

    @Test
    @DisplayName("tokens strictly increase when successive quorums share only masters with lower counters")
    void changingQuorums() {
        DistributedLock lock = opened.provider().getLock("quorums");
        List<Long> tokens = new ArrayList<>();
        // masters held by somebody else answer "busy", so the quorum is the other three, without losing data
        occupy(1, 2);
        for (int i = 0; i < 3; i++) {
            tokens.add(acquireAndRelease(lock));
        }
        free(1, 2);
        occupy(3, 4);
        tokens.add(acquireAndRelease(lock));
        // masters 1 and 2 started from 0 in this quorum and were raised to the token master 0 gave
        assertThat(counter(1)).isEqualTo(tokens.get(3));
        assertThat(counter(2)).isEqualTo(tokens.get(3));
        free(3, 4);
        occupy(0, 1);
        tokens.add(acquireAndRelease(lock));
        free(0, 1);
        assertThat(tokens).isSorted().doesNotHaveDuplicates();
    }

    @Test
    @DisplayName("a read's token is the highest of its masters' counters, raised on its quorum, so every later write's "
            + "is higher even on a quorum without the master that had it")
    void readTokensBetweenWrites() {
        current = "read-fenced";
        DistributedLock write = opened.provider().getLock(current);
        DistributedLock read = opened.provider().getReadWriteLock(current).readLock();
        long written = acquireAndRelease(write);
        // a master whose counter ran ahead (a write that reached it but failed its quorum)
        TestNodes.call(0, jedis -> jedis.set(new RedisKeys(namespace).fence(current), Long.toString(written + 100)));
        long readToken = acquireAndRelease(read);
        assertThat(readToken).as("the read's token: the highest counter of the masters that granted it")
                .isEqualTo(written + 100);
        for (int node = 1; node < TestNodes.COUNT; node++) {
            assertThat(counter(node)).as("master %s raised to the read's token", node).isEqualTo(readToken);
        }
        // the master that had the highest counter forgets it (a restart without persistence)
        TestNodes.call(0, jedis -> jedis.del(new RedisKeys(namespace).fence(current)));
        long next = acquireAndRelease(write);
        assertThat(next).as("the next write's token, on masters without master 0's counter").isGreaterThan(readToken);
        assertThat(acquireAndRelease(read)).as("a read after that write").isEqualTo(next);
    }

    private static long acquireAndRelease(DistributedLock lock) {
        assertThat(lock.tryLock()).isTrue();
        try {
            return lock.fencingToken();
        } finally {
            lock.unlock();
        }
    }

    private long counter(int node) {
        String value = TestNodes.call(node, jedis -> jedis.get(new RedisKeys(namespace).fence(nameOf(node))));
        return value == null ? 0 : Long.parseLong(value);
    }

    private String current = "fenced";

    private String nameOf(int node) {
        return current;
    }

    private void occupy(int... nodes) {
        current = "quorums";
        String key = new RedisKeys(namespace).lock("quorums");
        for (int node : nodes) {
            TestNodes.call(node, jedis -> {
                jedis.hset(key, "intruder", "1");
                return jedis.pexpire(key, 60_000);
            });
        }
    }

    private void free(int... nodes) {
        String key = new RedisKeys(namespace).lock("quorums");
        for (int node : nodes) {
            TestNodes.call(node, jedis -> jedis.del(key));
        }
    }
}
