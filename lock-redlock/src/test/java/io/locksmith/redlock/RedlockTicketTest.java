package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.spi.Acquisition;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A waiter's ticket (its seniority among the waiters) is a number of each master's own counter, which drift apart
 * under split votes; the ticket a master told the run is the one the run sends that master again.
 */
@DisplayName("redlock tickets")
class RedlockTicketTest {

    @Test
    @DisplayName("each master judges a waiter by the ticket it gave it, not by another master's number")
    void ticketsStayWithTheirMaster() {
        TestNodes.servers();
        String namespace = TestNodes.namespace();
        RedisKeys keys = new RedisKeys(namespace);
        String name = "tickets";
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(30))
                .operationTimeout(Duration.ofSeconds(1)).build();
        // held on every master by somebody else; master 0's counter far ahead of the others'
        TestNodes.heldByIntruder(3, keys, name);
        for (int i = 0; i < 3; i++) {
            String counter = i == 0 ? "1000" : "5";
            TestNodes.call(i, jedis -> jedis.set(keys.fence(name), counter));
        }
        try (TestNodes.Opened opened = TestNodes.open(3, options, Duration.ofMillis(500))) {
            RedlockStore store = opened.store();
            RedlockStore.Hold waiter = store.newHold(name, "waiter");
            Runnable wakeUp = () -> { };
            Acquisition first = store.tryAcquire(waiter, options.leaseTime(), Duration.ZERO, wakeUp);
            assertThat(first.isClaimed()).as("the first look claims the next turn on a quorum").isTrue();

            // Meanwhile another waiter, older on master 0 (ticket 500 against the waiter's 1000 there), took the
            // claim on master 0. The waiter's tickets on masters 1 and 2 are 5: sent to master 0, such a number
            // would make it the older one there and take the claim back.
            TestNodes.call(0, jedis -> {
                jedis.hset(keys.claim(name), Map.of("owner", "older", "at", "500", "shared", "0"));
                return jedis.pexpire(keys.claim(name), 60_000);
            });
            store.tryAcquire(waiter, options.leaseTime(), Duration.ZERO, wakeUp);
            String claimant = TestNodes.call(0, jedis -> jedis.hget(keys.claim(name), "owner"));
            assertThat(claimant).as("the claimant on master 0 after the waiter's second look").isEqualTo("older");
            for (int i = 1; i < 3; i++) {
                int node = i;
                Map<String, String> claim = TestNodes.call(node, jedis -> jedis.hgetAll(keys.claim(name)));
                assertThat(claim).as("the claim on master %d", node).containsEntry("owner", "waiter").containsEntry("at", "5");
            }
            store.abandon(waiter);
        } finally {
            for (int i = 0; i < 3; i++) {
                TestNodes.call(i, jedis -> jedis.del(keys.lock(name), keys.fence(name), keys.claim(name)));
            }
        }
    }
}
