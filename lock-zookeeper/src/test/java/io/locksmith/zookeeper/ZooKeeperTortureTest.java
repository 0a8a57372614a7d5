package io.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.servers.ZooKeeperCluster;
import io.locksmith.tests.servers.ZooKeeperServer;
import io.locksmith.tests.torture.Fault;
import io.locksmith.tests.torture.TortureProfile;
import io.locksmith.tests.torture.TortureReport;
import io.locksmith.tests.torture.TortureRun;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * The many-process torture runner ({@code lock-tests}, {@link TortureRun}) on ZooKeeper: worker JVMs open
 * {@code zookeeper://…?sessionTimeoutMs=…} providers against the in-JVM server or 3-member ensemble of the lock-tests
 * fixtures (reached over TCP) and hammer a few locks while a client holding a lock is killed (SIGKILL) or frozen
 * (SIGSTOP) past its session timeout, the server is stopped and restarted, or the ensemble's leader is killed; and
 * against a server in a JVM of its own, which is killed with SIGKILL and restarted, or frozen (SIGSTOP) past the
 * session timeout.
 *
 * <p>The bound on the locks of a killed or frozen client is ZooKeeper's: the session timeout the server grants, plus
 * one tick (the server expires sessions in tick-sized buckets, so up to one tick late), plus the second the runner
 * allows for the waiters to notice.
 *
 * <p>Short profile (every build): one run without faults, and per server kind one run with each of its faults
 * injected once, one after the other. Long profile ({@code -Dlocksmith.torture=long}): one run per fault with the
 * fault repeated, and a long run without faults: about 10⁶ guarded increments in all. See
 * {@code docs/reliability.md}.
 */
@Tag("torture")
@DisplayName("ZooKeeper under torture: many client processes, faults")
class ZooKeeperTortureTest {

    private static final TortureProfile PROFILE = TortureProfile.current();
    /** The session timeout the workers of the fault runs ask for: how long a dead or frozen client keeps its locks. */
    private static final Duration SESSION_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(1);
    /**
     * The run without faults has nothing to detect, so its timeouts are long enough to ride out the stalls of a
     * loaded, shared machine (a client stalled past a 2 s session timeout would lose its session, which is a fault).
     */
    private static final Duration CALM_TIMEOUT = Duration.ofSeconds(10);

    private static TortureRun.Builder run(String backend, String connectString, Duration sessionTimeout) {
        return TortureRun.builder(backend, "zookeeper://" + connectString + "?sessionTimeoutMs="
                        + sessionTimeout.toMillis())
                .processes(3)
                .threads(4)
                .lockNames(PROFILE.pick(3, 8))
                .criticalSection(PROFILE == TortureProfile.SHORT ? Duration.ofMillis(1) : Duration.ofNanos(100_000))
                .acquireWait(Duration.ofMillis(250))
                .leaseTime(LEASE)
                .operationTimeout(OPERATION_TIMEOUT)
                .timeout(Duration.ofMinutes(PROFILE.pick(3, 30)))
                // a short run lasts seconds: compiling with C2 would cost more than it gains
                .jvmArgs(PROFILE == TortureProfile.SHORT ? new String[] {"-XX:TieredStopAtLevel=1"} : new String[0]);
    }

    /**
     * One fault with what its runs must show besides {@link TortureReport#assertSafeUnderFaults(Duration)}.
     *
     * @param period how far apart its repetitions are in the long profile
     * @param times how often it is injected in a long-profile run
     * @param operations the least operations per thread of its long-profile run (the threads go on as long as the
     *     faults run)
     * @param check what else a run with it must show
     */
    private record FaultCase(Fault fault, Duration period, int times, int operations, Consumer<TortureReport> check) {
        String name() {
            return fault.name();
        }
    }

    /**
     * The runs with faults: in the short profile one run injecting each fault once, one after the other; in the
     * long profile one run per fault, repeating it.
     */
    private static Stream<DynamicTest> faultRuns(List<FaultCase> cases, Duration clientBound,
                                                  Supplier<TortureRun.Builder> builder) {
        if (PROFILE == TortureProfile.SHORT) {
            String names = cases.stream().map(FaultCase::name).collect(Collectors.joining(", then "));
            return Stream.of(DynamicTest.dynamicTest(names, () -> {
                TortureRun.Builder run = builder.get().operationsPerThread(40);
                cases.forEach(c -> run.fault(Duration.ofMillis(300), c.fault()));
                check(run.build().run(), cases, cases.size(), clientBound);
            }));
        }
        return cases.stream().map(c -> DynamicTest.dynamicTest(c.name(), () -> check(builder.get()
                .operationsPerThread(c.operations())
                .faults(Duration.ofMillis(300), c.period(), c.times(), c.fault())
                .build().run(), List.of(c), c.times(), clientBound)));
    }

    private static void check(TortureReport report, List<FaultCase> cases, int scheduled, Duration clientBound) {
        report.assertSafeUnderFaults(clientBound);
        assertThat(report.faults()).as("the faults that ran").hasSize(scheduled);
        cases.forEach(c -> c.check().accept(report));
    }

    /** The faults named {@code name} of a report. */
    private static List<TortureReport.FaultOutcome> faults(TortureReport report, String name) {
        return report.faults().stream().filter(f -> f.name().equals(name)).toList();
    }

    /** A client fault: every injection froze or killed a worker that held locks. */
    private static void assertClientFault(TortureReport report, String name) {
        assertThat(faults(report, name)).as(name).isNotEmpty()
                .allSatisfy(f -> assertThat(f.clientFault()).as("%s froze a holder", f).isTrue());
    }

    /** A store fault: no worker was frozen or killed. */
    private static void assertStoreFault(TortureReport report, String name) {
        assertThat(faults(report, name)).as(name).isNotEmpty()
                .allSatisfy(f -> assertThat(f.clientFault()).as("%s is no client fault", f).isFalse());
    }

    private static FaultCase clientKill() {
        Fault kill = Fault.killClientHolding();
        return new FaultCase(kill, Duration.ofSeconds(4), 4, 500, report -> {
            assertClientFault(report, kill.name());
            assertThat(report.processes()).as("the replacement workers ran too")
                    .isEqualTo(3 + faults(report, kill.name()).size());
        });
    }

    /**
     * A frozen client whose session expires: others hold the lock meanwhile (the client stays frozen until they do),
     * and the resumed client reports its hold lost.
     */
    private static FaultCase sessionExpiry(String name, ServerLimits limits) {
        Fault expiry = Fault.named(name, Fault.pauseClientUntilTakenOver(pastSessionTimeout(limits)));
        return new FaultCase(expiry, Duration.ofSeconds(6), 4, 500, report -> {
            assertClientFault(report, name);
            assertThat(report.lostHolds()).as("the resumed client learns that its hold was lost").isPositive();
            assertThat(report.overlapsAfterLoss()).as("another client held the lock while the frozen one slept")
                    .isPositive();
        });
    }

    /** How long a freeze lasts: the session timeout the server grants, one tick for its expiry buckets, 1 s more. */
    private static Duration pastSessionTimeout(ServerLimits limits) {
        return limits.sessionTimeout(SESSION_TIMEOUT).plus(limits.tick()).plusSeconds(1);
    }

    /**
     * The server stopped (or killed) for a second, and on until a worker's call has failed, then started again on
     * its data. A call fails only once it has gone unanswered for the operation timeout, as long as the second.
     */
    private static FaultCase serverRestart(String name, ZooKeeperServer server) {
        Fault restart = Fault.named(name, r -> {
            server.kill();
            try {
                r.sleep(Duration.ofSeconds(1));
                r.awaitFailedCall();
            } finally {
                server.restart();
            }
        });
        return new FaultCase(restart, Duration.ofSeconds(5), 4, 500, report -> {
            assertStoreFault(report, name);
            assertThat(report.errors()).as("calls failed while the server was down").isPositive();
        });
    }

    /**
     * The server frozen (SIGSTOP) past the session timeout, then resumed (SIGCONT). A frozen server answers nothing
     * and expires no session: the clients' connections time out, they go SUSPENDED, and they give their holds up
     * (reported lost) once the session timeout has passed without a connection; Curator then declares the session
     * LOST and starts a new one. When the server wakes, it expires the sessions whose time ran out while it slept,
     * unless their clients reconnected first, so the old lock nodes go with their session or with the clients'
     * background deletes, and the waiters take over.
     *
     * <p>A provider of the test's own holds a lock (a name no worker uses, a lease far longer than the freeze, so
     * that only the session can end the hold) through each freeze; afterwards the hold must have ended one of two
     * ways: reported lost (the listener fired and {@code unlock()} throws {@link LockLostException}), or kept
     * ({@code unlock()} releases it and the listener stayed quiet), which is right when the client reconnected
     * before the woken server expired its session.
     */
    private static FaultCase serverPause(ZooKeeperServer server, ServerLimits limits) {
        String name = "server SIGSTOP past the session timeout";
        Duration sessionTimeout = limits.sessionTimeout(SESSION_TIMEOUT);
        Duration pause = pastSessionTimeout(limits);
        Queue<String> probeOutcomes = new ConcurrentLinkedQueue<>();
        Fault freeze = Fault.named(name, r -> {
            CountDownLatch reported = new CountDownLatch(1);
            try (LockProvider probe = LockProvider.open("zookeeper://" + server.connectString()
                    + "?sessionTimeoutMs=" + SESSION_TIMEOUT.toMillis(), LockOptions.builder()
                    .namespace("torture-probe").leaseTime(Duration.ofSeconds(30)).operationTimeout(OPERATION_TIMEOUT)
                    .listener((lock, reason) -> reported.countDown()).build())) {
                DistributedLock lock = probe.getLock("probe");
                boolean held;
                try {
                    held = lock.tryLock(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("Interrupted while the probe took its lock", e);
                }
                server.pause();
                try {
                    r.sleep(pause);
                    r.awaitFailedCall();
                } finally {
                    server.resume();
                }
                probeOutcomes.add(held ? probeOutcome(lock, reported, sessionTimeout)
                        : "the probe did not get its lock before the freeze");
            }
        });
        return new FaultCase(freeze, Duration.ofSeconds(9), 4, 500, report -> {
            assertStoreFault(report, name);
            assertThat(report.errors()).as("calls failed while the server was frozen").isPositive();
            assertThat(probeOutcomes).as("how the probe's hold across each freeze ended")
                    .hasSize(faults(report, name).size())
                    .allMatch(o -> o.equals("reported lost") || o.equals("kept"));
        });
    }

    /**
     * How a hold taken before a freeze ended: unlocks it (retrying while the store still fails, within a bound) and
     * compares the answer with the listener.
     */
    private static String probeOutcome(DistributedLock lock, CountDownLatch reported, Duration sessionTimeout) {
        long deadline = System.nanoTime() + sessionTimeout.multipliedBy(3).plusSeconds(5).toNanos();
        try {
            while (true) {
                try {
                    lock.unlock();
                    return reported.getCount() == 0 ? "inconsistent: reported lost, yet unlock() released it"
                            : "kept";
                } catch (LockLostException e) {
                    // the listener runs on a Locksmith thread, possibly just after unlock() learned of the loss
                    return reported.await(5, TimeUnit.SECONDS) ? "reported lost"
                            : "inconsistent: unlock() said lost, the listener was not called: " + e.getMessage();
                } catch (LockBackendException e) {
                    if (System.nanoTime() - deadline >= 0) {
                        return "unlock() still failing after the server woke: " + e.getMessage();
                    }
                    Thread.sleep(100);
                } catch (IllegalMonitorStateException e) {
                    return "inconsistent: unlock() threw " + e;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    /** The bound on a client fault's locks: session timeout, one tick, one second for the waiters to notice. */
    private static Duration clientBound(ServerLimits limits) {
        return limits.sessionTimeout(SESSION_TIMEOUT).plus(limits.tick()).plusSeconds(1);
    }

    @Nested
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    @DisplayName("on a single server")
    class SingleServer {

        private ZooKeeperServer server;
        private ServerLimits limits;

        @BeforeAll
        void start() {
            server = ZooKeeperServer.start();
            limits = ServerLimits.of(server.connectString());
        }

        @AfterAll
        void stop() {
            if (server != null) {
                server.close();
            }
        }

        @Test
        @DisplayName("without faults: no overlaps, no lost updates, every operation done")
        void noFaults() {
            TortureReport report = run("zookeeper", server.connectString(), CALM_TIMEOUT)
                    .leaseTime(CALM_TIMEOUT)
                    .operationsPerThread(PROFILE.pick(60, 75_000))
                    .build().run();

            report.assertClean();
            assertThat(report.guardedIncrements()).isEqualTo(report.counterTotal()).isEqualTo(report.acquisitions());
        }

        @TestFactory
        @DisplayName("with faults: no overlaps of confirmed holds, no stale write accepted, locks free within the"
                + " session timeout, recovery after each fault")
        Stream<DynamicTest> faults() {
            return faultRuns(List.of(clientKill(), sessionExpiry("client SIGSTOP past the session timeout", limits),
                            serverRestart("server stop + restart", server)), clientBound(limits),
                    () -> run("zookeeper", server.connectString(), SESSION_TIMEOUT));
        }

        @TestFactory
        @DisplayName("a semaphore of 2 permits with client faults: no permit held twice, no stale write accepted, "
                + "a dead or frozen client's permits free within the session timeout")
        Stream<DynamicTest> semaphoreFaults() {
            return faultRuns(List.of(clientKill(), sessionExpiry("client SIGSTOP past the session timeout", limits)),
                    clientBound(limits), () -> run("zookeeper-semaphore", server.connectString(), SESSION_TIMEOUT)
                            .semaphore("torture-permits", 2));
        }
    }

    @Nested
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    @DisplayName("on a single server in a JVM of its own")
    class ServerProcess {

        private ZooKeeperServer server;
        private ServerLimits limits;

        @BeforeAll
        void start() {
            server = ZooKeeperServer.startProcess();
            limits = ServerLimits.of(server.connectString());
        }

        @AfterAll
        void stop() {
            if (server != null) {
                server.close();
            }
        }

        @TestFactory
        @DisplayName("with server faults (kill -9 + restart, SIGSTOP past the session timeout): no overlaps of"
                + " confirmed holds, no stale write accepted, holds lost with the session are reported, recovery"
                + " after each fault")
        Stream<DynamicTest> faults() {
            return faultRuns(List.of(serverRestart("server kill -9 + restart", server), serverPause(server, limits)),
                    clientBound(limits), () -> run("zookeeper-process", server.connectString(), SESSION_TIMEOUT));
        }
    }

    @Nested
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    @DisplayName("on a 3-member ensemble")
    class Ensemble {

        private ZooKeeperCluster cluster;
        private ServerLimits limits;

        @BeforeAll
        void start() {
            cluster = ZooKeeperCluster.start();
            limits = ServerLimits.of(cluster.memberAddress(0));
        }

        @AfterAll
        void stop() {
            if (cluster != null) {
                cluster.close();
            }
        }

        @TestFactory
        @DisplayName("with faults: no overlaps of confirmed holds, no stale write accepted, locks free within the"
                + " session timeout, recovery after each fault")
        Stream<DynamicTest> faults() {
            Fault leaderKill = Fault.named("leader kill + restart", r -> {
                int leader = cluster.leader();
                cluster.killMember(leader);
                try {
                    r.sleep(Duration.ofSeconds(1));
                } finally {
                    cluster.restartMember(leader);
                }
            });
            FaultCase leader = new FaultCase(leaderKill, Duration.ofSeconds(5), 4, 500,
                    report -> assertStoreFault(report, leaderKill.name()));
            return faultRuns(List.of(leader, sessionExpiry("session expiry (client SIGSTOP past the session timeout)",
                            limits)), clientBound(limits),
                    () -> run("zookeeper-ensemble", cluster.connectString(), SESSION_TIMEOUT));
        }
    }

    /**
     * The server's tick and session timeout limits, read with the {@code conf} command: the session timeout a
     * client gets is the one it asks for, brought within [minSessionTimeout, maxSessionTimeout].
     */
    private record ServerLimits(Duration tick, Duration minSession, Duration maxSession) {

        static ServerLimits of(String address) {
            int colon = address.lastIndexOf(':');
            String conf;
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(address.substring(0, colon),
                        Integer.parseInt(address.substring(colon + 1))), 2_000);
                socket.setSoTimeout(2_000);
                socket.getOutputStream().write("conf".getBytes(StandardCharsets.US_ASCII));
                socket.getOutputStream().flush();
                conf = new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException("Cannot read the configuration of ZooKeeper at " + address, e);
            }
            Map<String, String> values = new HashMap<>();
            conf.lines().forEach(line -> {
                int eq = line.indexOf('=');
                if (eq > 0) {
                    values.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
                }
            });
            assertThat(values).as("the 'conf' answer of ZooKeeper at %s: %s", address, conf)
                    .containsKeys("tickTime", "minSessionTimeout", "maxSessionTimeout");
            return new ServerLimits(Duration.ofMillis(Long.parseLong(values.get("tickTime"))),
                    Duration.ofMillis(Long.parseLong(values.get("minSessionTimeout"))),
                    Duration.ofMillis(Long.parseLong(values.get("maxSessionTimeout"))));
        }

        /** The session timeout the server grants for {@code requested}. */
        Duration sessionTimeout(Duration requested) {
            Duration granted = requested.compareTo(minSession) < 0 ? minSession : requested;
            return granted.compareTo(maxSession) > 0 ? maxSession : granted;
        }
    }
}
