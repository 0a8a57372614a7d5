package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * One release publishes on every master; a waiter is woken when the messages may have freed a quorum, never
 * later than that, and the messages of one release do not start a round each.
 */
@DisplayName("redlock wake-ups")
class RedlockWakeUpTest {

    @Test
    @DisplayName("a waiter is woken by the message of the master that completes a quorum, not by the first one")
    void wokenOnceAQuorumMayBeFree() throws Exception {
        LockOptions options = options();
        RedisKeys keys = new RedisKeys(options.namespace());
        String name = "quorum-wake-up";
        TestNodes.heldByIntruder(3, keys, name);
        try (TestNodes.Opened opened = TestNodes.open(3, options, Duration.ofMillis(500))) {
            RedlockStore store = opened.store();
            Semaphore woken = new Semaphore(0);
            Runnable waker = woken::release;
            // a second subscriber, after the waiter's on every master: each master's messages reach the waiter's
            // callback first, on the same thread, so once this one has one the waiter has had it too
            Semaphore delivered = new Semaphore(0);
            LockStore.Subscription waiting = store.subscribe(name, waker);
            LockStore.Subscription probe = store.subscribe(name, delivered::release);
            try {
                awaitSubscribers(keys.channel(name));
                RedlockStore.Hold hold = store.newHold(name, "waiter");
                Acquisition first = store.tryAcquire(hold, options.leaseTime(), Duration.ZERO, waker);
                assertThat(first.isAcquired()).as("the waiter's round while every master is held").isFalse();

                release(0, keys, name, "released");
                assertThat(delivered.tryAcquire(10, TimeUnit.SECONDS)).as("master 0's message delivered").isTrue();
                assertThat(woken.availablePermits()).as("wake-ups once master 0 of 3 is free").isZero();

                release(1, keys, name, "released");
                assertThat(delivered.tryAcquire(10, TimeUnit.SECONDS)).as("master 1's message delivered").isTrue();
                assertThat(woken.availablePermits()).as("wake-ups once masters 0 and 1 are free").isEqualTo(1);

                Acquisition second = store.tryAcquire(hold, options.leaseTime(), Duration.ZERO, waker);
                assertThat(second.isAcquired()).as("the round the wake-up started").isTrue();
                assertThat(store.release(hold)).isTrue();
            } finally {
                probe.close();
                waiting.close();
            }
        } finally {
            for (int i = 0; i < 3; i++) {
                TestNodes.call(i, jedis -> jedis.del(keys.lock(name), keys.fence(name), keys.claim(name)));
            }
        }
    }

    @Test
    @DisplayName("a waiter that claims the next turn on no master is not woken by releases naming another claimant; one "
            + "that claims it on some master is, since the masters' claims may be split")
    void releasesNamingAnotherClaimant() throws Exception {
        LockOptions options = options();
        RedisKeys keys = new RedisKeys(options.namespace());
        String name = "named-wake-up";
        try (TestNodes.Opened opened = TestNodes.open(3, options, Duration.ofMillis(500))) {
            RedlockStore store = opened.store();
            Semaphore woken = new Semaphore(0);
            Runnable waker = woken::release;
            Semaphore delivered = new Semaphore(0);
            LockStore.Subscription waiting = store.subscribe(name, waker);
            LockStore.Subscription probe = store.subscribe(name, delivered::release);
            try {
                awaitSubscribers(keys.channel(name));
                TestNodes.heldByIntruder(3, keys, name);
                claimedByOther(keys, name, 0, 1, 2);
                RedlockStore.Hold hold = store.newHold(name, "waiter");
                Acquisition round = store.tryAcquire(hold, options.leaseTime(), Duration.ZERO, waker);
                assertThat(round.isAcquired() || round.isClaimed()).as("busy everywhere, claimed nowhere").isFalse();
                release(0, keys, name, OTHER);
                release(1, keys, name, OTHER);
                assertThat(delivered.tryAcquire(2, 10, TimeUnit.SECONDS)).as("both messages delivered").isTrue();
                assertThat(woken.availablePermits()).as("wake-ups by releases naming the other claimant").isZero();
                TestNodes.heldByIntruder(3, keys, name);
                release(0, keys, name, "released");
                release(1, keys, name, "released");
                assertThat(delivered.tryAcquire(2, 10, TimeUnit.SECONDS)).as("both messages delivered").isTrue();
                assertThat(woken.availablePermits()).as("wake-ups by releases naming nobody").isEqualTo(1);

                woken.drainPermits();
                TestNodes.heldByIntruder(3, keys, name);
                for (int i = 0; i < 3; i++) {
                    TestNodes.call(i, jedis -> jedis.del(keys.claim(name)));
                }
                claimedByOther(keys, name, 1, 2);
                round = store.tryAcquire(hold, options.leaseTime(), Duration.ZERO, waker);
                assertThat(round.isAcquired() || round.isClaimed()).as("busy, claimed on master 0 alone").isFalse();
                assertThat(TestNodes.<String>call(0, jedis -> jedis.hget(keys.claim(name), "owner"))).isEqualTo("waiter");
                release(1, keys, name, OTHER);
                release(2, keys, name, OTHER);
                assertThat(delivered.tryAcquire(2, 10, TimeUnit.SECONDS)).as("both messages delivered").isTrue();
                assertThat(woken.availablePermits()).as("wake-ups of a split claimant by releases naming the other")
                        .isEqualTo(1);
            } finally {
                probe.close();
                waiting.close();
            }
        } finally {
            for (int i = 0; i < 3; i++) {
                TestNodes.call(i, jedis -> jedis.del(keys.lock(name), keys.fence(name), keys.claim(name)));
            }
        }
    }

