package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.servers.RedisServer;
import io.locksmith.tests.torture.Fault;
import io.locksmith.tests.torture.TortureProfile;
import io.locksmith.tests.torture.TortureReport;
import io.locksmith.tests.torture.TortureRun;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Many client processes (worker JVMs, each with its own {@code redlock://} provider over five independent
 * redis-server processes) hammering a few locks while masters or clients are killed or frozen; see
 * {@code docs/reliability.md}.
 *
 * <p>Two sets of five masters. The kill outages kill masters with SIGKILL and restart them at once, so those masters
 * run with {@code appendonly yes} and {@code appendfsync always} and restart on their own data: docs/redlock.md
 * requires that a restarted master keep its data (or stay down longer than the longest lease), both for exclusion
 * (a master that comes back empty can grant a lock another client holds on it) and for the fencing counters (a
 * majority that comes back empty lets tokens go back). The run without faults, the client faults and the pauses
 * (SIGSTOP, then SIGCONT: a frozen master keeps its data and its connections) never restart a master, so they use
 * masters without persistence, as the module's other tests do, and go faster.
 *
 * <p>The per-master timeout is 100 ms (a tenth of the faulted runs' lease) rather than the default 50 ms: on a
 * small machine shared by five servers, the worker JVMs and a build, 50 ms answers are not the rule. The short
 * profile injects each fault once; the long one ({@code -Dlocksmith.torture=long}, {@code mvn -Ptorture}) ten
 * times, and does about a million guarded increments over the seven runs.
 */
@Tag("torture")
@DisplayName("torture: many processes on Redlock over five masters")
class RedlockTortureTest {

    private static final TortureProfile PROFILE = TortureProfile.current();
    /**
     * Short runs are over before the JIT's second tier pays off; on two shared cores its compiler threads only slow
     * the workers' start. Long runs keep the default.
     */
    private static final String[] WORKER_JVM_ARGS = PROFILE == TortureProfile.SHORT
            ? new String[] {"-XX:TieredStopAtLevel=1"} : new String[0];
    private static final int MASTERS = 5;
    private static final Duration LEASE = Duration.ofSeconds(1);
    /**
     * The lease of the run without faults. A lease only protects a holder that runs: a worker frozen longer than its
     * lease (on two cores shared with a build, a JVM can stall for a second) loses its hold, which a run without
     * faults must not show. 5 s keeps that assumption true there; renewals still run every 1.7 s.
     */
    private static final Duration NO_FAULT_LEASE = Duration.ofSeconds(5);
    private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
    private static final Duration OPERATION_TIMEOUT = Duration.ofMillis(500);
    /** How often each fault is injected: once in the short profile, ten times in the long one. */
    private static final int FAULTS = PROFILE.pick(1, 10);
    /** Between the starts of two injections of a fault in the long profile (or right after recovery, if later). */
    private static final Duration FAULT_PERIOD = Duration.ofSeconds(7);
    /** How long an outage lasts before its masters are restarted or resumed: longer than the lease. */
    private static final Duration OUTAGE = Duration.ofSeconds(2);

    private static List<RedisServer> plain;
    private static List<RedisServer> durable;

    @BeforeAll
    static void startMasters() {
        plain = RedisServer.startIndependent(MASTERS);
        durable = RedisServer.startIndependent(MASTERS, "--appendonly", "yes", "--appendfsync", "always");
    }

    @AfterAll
    static void stopMasters() {
        if (plain != null) {
            plain.forEach(RedisServer::close);
        }
        if (durable != null) {
            durable.forEach(RedisServer::close);
        }
    }

    private static String uri(List<RedisServer> masters) {
        return masters.stream().map(m -> m.host() + ":" + m.port())
                .collect(Collectors.joining(",", "redlock://", "?nodeTimeout=" + NODE_TIMEOUT.toMillis() + "ms"));
    }

    /**
     * 3 processes x 4 threads on 8 names (6 threads on 12 names in the long profile, where more calls in flight
     * make up for the round trips to five masters): enough threads that most names are contended, enough names
     * that several holds run at once. A critical section of 0.2 ms between reading and writing the unguarded
     * counter.
     */
    private static TortureRun.Builder run(List<RedisServer> masters, int operationsPerThread) {
        return TortureRun.builder("redlock", uri(masters))
                .processes(3)
                .threads(PROFILE.pick(4, 6))
                .lockNames(PROFILE.pick(8, 12))
                .operationsPerThread(operationsPerThread)
                .criticalSection(Duration.ofNanos(200_000))
                .acquireWait(Duration.ofMillis(250))
                .leaseTime(LEASE)
                .operationTimeout(OPERATION_TIMEOUT)
                .timeout(Duration.ofMinutes(PROFILE.pick(2, 30)))
                .jvmArgs(WORKER_JVM_ARGS);
    }

    private static TortureRun.Builder withFault(List<RedisServer> masters, int longOperationsPerThread, Fault fault) {
        return run(masters, PROFILE.pick(50, longOperationsPerThread))
                .faults(Duration.ofMillis(300), FAULT_PERIOD, FAULTS, fault);
    }

    /** How an outage takes masters away and brings them back. */
    private enum Outage {
        /** SIGKILL, then a restart on their data: for the durable set. */
        KILL(RedisServer::kill, RedisServer::restart),
        /** SIGSTOP, then SIGCONT: they keep their connections and data, accept connections, answer nothing. */
        PAUSE(RedisServer::pause, RedisServer::resume);

        private final Consumer<RedisServer> begin;
        private final Consumer<RedisServer> end;

        Outage(Consumer<RedisServer> begin, Consumer<RedisServer> end) {
            this.begin = begin;
            this.end = end;
        }
    }

    /**
     * Takes the masters {@code victims} of {@code masters} away ({@code how}), runs {@code during} while they are
     * away, waits out the rest of the outage (and, if {@code untilCallsFail}, until a worker's call has failed), and
     * brings them back.
     */
    private static Fault outage(String name, List<RedisServer> masters, Outage how, List<Integer> victims,
                                boolean untilCallsFail, Probe during) {
        return Fault.named(name, run -> {
            try (LockProvider probe = LockProvider.open(uri(masters), LockOptions.builder()
                    .namespace("torture-probe").leaseTime(LEASE).operationTimeout(OPERATION_TIMEOUT).build())) {
                long start = System.nanoTime();
                try {
                    victims.forEach(i -> how.begin.accept(masters.get(i)));
                    during.check(probe.getLock("probe"));
                    Duration left = OUTAGE.minusNanos(System.nanoTime() - start);
                    if (!left.isNegative()) {
                        run.sleep(left);
                    }
                    if (untilCallsFail) {
                        run.awaitFailedCall();
                    }
                } finally {
                    victims.forEach(i -> how.end.accept(masters.get(i)));
                }
            }
        });
    }

    /** A check made from the test's own provider while masters are down. */
    @FunctionalInterface
    private interface Probe {
        void check(DistributedLock lock);
    }

    @Test
    @DisplayName("without faults: no overlaps, no lost updates, every operation done")
    void noFaults() {
        TortureReport report = run(plain, PROFILE.pick(120, 30_000)).leaseTime(NO_FAULT_LEASE).build().run();

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
    @DisplayName("2 of 5 masters killed -9 and restarted: locks are still granted meanwhile, nothing unsafe")
    void minorityOutage() {
        minorityDown("redlock minority kill -9 (2 of 5) + restart", durable, Outage.KILL);
    }

    @Test
    @DisplayName("3 of 5 masters killed -9 for 2 s and restarted: calls fail within their timeouts, then recover")
    void majorityOutage() {
        majorityDown("redlock majority kill -9 (3 of 5) + restart", durable, Outage.KILL);
    }

    @Test
    @DisplayName("2 of 5 masters frozen (SIGSTOP) for 2 s, past the lease, then SIGCONT: locks are still granted"
            + " meanwhile, nothing unsafe")
    void minorityPause() {
        minorityDown("redlock minority SIGSTOP (2 of 5) past lease", plain, Outage.PAUSE);
    }

    @Test
    @DisplayName("3 of 5 masters frozen (SIGSTOP) for 2 s, past the lease, then SIGCONT: calls fail within their"
            + " timeouts, then recover")
    void majorityPause() {
        majorityDown("redlock majority SIGSTOP (3 of 5) past lease", plain, Outage.PAUSE);
    }

    /**
     * A run in which masters 3 and 4 of {@code masters} go away ({@code how}) for the outage, {@link #FAULTS} times:
     * with three of five masters up, the test's own provider is still granted a lock meanwhile.
     */
    private static void minorityDown(String name, List<RedisServer> masters, Outage how) {
        Queue<String> failures = new ConcurrentLinkedQueue<>();
        Fault fault = outage(name, masters, how, List.of(3, 4), false, lock -> {
            try {
                if (lock.tryLock(OUTAGE.toMillis(), TimeUnit.MILLISECONDS)) {
                    lock.unlock();
                } else {
                    failures.add("with 3 of 5 masters up, tryLock(" + OUTAGE.toMillis() + " ms) returned false");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            } catch (RuntimeException e) {
                failures.add("with 3 of 5 masters up, tryLock failed: " + e);
            }
        });

        TortureReport report = withFault(masters, 5_000, fault).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.faults()).hasSize(FAULTS).allSatisfy(f -> assertThat(f.clientFault()).isFalse());
        assertThat(failures).as("a lock is granted while a minority of masters is down").isEmpty();
    }

    /**
     * A run in which masters 0, 1 and 2 of {@code masters} go away ({@code how}) for the outage, {@link #FAULTS}
     * times: without a quorum, calls fail with {@link LockBackendException} within their timeouts (the workers'
     * watchdogs would report a hang as unfinished), and the workers acquire again once the masters are back.
     */
    private static void majorityDown(String name, List<RedisServer> masters, Outage how) {
        Queue<String> outcomes = new ConcurrentLinkedQueue<>();
        Fault fault = outage(name, masters, how, List.of(0, 1, 2), true, lock -> {
            try {
                boolean acquired = lock.tryLock(LEASE.toMillis(), TimeUnit.MILLISECONDS);
                outcomes.add(acquired ? "acquired without a quorum" : "busy");
                if (acquired) {
                    lock.unlock();
                }
            } catch (LockBackendException e) {
                outcomes.add("failed");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        });

        TortureReport report = withFault(masters, 5_000, fault).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.faults()).hasSize(FAULTS).allSatisfy(f -> assertThat(f.clientFault()).isFalse());
        assertThat(outcomes).as("without a quorum no lock is granted; the call fails (LockBackendException)")
                .hasSize(FAULTS).containsOnly("failed");
        assertThat(report.errors()).as("the workers' calls failed while the majority was down").isPositive();
    }

    @Test
    @DisplayName("kill -9 of a client that holds a lock: its locks free within the lease, the rest stays safe")
    void clientKill() {
        TortureReport report = withFault(plain, 8_000, Fault.killClientHolding()).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.faults()).allSatisfy(f -> assertThat(f.heldNames()).isNotEmpty());
        assertThat(report.processes()).as("the replacement workers ran too").isEqualTo(3 + FAULTS);
    }

    @Test
    @DisplayName("SIGSTOP of a client past its lease: the hold is lost and reported, fencing keeps the resource safe")
    void clientPause() {
        TortureReport report = withFault(plain, 8_000, Fault.pauseClientUntilTakenOver()).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(FAULTS);
        assertThat(report.lostHolds()).as("the paused client learns it lost its hold").isPositive();
        assertThat(report.overlapsAfterLoss()).as("another client held the lock while the paused one slept")
                .isPositive();
    }
}
