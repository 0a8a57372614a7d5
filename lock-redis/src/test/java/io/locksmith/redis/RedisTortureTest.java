package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.tests.servers.RedisServer;
import io.locksmith.tests.torture.Fault;
import io.locksmith.tests.torture.TortureProfile;
import io.locksmith.tests.torture.TortureReport;
import io.locksmith.tests.torture.TortureRun;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Many client processes (worker JVMs, each with its own {@code redis://} provider) hammering a few locks on one
 * redis-server process while it, or one of the clients, is killed or frozen; see {@code docs/reliability.md}.
 *
 * <p>Two servers: a plain one, as the other tests run it (no persistence), for the run without faults, the server
 * pause and the client faults, none of which costs the server its data; and a durable one ({@code appendonly yes},
 * {@code appendfsync always}, the configuration {@code docs/redis.md} asks for when fencing tokens matter) for the
 * server kill. A server that comes back empty after kill -9 forgets its fencing counters, so tokens would go back;
 * the durable one restarts on its own data directory and keeps them, so the full safety assertions hold.
 *
 * <p>The short profile (every build) injects each fault once; the long one ({@code -Dlocksmith.torture=long},
 * {@code mvn -Ptorture}) ten times, and does about a million guarded increments over the five runs.
 */
@Tag("torture")
@DisplayName("torture: many processes on one Redis server")
class RedisTortureTest {

    private static final TortureProfile PROFILE = TortureProfile.current();
    /**
     * Short runs are over before the JIT's second tier pays off; on two shared cores its compiler threads only slow
     * the workers' start. Long runs keep the default.
     */
    private static final String[] WORKER_JVM_ARGS = PROFILE == TortureProfile.SHORT
            ? new String[] {"-XX:TieredStopAtLevel=1"} : new String[0];
    private static final Duration LEASE = Duration.ofSeconds(1);
    /**
     * The lease of the run without faults. A lease only protects a holder that runs: a worker frozen longer than its
     * lease (on two cores shared with a build, a JVM can stall for a second) loses its hold, which a run without
     * faults must not show. 5 s keeps that assumption true there; renewals still run every 1.7 s.
     */
    private static final Duration NO_FAULT_LEASE = Duration.ofSeconds(5);
    /** How often each fault is injected: once in the short profile, ten times in the long one. */
    private static final int FAULTS = PROFILE.pick(1, 10);
    /** Between the starts of two injections of a fault in the long profile (or right after recovery, if later). */
    private static final Duration FAULT_PERIOD = Duration.ofSeconds(6);

    /**
     * Leadership runs: a worker counts only the operations it does while it leads, and one that relinquishes waits
     * a lease before it contends again, so terms are long and runs short: 20 terms per worker in the long profile.
     */
    private static final int TERM_OPERATIONS = PROFILE.pick(10, 100);
    private static final int LEADER_OPERATIONS = 2_000;

    private static RedisServer redis;
    private static RedisServer durable;

    @BeforeAll
    static void startServers() {
        redis = RedisServer.start();
        durable = RedisServer.start("--appendonly", "yes", "--appendfsync", "always");
    }

    @AfterAll
    static void stopServers() {
        if (redis != null) {
            redis.close();
        }
        if (durable != null) {
            durable.close();
        }
    }

    /**
     * 3 processes x 4 threads on 8 names: enough threads that most names are contended, enough names that several
     * holds run at once (throughput on two cores). A critical section of 0.2 ms between reading and writing the
     * unguarded counter.
     */
    private static TortureRun.Builder run(RedisServer server, int operationsPerThread) {
        return run("redis", server, operationsPerThread);
    }

    private static TortureRun.Builder run(String backend, RedisServer server, int operationsPerThread) {
        return TortureRun.builder(backend, server.uri())
                .processes(3)
                .threads(4)
                .lockNames(8)
                .operationsPerThread(operationsPerThread)
                .criticalSection(Duration.ofNanos(200_000))
                .acquireWait(Duration.ofMillis(250))
                .leaseTime(LEASE)
                .operationTimeout(Duration.ofMillis(500))
                .timeout(Duration.ofMinutes(PROFILE.pick(2, 10)))
                .jvmArgs(WORKER_JVM_ARGS);
    }

    private static TortureRun.Builder withFault(RedisServer server, int longOperationsPerThread, Fault fault) {
        return withFault("redis", server, longOperationsPerThread, fault);
    }

    private static TortureRun.Builder withFault(String backend, RedisServer server, int longOperationsPerThread,
            Fault fault) {
        return run(backend, server, PROFILE.pick(60, longOperationsPerThread))
                .faults(Duration.ofMillis(300), FAULT_PERIOD, FAULTS, fault);
    }

    @Test
    @DisplayName("without faults: no overlaps, no lost updates, every operation done")
    void noFaults() {
        TortureReport report = run(redis, PROFILE.pick(150, 40_000)).leaseTime(NO_FAULT_LEASE).build().run();

        report.assertClean();
        assertThat(report.guardedIncrements()).isEqualTo(report.counterTotal()).isEqualTo(report.acquisitions());
        // Without faults, tokens follow the order of the holds and every write lies inside its hold, so the fenced
        // resource never sees a write older than one it accepted, nor one after a newer hold began. Either would be
        // an overlap (or a token out of order) that the hold intervals alone cannot show: the victim's lock call
        // had not returned yet when the other owner held the lock.
        assertThat(report.staleWritesRejected()).as("stale writes rejected: %s", report.violations()).isZero();
        assertThat(report.supersededWritesAccepted()).as("superseded writes accepted: %s", report.violations())
                .isZero();
        assertThat(report.processes()).isEqualTo(3);
    }

    @Test
    @DisplayName("redis-server kill -9 and restart on its AOF: tokens keep growing, no stale write accepted")
    void serverKill() {
        Map<String, String> persistence = new RedisAdmin(durable).call(jedis -> jedis.configGet("append*"));
        assertThat(persistence)
                .as("the server restarted after kill -9 must keep its fencing counters")
                .containsEntry("appendonly", "yes")
                .containsEntry("appendfsync", "always");
        Fault restart = Fault.named("redis kill -9 + restart", run -> {
            durable.kill();
            try {
                run.sleep(Duration.ofSeconds(1));
                run.awaitFailedCall();
            } finally {
                durable.restart();
            }
        });

        TortureReport report = withFault(durable, 5_000, restart).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.faults()).hasSize(FAULTS).allSatisfy(f -> assertThat(f.clientFault()).isFalse());
        assertThat(report.errors()).as("calls failed while the server was down").isPositive();
    }

    @Test
    @DisplayName("redis-server SIGSTOP for twice the lease: holds expire, nothing hangs, the service comes back")
    void serverPause() {
        Fault pause = Fault.named("redis SIGSTOP " + LEASE.multipliedBy(2).toMillis() + " ms", run -> {
            redis.pause();
            try {
                run.sleep(LEASE.multipliedBy(2));
                run.awaitFailedCall();
            } finally {
                redis.resume();
            }
        });

        TortureReport report = withFault(redis, 10_000, pause).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.faults()).hasSize(FAULTS).allSatisfy(f -> assertThat(f.clientFault()).isFalse());
        assertThat(report.errors()).as("calls timed out while the server was frozen").isPositive();
    }

    @Test
    @DisplayName("one client's store calls applied by Redis and then timed out, at random: no overlap, no lost "
            + "update")
    void callsAppliedThenTimedOut() {
        TortureReport report = run(redis, PROFILE.pick(150, 40_000)).leaseTime(NO_FAULT_LEASE)
                .callsAppliedThenTimedOut(0.1).build().run();

        report.assertClean();
        assertThat(report.errors()).as("calls of the faulty client that failed").isPositive();
        assertThat(report.guardedIncrements()).isEqualTo(report.counterTotal());
    }

    @Test
    @DisplayName("kill -9 of a client that holds a lock: its locks free within the lease, the rest stays safe")
    void clientKill() {
        TortureReport report = withFault(redis, 10_000, Fault.killClientHolding()).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.faults()).allSatisfy(f -> assertThat(f.heldNames()).isNotEmpty());
        assertThat(report.processes()).as("the replacement workers ran too").isEqualTo(3 + FAULTS);
    }

    @Test
    @DisplayName("SIGSTOP of a client past its lease: the hold is lost and reported, fencing keeps the resource safe")
    void clientPause() {
        TortureReport report = withFault(redis, 10_000, Fault.pauseClientUntilTakenOver()).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.lostHolds()).as("the paused client learns it lost its hold").isPositive();
        assertThat(report.overlapsAfterLoss()).as("another client held the lock while the paused one slept")
                .isPositive();
    }

    @Test
    @DisplayName("semaphore of 3 permits, kill -9 of a client that holds one: no permit held twice, its permits free "
            + "within the lease")
    void semaphoreClientKill() {
        TortureReport report = withFault("redis-semaphore", redis, 10_000, Fault.killClientHolding())
                .semaphore("torture-permits", 3)
                .build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.faults()).allSatisfy(f -> assertThat(f.heldNames()).isNotEmpty()
                .allMatch(name -> name.startsWith("torture-permits#permit-")));
        assertThat(report.processes()).as("the replacement workers ran too").isEqualTo(3 + FAULTS);
    }

    @Test
    @DisplayName("semaphore of 3 permits, SIGSTOP of a client past its lease: the permit is lost and reported, "
            + "fencing keeps each permit's resource safe")
    void semaphoreClientPause() {
        TortureReport report = withFault("redis-semaphore", redis, 10_000, Fault.pauseClientUntilTakenOver())
                .semaphore("torture-permits", 3).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.lostHolds()).as("the paused client learns it lost its permit").isPositive();
        assertThat(report.overlapsAfterLoss()).as("another client held the permit while the paused one slept")
                .isPositive();
    }

    @Test
    @DisplayName("read-write locks, kill -9 of a client that holds one: writers overlap nobody, readers only readers, "
            + "read tokens at least the last write's; its holds free within the lease")
    void readWriteClientKill() {
        TortureReport report = withFault("redis-readwrite", redis, 10_000, Fault.killClientHolding()).readWrite()
                .build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.faults()).allSatisfy(f -> assertThat(f.heldNames()).isNotEmpty());
        assertThat(report.guardedIncrements()).as("writes happened").isPositive();
        assertThat(report.acquisitions()).as("reads and writes").isGreaterThan(report.guardedIncrements());
    }

    @Test
    @DisplayName("read-write locks, SIGSTOP of a client that holds one until another process takes it: no overlap "
            + "but readers', no stale write accepted")
    void readWriteClientPause() {
        TortureReport report = withFault("redis-readwrite", redis, 10_000, Fault.pauseClientUntilTakenOver())
                .readWrite().build().run();

        // A paused reader is taken over by the next reader at once, without losing its hold; only a paused writer
        // must lose its hold first. Which one the fault finds is up to the schedule, so the run asserts safety only.
        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
    }

    @Test
    @DisplayName("leader election, kill -9 of the leading client: no two leaders at once, epochs growing, another "
            + "client leads within the lease")
    void leadershipClientKill() {
        TortureReport report = withFault("redis-leadership", redis, LEADER_OPERATIONS, Fault.killClientHolding())
                .leadership("torture-leader", TERM_OPERATIONS).threads(1).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.processes()).as("the replacement workers ran too").isEqualTo(3 + FAULTS);
        assertThat(report.acquisitions()).as("terms (elections) in the run").isGreaterThan(3);
    }

    @Test
    @DisplayName("leader election, SIGSTOP of the leading client until another leads: the paused leader is told it "
            + "lost, and its late writes carry a stale epoch the fenced resource rejects")
    void leadershipClientPause() {
        TortureReport report = withFault("redis-leadership", redis, LEADER_OPERATIONS,
                Fault.pauseClientUntilTakenOver()).leadership("torture-leader", TERM_OPERATIONS).threads(1).build()
                .run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.lostHolds()).as("the paused leader learns it lost its term").isPositive();
        assertThat(report.overlapsAfterLoss()).as("another client led while the paused one slept").isPositive();
    }
}
