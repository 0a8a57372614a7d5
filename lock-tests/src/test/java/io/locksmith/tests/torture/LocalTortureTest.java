package io.locksmith.tests.torture;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.local.LocalLockServer;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The torture runner on the reference backend: worker JVMs share one {@link LocalLockServer} of this JVM through a
 * {@link LocalBridge}, so the client faults (kill -9, SIGSTOP) hit real processes. Also proves that the runner and
 * checker catch a broken backend.
 */
@Tag("torture")
@DisplayName("torture runner on local:// through a bridge")
class LocalTortureTest {

    private static final Duration LEASE = Duration.ofSeconds(1);

    private static LocalLockServer server;
    private static LocalBridge bridge;

    @BeforeAll
    static void serve() {
        server = LocalLockServer.named("torture-" + UUID.randomUUID());
        bridge = LocalBridge.serve(server);
    }

    @AfterAll
    static void close() {
        bridge.close();
    }

    private static TortureRun.Builder run(LocalBridge through) {
        return run("local", through, TortureProfile.current());
    }

    private static TortureRun.Builder run(String label, LocalBridge through, TortureProfile profile) {
        return TortureRun.builder(label, through.uri())
                .profile(profile)
                .providerFactory(LocalBridge.Factory.class)
                .processes(3)
                .threads(3)
                .lockNames(3)
                .operationsPerThread(profile.pick(60, 28_000))
                .criticalSection(Duration.ofMillis(1))
                .acquireWait(Duration.ofMillis(200))
                .leaseTime(LEASE)
                .operationTimeout(Duration.ofMillis(500))
                .timeout(Duration.ofMinutes(profile.pick(2, 60)));
    }

    /** The fault once in the short profile, every 10 s (ten times) in the long one. */
    private static TortureRun.Builder withFault(Fault fault) {
        return run(bridge).faults(Duration.ofMillis(300), Duration.ofSeconds(10),
                TortureProfile.current().pick(1, 10), fault);
    }

    @Test
    @DisplayName("without faults: no overlaps, no lost updates, every operation done")
    void noFaults() {
        TortureReport report = run(bridge).build().run();

        report.assertClean();
        assertThat(report.guardedIncrements()).isEqualTo(report.counterTotal()).isEqualTo(report.acquisitions());
        assertThat(report.processes()).isEqualTo(3);
    }

    @Test
    @DisplayName("one client's store calls applied by the store and then timed out, at random: no overlap, no lost "
            + "update")
    void callsAppliedThenTimedOut() {
        TortureReport report = run(bridge).callsAppliedThenTimedOut(0.1).build().run();

        report.assertClean();
        assertThat(report.errors()).as("calls of the faulty client that failed").isPositive();
        assertThat(report.guardedIncrements()).isEqualTo(report.counterTotal());
    }

    @Test
    @DisplayName("kill -9 of a client that holds a lock: its locks free within the lease, the rest stays safe")
    void clientKill() {
        TortureReport report = withFault(Fault.killClientHolding()).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(report.faults().size());
        assertThat(report.faults()).allSatisfy(f -> assertThat(f.heldNames()).isNotEmpty());
        assertThat(report.processes()).as("the replacement workers ran too").isEqualTo(3 + report.faults().size());
    }

    @Test
    @DisplayName("SIGSTOP of a client past its lease: the hold is lost and reported, fencing keeps the resource safe")
    void clientPause() {
        TortureReport report = withFault(Fault.pauseClientUntilTakenOver()).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(report.faults().size());
        assertThat(report.lostHolds()).as("the paused client learns it lost its hold").isPositive();
        assertThat(report.overlapsAfterLoss()).as("another client held the lock while the paused one slept")
                .isPositive();
    }

    @Test
    @DisplayName("read-write locks, kill -9 of a client that holds one: writers overlap nobody, readers only readers, "
            + "read tokens at least the last write's; its holds free within the lease")
    void readWriteClientKill() {
        TortureReport report = withFault(Fault.killClientHolding()).readWrite().build().run();

        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(report.faults().size());
        assertThat(report.faults()).allSatisfy(f -> assertThat(f.heldNames()).isNotEmpty());
        assertThat(report.guardedIncrements()).as("writes happened").isPositive();
        assertThat(report.acquisitions()).as("reads and writes").isGreaterThan(report.guardedIncrements());
    }

    @Test
    @DisplayName("read-write locks, SIGSTOP of a client that holds one until another process takes it: no overlap "
            + "but readers', no stale write accepted")
    void readWriteClientPause() {
        TortureReport report = withFault(Fault.pauseClientUntilTakenOver()).readWrite().build().run();

        // A paused reader is taken over by the next reader at once, without losing its hold; only a paused writer
        // must lose its hold first. Which one the fault finds is up to the schedule, so the run asserts safety only.
        report.assertSafeUnderFaults();
        assertThat(report.clientFaults()).isEqualTo(report.faults().size());
    }

    @Test
    @DisplayName("the store killed and restarted: holds lost with it are reported, tokens keep growing")
    void storeKill() {
        Fault outage = Fault.named("store kill + restart", run -> {
            server.kill();
            try {
                run.sleep(Duration.ofMillis(300));
                run.awaitFailedCall();
            } finally {
                server.start();
            }
        });
        TortureReport report = withFault(outage).build().run();

        report.assertSafeUnderFaults();
        assertThat(report.faults()).isNotEmpty().allSatisfy(f -> assertThat(f.clientFault()).isFalse());
        assertThat(report.errors()).as("calls failed while the store was down").isPositive();
    }

    @Test
    @DisplayName("a store that grants every acquisition shows overlaps and lost updates; fencing still holds")
    void brokenStoreIsCaught() {
        try (LocalBridge broken = LocalBridge.serve(LocalLockServer.named("torture-broken-" + UUID.randomUUID()),
                AlwaysGrants::new)) {
            // always the short profile: a broken store's results do not belong in the reliability table
            TortureReport report = run("local-broken", broken, TortureProfile.SHORT).build().run();

            assertThat(report.overlaps()).as(report.summary()).isPositive();
            assertThat(report.lostUpdates()).as(report.summary()).isPositive();
            assertThat(report.violations()).anySatisfy(v -> assertThat(v).startsWith("OVERLAP on 'torture-"));
            assertThat(report.staleWritesAccepted()).as("the fenced resource is not fooled").isZero();
            assertThat(report.errors()).as("the harness copes with the contention: %s", report.violations()).isZero();
            assertThat(report.isClean()).isFalse();
        }
    }

    /** A store that grants every acquisition with ever larger tokens and confirms every release and renewal. */
    private static final class AlwaysGrants implements LockStore<String> {
        private static final AtomicLong TOKENS = new AtomicLong();
        private final LockStore<?> delegate;

        AlwaysGrants(LockStore<?> delegate) {
            this.delegate = delegate;
        }

        @Override
        public String address() {
            return delegate.address();
        }

        @Override
        public String newHold(String name, String owner) {
            return owner;
        }

        @Override
        public Acquisition tryAcquire(String owner, Duration lease, Duration wait, Runnable wakeUp) {
            return Acquisition.acquired(TOKENS.incrementAndGet());
        }

        @Override
        public boolean release(String owner) {
            return true;
        }

        @Override
        public RenewResult<String> renew(List<String> owners, Duration lease) {
            return RenewResult.allRenewed();
        }

        @Override
        public boolean isLocked(String name) {
            return false;
        }

        @Override
        public void close() {
            delegate.close();
        }
    }
}