    /** Options on a fresh namespace of the test masters, which are started if they are not yet. */
    private static LockOptions options() {
        TestNodes.servers();
        return LockOptions.builder().namespace(TestNodes.namespace()).leaseTime(Duration.ofSeconds(30))
                .operationTimeout(Duration.ofSeconds(1)).build();
    }

    private static final String OTHER = "other-claimant";

    /** On each of {@code masters}, another run's claim to the next turn, older than any ticket the waiter gets. */
    private static void claimedByOther(RedisKeys keys, String name, int... masters) {
        for (int i : masters) {
            TestNodes.call(i, jedis -> {
                jedis.set(keys.fence(name), "100");
                jedis.hset(keys.claim(name), Map.of("owner", OTHER, "at", "1", "shared", "0", "since", "100"));
                return jedis.pexpire(keys.claim(name), 60_000);
            });
        }
    }

    /**
     * An intruder's release on master {@code i}, as the release script does it: the hash goes, then the message
     * ({@code released}, or the claimant's owner id).
     */
    private static void release(int i, RedisKeys keys, String name, String message) {
        TestNodes.call(i, jedis -> {
            jedis.del(keys.lock(name));
            return jedis.publish(keys.channel(name), message);
        });
    }


    /** Waits until every master counts this JVM's subscription to {@code channel}, so no message can miss it. */
    private static void awaitSubscribers(String channel) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (int i = 0; i < 3; i++) {
            int node = i;
            while (TestNodes.call(node, jedis -> jedis.pubsubNumSub(channel)).getOrDefault(channel, 0L) == 0) {
                assertThat(System.nanoTime() - deadline).as("master %d confirms the subscription", node).isNegative();
                Thread.sleep(10);
            }
        }
    }

    @Test
    @DisplayName("messages during a round count against what the round saw, at its end")
    void messagesDuringARoundAreJudgedAtItsEnd() {
        AtomicInteger woken = new AtomicInteger();
        RedlockStore.QuorumWakeUp wakeUp = new RedlockStore.QuorumWakeUp(3, 2, woken::incrementAndGet);
        boolean[] allBusy = {true, true, true};

        wakeUp.released(0);
        assertThat(woken).as("before any round: every message wakes").hasValue(1);

        // the second and third masters' messages of the release that started this round arrive during it, and
        // the round finds every master held again (by the next holder): one master freed since is no quorum
        wakeUp.roundStarting();
        wakeUp.released(1);
        assertThat(woken).as("no wake-up during a round").hasValue(1);
        wakeUp.roundEnded(allBusy);
        assertThat(woken).as("one master heard from during a round that found all busy").hasValue(1);

        // the next holder releases on two masters after the round's calls there
        wakeUp.roundStarting();
        wakeUp.released(2);
        wakeUp.released(0);
        wakeUp.roundEnded(allBusy);
        assertThat(woken).as("two masters heard from during a round that found all busy").hasValue(2);

        // a round that nothing was heard during wakes nobody, whatever it saw
        wakeUp.roundStarting();
        wakeUp.roundEnded(new boolean[] {false, false, true});
        assertThat(woken).as("a round without messages").hasValue(2);
        // a master that answered free (or not at all) counts as possibly free: one release completes a quorum
        wakeUp.released(2);
        assertThat(woken).as("the busy master's message after a round that found one free").hasValue(3);
    }

    @Test
    @DisplayName("a master that cannot push counts as possibly free")
    void silentMastersCountAsFree() {
        AtomicInteger woken = new AtomicInteger();
        RedlockStore.QuorumWakeUp wakeUp = new RedlockStore.QuorumWakeUp(3, 2, woken::incrementAndGet);
        wakeUp.pushesNothing(0);
        wakeUp.roundStarting();
        wakeUp.roundEnded(new boolean[] {true, true, true});
        wakeUp.released(1);
        assertThat(woken).hasValue(1);
    }
}
