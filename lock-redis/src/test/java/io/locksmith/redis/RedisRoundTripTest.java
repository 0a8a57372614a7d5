package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.ServerMonitor.Command;
import io.locksmith.redis.internal.RedisHold;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisLockStore;
import io.locksmith.redis.internal.RedisScripts;
import io.locksmith.redis.internal.RedisStoreProbe;
import io.locksmith.tests.servers.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Round trips counted at the server: {@code MONITOR} shows every command a client sends (and leaves out those
 * that scripts run inside the server), {@code INFO commandstats} confirms the totals.
 */
@DisplayName("Redis round trips, counted at the server")
class RedisRoundTripTest {

    private static RedisServer server;
    private static RedisAdmin admin;
    private static ServerMonitor monitor;

    @BeforeAll
    static void startServer() throws Exception {
        server = RedisServer.start();
        admin = new RedisAdmin(server);
        monitor = new ServerMonitor(server.host(), server.port(), admin);
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (monitor != null) {
            monitor.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private static LockOptions.Builder options() {
        return LockOptions.builder().namespace(TestRedis.freshNamespace()).leaseTime(Duration.ofSeconds(60));
    }

    @Test
    @DisplayName("an uncontended lock() + unlock() sends exactly two EVALSHA: acquire and release")
    void uncontendedCycleIsTwoCommands() {
        try (LockProvider provider = LockProvider.open(server.uri(), options().build())) {
            DistributedLock lock = provider.getLock("stock:sku-42");
            lock.lock();
            lock.unlock();
            Map<String, Long> before = admin.commandCalls();
            monitor.commandsSinceLastMark();

            int cycles = 10;
            for (int i = 0; i < cycles; i++) {
                lock.lock();
                lock.unlock();
            }

            List<Command> sent = monitor.commandsSinceLastMark();
            Map<String, Long> after = admin.commandCalls();
            assertThat(sent).as("commands sent for %d uncontended cycles", cycles).hasSize(2 * cycles);
            for (int i = 0; i < cycles; i++) {
                assertThat(sent.get(2 * i).name()).isEqualTo("evalsha");
                assertThat(sent.get(2 * i).sha()).as("cycle %d, first command", i)
                        .isEqualTo(RedisScripts.ACQUIRE.sha());
                assertThat(sent.get(2 * i + 1).name()).isEqualTo("evalsha");
                assertThat(sent.get(2 * i + 1).sha()).as("cycle %d, second command", i)
                        .isEqualTo(RedisScripts.RELEASE.sha());
            }
            assertThat(after.get("evalsha") - before.get("evalsha")).as("EVALSHA calls in INFO commandstats")
                    .isEqualTo(2L * cycles);
        }
    }

    @Test
    @DisplayName("a lease that is not whole milliseconds is set rounded up, on acquisition and on renewal")
    void leaseIsRoundedUpToMilliseconds() {
        Duration lease = Duration.ofSeconds(30).plusNanos(1);
        try (RedisLockStore store = TestRedis.store(server, options().build())) {
            RedisHold hold = store.newHold("rounded", "0123456789abcdef0123456789abcdef.1");
            monitor.commandsSinceLastMark();
            assertThat(store.tryAcquire(hold, lease, Duration.ZERO, null).isAcquired()).isTrue();
            assertThat(store.renew(List.of(hold), lease).gone()).isEmpty();
            assertThat(store.release(hold)).isTrue();
            List<Command> sent = monitor.commandsSinceLastMark();
            assertThat(sent).extracting(Command::sha).containsExactly(RedisScripts.ACQUIRE.sha(),
                    RedisScripts.RENEW.sha(), RedisScripts.RELEASE.sha());
            // acquire: evalsha, sha, key count, 6 keys, owner, lease, attempt; renew: sha, 1 key, lease, owner, attempt
            assertThat(sent.get(0).args().get(2)).as("keys of the acquisition").isEqualTo("6");
            assertThat(sent.get(0).args().get(10)).as("PEXPIRE of the acquisition").isEqualTo("30001");
            assertThat(sent.get(1).args().get(4)).as("PEXPIRE of the renewal").isEqualTo("30001");
        }
        assertThat(RedisStoreProbe.leaseMillis(Duration.ofMillis(30_000))).as("whole milliseconds").isEqualTo(30_000);
        assertThat(RedisStoreProbe.leaseMillis(Duration.ofNanos(999_999_999))).isEqualTo(1_000);
        assertThat(RedisStoreProbe.leaseMillis(Duration.ofNanos(1))).isEqualTo(1);
    }

    @Test
    @DisplayName("re-entering a held lock sends nothing to the server")
    void reentryIsFree() {
        try (LockProvider provider = LockProvider.open(server.uri(), options().build())) {
            DistributedLock lock = provider.getLock("reentrant");
            lock.lock();
            long token = lock.fencingToken();
            monitor.commandsSinceLastMark();
            for (int i = 0; i < 50; i++) {
                lock.lock();
                assertThat(lock.tryLock()).isTrue();
            }
            for (int i = 0; i < 100; i++) {
                lock.unlock();
            }
            assertThat(monitor.commandsSinceLastMark()).as("commands sent for 100 re-entries and their unlocks")
                    .isEmpty();
            assertThat(lock.fencingToken()).isEqualTo(token);
            lock.unlock();
            assertThat(monitor.commandsSinceLastMark()).extracting(Command::sha)
                    .containsExactly(RedisScripts.RELEASE.sha());
        }
    }

    @Test
    @DisplayName("after SCRIPT FLUSH, each script is loaded again once (NOSCRIPT), then called by SHA as before")
    void scriptsAreReloadedAfterFlush() {
        try (LockProvider provider = LockProvider.open(server.uri(), options().build())) {
            DistributedLock lock = provider.getLock("flushed");
            lock.lock();
            lock.unlock();
            admin.call(jedis -> jedis.scriptFlush());
            monitor.commandsSinceLastMark();

            lock.lock();
            lock.unlock();
            List<Command> sent = monitor.commandsSinceLastMark();
            assertThat(sent).extracting(c -> c.name().equals("evalsha") ? "evalsha " + c.sha()
                            : (c.name() + " " + c.args().get(1)).toLowerCase(java.util.Locale.ROOT))
                    .as("commands of the first cycle after SCRIPT FLUSH")
                    .containsExactly(
                            "evalsha " + RedisScripts.ACQUIRE.sha(), "script load",
                            "evalsha " + RedisScripts.ACQUIRE.sha(), "evalsha " + RedisScripts.RELEASE.sha(),
                            "script load", "evalsha " + RedisScripts.RELEASE.sha());
            List<Boolean> cached = admin.call(jedis -> jedis.scriptExists(RedisScripts.ACQUIRE.sha(),
                    RedisScripts.RELEASE.sha()));
            assertThat(cached).as("SCRIPT EXISTS acquire, release").containsExactly(true, true);
            monitor.commandsSinceLastMark();

            lock.lock();
            lock.unlock();
            assertThat(monitor.commandsSinceLastMark()).extracting(Command::sha)
                    .containsExactly(RedisScripts.ACQUIRE.sha(), RedisScripts.RELEASE.sha());
        }
    }

    @Test
    @DisplayName("inspect and forceRelease are one EVALSHA each; their scripts are loaded on first use only")
    void inspectAndForceReleaseAreOneCommandEach() {
        try (LockProvider app = LockProvider.open(server.uri(), options().build());
             LockProvider operator = LockProvider.open(server.uri(), app.options())) {
            DistributedLock lock = app.getLock("inspected");
            lock.lock();
            operator.inspect("inspected");
            operator.forceRelease("other");
            monitor.commandsSinceLastMark();

            assertThat(operator.inspect("inspected").isLocked()).isTrue();
            assertThat(operator.forceRelease("inspected")).isTrue();
            assertThat(monitor.commandsSinceLastMark())
                    .extracting(c -> c.name() + " " + c.sha() + " " + c.keys())
                    .as("commands of one inspect and one forceRelease")
                    .containsExactly(
                            "evalsha " + RedisScripts.INSPECT.sha() + " " + List.of(
                                    new RedisKeys(app.options().namespace()).lock("inspected"),
                                    new RedisKeys(app.options().namespace()).fence("inspected")),
                            "evalsha " + RedisScripts.FORCE_RELEASE.sha() + " " + List.of(
                                    new RedisKeys(app.options().namespace()).lock("inspected")));
        }
    }

    @Test
    @DisplayName("1 000 held locks renew with one EVALSHA per 100 locks: 10 calls per renewal round")
    void renewalIsBatched() throws Exception {
        int locks = 1_000;
        LockOptions options = options().leaseTime(Duration.ofSeconds(5)).renewInterval(Duration.ofMillis(500)).build();
        try (LockProvider provider = LockProvider.open(server.uri(), options)) {
            List<DistributedLock> held = new ArrayList<>();
            for (int i = 0; i < locks; i++) {
                DistributedLock lock = provider.getLock("job-" + i);
                lock.lock();
                held.add(lock);
            }
            monitor.commandsSinceLastMark();

            // Collect renewal calls until two whole rounds (each lock renewed once) have been seen after the mark.
            List<Command> renewals = new ArrayList<>();
            List<List<Command>> rounds = List.of();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (completeRounds(rounds, locks) < 3 && System.nanoTime() < deadline) {
                Thread.sleep(200);
                List<Command> sent = monitor.commandsSinceLastMark();
                assertThat(sent).as("while only renewing, the provider sends nothing but the renew script")
                        .allSatisfy(c -> assertThat(c.sha()).isEqualTo(RedisScripts.RENEW.sha()));
                renewals.addAll(sent);
                rounds = rounds(renewals);
            }
            // The first round may have started before the mark; the others are whole.
            List<List<Command>> whole = rounds.subList(1, rounds.size()).stream()
                    .filter(round -> keysOf(round).size() == locks).toList();
            assertThat(whole).as("whole renewal rounds seen within 30 s").hasSizeGreaterThanOrEqualTo(2);
            for (List<Command> round : whole) {
                assertThat(round).as("EVALSHA calls of one renewal round of %d locks", locks).hasSize(10);
                assertThat(round).allSatisfy(c -> assertThat(c.keys()).hasSize(100));
            }
            for (DistributedLock lock : held) {
                lock.unlock();
            }
        }
    }

    /** Splits renewal calls into rounds: a round ends where a lock it already renewed comes again. */
    private static List<List<Command>> rounds(List<Command> renewals) {
        List<List<Command>> rounds = new ArrayList<>();
        List<Command> current = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (Command call : renewals) {
            if (call.keys().stream().anyMatch(seen::contains)) {
                rounds.add(current);
                current = new ArrayList<>();
                seen.clear();
            }
            current.add(call);
            seen.addAll(call.keys());
        }
        if (!current.isEmpty()) {
            rounds.add(current);
        }
        return rounds;
    }

    private static int completeRounds(List<List<Command>> rounds, int locks) {
        return (int) rounds.stream().filter(round -> keysOf(round).size() == locks).count();
    }

    private static Set<String> keysOf(List<Command> round) {
        Set<String> keys = new HashSet<>();
        round.forEach(call -> keys.addAll(call.keys()));
        return keys;
    }
}
