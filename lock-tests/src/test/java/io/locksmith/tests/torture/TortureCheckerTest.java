package io.locksmith.tests.torture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checker on histories written by hand: a well-behaved one is clean, and each defect it must report (overlap, lost
 * update, token that does not grow, stale write accepted, operation that never finished) is reported, counted and
 * described, and fails the report's assertions.
 */
@DisplayName("torture checker")
class TortureCheckerTest {

    @TempDir
    Path directory;

    private SyntheticRun twoWorkers() {
        SyntheticRun run = new SyntheticRun(directory, 1, "a", "b");
        run.worker(0, 10);
        run.worker(1, 10);
        return run;
    }

    @Test
    @DisplayName("a well-behaved history is clean")
    void cleanHistory() {
        try (SyntheticRun run = twoWorkers()) {
            run.hold(0, 0, 0, 100, 200, 1);
            run.hold(1, 0, 0, 300, 400, 2);
            run.hold(1, 0, 1, 500, 600, 1);
            run.hold(0, 0, 0, 700, 800, 3);
            run.finish(0, 900);
            run.finish(1, 900);

            TortureReport report = run.check();

            assertThat(report.isClean()).as(report.summary()).isTrue();
            assertThat(report.acquisitions()).isEqualTo(4);
            assertThat(report.guardedIncrements()).isEqualTo(4);
            assertThat(report.counterTotal()).isEqualTo(4);
            assertThat(report.processes()).isEqualTo(2);
            assertThat(report.violations()).isEmpty();
            report.assertClean();
        }
    }

    @Nested
    @DisplayName("overlapping holds")
    class Overlaps {

        @Test
        @DisplayName("two confirmed holds that intersect are a violation")
        void confirmedOverlap() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 200, 1);
                run.hold(1, 0, 0, 150, 250, 2);
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.overlaps()).isEqualTo(1);
                assertThat(report.overlapsAfterLoss()).isZero();
                assertThat(report.violations()).singleElement().asString().startsWith("OVERLAP on 'a'")
                        .contains("worker 1 thread 0 (token 2)").contains("worker 0 thread 0 (token 1)");
                assertThatThrownBy(report::assertClean).hasMessageContaining("overlapping holds");
                assertThatThrownBy(report::assertSafeUnderFaults).hasMessageContaining("overlapping holds");
            }
        }

        @Test
        @DisplayName("holds that touch without intersecting are not")
        void adjacentHolds() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 200, 1);
                run.hold(1, 0, 0, 200, 300, 2);
                run.finish(0, 900);
                run.finish(1, 900);

                assertThat(run.check().overlaps()).isZero();
            }
        }

        @Test
        @DisplayName("an overlap with a hold its owner was told it lost is counted apart")
        void overlapAfterLoss() {
            try (SyntheticRun run = twoWorkers()) {
                HistoryFile w0 = run.worker(0, 10);
                run.openHold(0, 0, 0, 100, 1);
                w0.releasing(0, 0, 400);
                w0.lost(0, 0, 401, "unlock", new IllegalMonitorStateException("lease ended"));
                run.hold(1, 0, 0, 200, 300, 2);
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.overlaps()).isZero();
                assertThat(report.overlapsAfterLoss()).isEqualTo(1);
                assertThat(report.lostHolds()).isEqualTo(1);
                // listed, so that a failing run keeps its files and its message says which holds overlapped
                assertThat(report.violations()).singleElement().asString()
                        .startsWith("OVERLAP AFTER LOSS on 'a'").endsWith("the first ended lost");
                assertThatThrownBy(report::assertClean).hasMessageContaining("overlapping holds after a loss");
            }
        }

        @Test
        @DisplayName("a killed holder holds until the kill: an acquisition before it is a violation, after it is not")
        void killedHolder() {
            try (SyntheticRun run = twoWorkers()) {
                run.openHold(0, 0, 0, 100, 1);
                run.runner().faultBegins(280, 1, "client kill -9");
                run.runner().stopped(290, 0, "0");
                run.runner().killed(300, 0, "0");
                run.runner().faultEnds(310, 1, "ok");
                run.hold(1, 0, 0, 250, 260, 2);
                run.hold(1, 0, 0, 700, 800, 3);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.overlaps()).as("the hold at 250 while the killed worker held").isEqualTo(1);
                assertThat(report.violations()).anySatisfy(v -> assertThat(v).contains("its process was killed"));
                assertThat(report.unfinishedOperations()).as("a killed worker need not finish").isZero();
                assertThat(report.faults()).singleElement().satisfies(f -> {
                    assertThat(f.clientFault()).isTrue();
                    assertThat(f.heldNames()).containsExactly("a");
                    assertThat(f.recovery()).isEqualTo(Duration.ofNanos(700 - 290));
                });
            }
        }
    }

    @Test
    @DisplayName("a counter that ends below the increments made inside holds shows lost updates")
    void lostUpdate() {
        try (SyntheticRun run = twoWorkers()) {
            run.hold(0, 0, 0, 100, 200, 1);
            run.setCounter(0, 0); // the second writer read a value the first had already overwritten
            run.hold(1, 0, 0, 300, 400, 2);
            run.finish(0, 900);
            run.finish(1, 900);

            TortureReport report = run.check();

            assertThat(report.lostUpdates()).isEqualTo(1);
            assertThat(report.guardedIncrements()).isEqualTo(2);
            assertThat(report.counterTotal()).isEqualTo(1);
            assertThat(report.violations()).singleElement().asString().startsWith("LOST UPDATES on 'a'");
            assertThatThrownBy(report::assertClean).hasMessageContaining("lost updates");
        }
    }

    @Nested
    @DisplayName("read holds of read-write locks")
    class ReadHolds {

        /** A read hold, confirmed: ACQR, READ, REL, UNLOCKED. */
        private void read(HistoryFile worker, int thread, int name, long t0, long t1, long end, long token) {
            worker.acquiredShared(thread, name, t0, t1, token);
            worker.read(thread, name, end - 1, 0, 0);
            worker.releasing(thread, name, end);
            worker.unlocked(thread, name, end + 1);
        }

        @Test
        @DisplayName("read holds overlap each other freely, with the last write's token or their own above it")
        void readersOverlap() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 150, 4);
                read(run.worker(0, 10), 0, 0, 160, 170, 400, 4);
                read(run.worker(1, 10), 0, 0, 165, 180, 300, 7);
                run.hold(1, 0, 0, 410, 420, 8);
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.overlaps()).isZero();
                assertThat(report.nonMonotonicTokens()).isZero();
                assertThat(report.isClean()).as(report.summary()).isTrue();
            }
        }

        @Test
        @DisplayName("a read hold that overlaps a write hold is a violation")
        void readerBesideWriter() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 200, 4);
                read(run.worker(1, 10), 0, 0, 120, 150, 300, 4);
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.overlaps()).isEqualTo(1);
                assertThat(report.violations()).singleElement().asString().startsWith("OVERLAP on 'a'")
                        .contains("worker 1 thread 0 reading (token 4)");
            }
        }

        @Test
        @DisplayName("a read token below a write's certainly before it, or a write token not above a read's, is reported")
        void readTokens() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 150, 5);
                read(run.worker(1, 10), 0, 0, 160, 170, 200, 4);
                read(run.worker(1, 10), 0, 0, 210, 220, 230, 9);
                run.hold(0, 0, 0, 240, 250, 8);
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.nonMonotonicTokens()).isEqualTo(2);
                assertThat(report.violations()).anySatisfy(v -> assertThat(v)
                        .startsWith("READ TOKEN BELOW AN EARLIER WRITE'S on 'a'").contains("got token 4"));
                assertThat(report.violations()).anySatisfy(v -> assertThat(v)
                        .startsWith("TOKEN NOT INCREASING on 'a'").contains("got token 8").contains("had got 9"));
            }
        }
    }

    @Nested
    @DisplayName("fencing tokens")
    class Tokens {

        @Test
        @DisplayName("a token below that of an acquisition certainly before it is reported")
        void tokenGoesDown() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 150, 5);
                run.hold(1, 0, 1, 160, 170, 1);
                HistoryFile w1 = run.worker(1, 10);
                w1.acquired(0, 0, 200, 210, 4);
                w1.releasing(0, 0, 250);
                w1.unlocked(0, 0, 251);
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.nonMonotonicTokens()).isEqualTo(1);
                assertThat(report.violations()).anySatisfy(v -> assertThat(v)
                        .startsWith("TOKEN NOT INCREASING on 'a'").contains("got token 4").contains("had got 5"));
                assertThatThrownBy(report::assertSafeUnderFaults).hasMessageContaining("fencing tokens not increasing");
            }
        }

        @Test
        @DisplayName("acquisitions whose calls overlapped in time may come in either order")
        void concurrentCallsAreNotOrdered() {
            try (SyntheticRun run = twoWorkers()) {
                HistoryFile w0 = run.worker(0, 10);
                HistoryFile w1 = run.worker(1, 10);
                // worker 1's call began (90) before worker 0's returned (100): the store may have served it first
                w0.acquired(0, 0, 50, 100, 6);
                w0.releasing(0, 0, 150);
                w0.unlocked(0, 0, 151);
                w1.acquired(0, 0, 90, 160, 5);
                w1.releasing(0, 0, 200);
                w1.unlocked(0, 0, 201);
                run.finish(0, 900);
                run.finish(1, 900);

                assertThat(run.check().nonMonotonicTokens()).isZero();
            }
        }

        @Test
        @DisplayName("two acquisitions with one token are reported even when their order is unknown")
        void repeatedToken() {
            try (SyntheticRun run = twoWorkers()) {
                HistoryFile w0 = run.worker(0, 10);
                HistoryFile w1 = run.worker(1, 10);
                w0.acquired(0, 0, 50, 100, 7);
                w0.releasing(0, 0, 150);
                w0.unlocked(0, 0, 151);
                w1.acquired(0, 0, 90, 160, 7);
                w1.releasing(0, 0, 200);
                w1.unlocked(0, 0, 201);
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.nonMonotonicTokens()).isEqualTo(1);
                assertThat(report.violations()).singleElement().asString().startsWith("TOKEN REPEATED on 'a'");
            }
        }
    }

    @Nested
    @DisplayName("the fenced resource")
    class Fencing {

        @Test
        @DisplayName("an accepted write with a token below one accepted before is a stale write accepted")
        void staleWriteAccepted() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(1, 0, 0, 100, 200, 5);
                HistoryFile w0 = run.worker(0, 10);
                w0.acquired(0, 0, 10, 20, 4); // an older hold, paused, writes late
                run.fenceLine(0, 300, 0, 0, 4, true, "5");
                w0.releasing(0, 0, 310);
                w0.lost(0, 0, 311, "unlock", new IllegalMonitorStateException("lost"));
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.staleWritesAccepted()).isEqualTo(1);
                assertThat(report.fenceErrors()).isZero();
                assertThat(report.violations()).anySatisfy(v -> assertThat(v)
                        .startsWith("STALE WRITE ACCEPTED on 'a'").contains("token 4").contains("after token 5"));
                assertThatThrownBy(report::assertSafeUnderFaults).hasMessageContaining("stale writes accepted");
            }
        }

        @Test
        @DisplayName("the same late write rejected is counted as rejected and is fine")
        void staleWriteRejected() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(1, 0, 0, 100, 200, 5);
                HistoryFile w0 = run.worker(0, 10);
                w0.acquired(0, 0, 10, 20, 4);
                run.fence(0, 300, 0, 0, 4);
                w0.releasing(0, 0, 310);
                w0.lost(0, 0, 311, "unlock", new IllegalMonitorStateException("lost"));
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.staleWritesAccepted()).isZero();
                assertThat(report.staleWritesRejected()).isEqualTo(1);
                assertThat(report.fenceErrors()).isZero();
            }
        }

        @Test
        @DisplayName("a log that contradicts itself or the history is a fence error")
        void inconsistentLog() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 200, 5);
                run.fenceLine(0, 250, 1, 0, 9, false, "5"); // rejects a newer token, which nobody was granted
                run.fenceLine(0, 260, 1, 0, 6, true, "3"); // logs a wrong highest; token 6 never granted either
                run.finish(0, 900);
                run.finish(1, 900);

                TortureReport report = run.check();

                assertThat(report.fenceErrors()).isEqualTo(4);
                assertThat(report.violations()).anySatisfy(v -> assertThat(v).contains("rejected although"))
                        .anySatisfy(v -> assertThat(v).contains("which the history never granted it"))
                        .anySatisfy(v -> assertThat(v).startsWith("FENCE LOG on 'a'"));
                assertThatThrownBy(report::assertClean).hasMessageContaining("fenced resource inconsistencies");
            }
        }
    }

    @Nested
    @DisplayName("unfinished operations")
    class Unfinished {

        @Test
        @DisplayName("a thread of a live worker without DONE, and a hang, are reported")
        void threadNeverFinished() {
            try (SyntheticRun run = new SyntheticRun(directory, 2, "a")) {
                HistoryFile w0 = run.worker(0, 10);
                run.hold(0, 0, 0, 100, 200, 1);
                w0.acquired(1, 0, 300, 310, 2);
                w0.hang(1, 5_000, "operation on 'a' running for 5000 ms, bound 4000 ms");
                w0.done(0, 400, 1);
                run.runner().exited(5_001, 0, 3);

                TortureReport report = run.check();

                assertThat(report.unfinishedOperations()).isEqualTo(1);
                assertThat(report.failedWorkers()).isEqualTo(1);
                assertThat(report.violations())
                        .anySatisfy(v -> assertThat(v).startsWith("HANG in worker 0 thread 1"))
                        .anySatisfy(v -> assertThat(v).startsWith("UNFINISHED: worker 0 thread 1"))
                        .anySatisfy(v -> assertThat(v).contains("exited with code 3 (an operation hung)"));
                assertThatThrownBy(report::assertSafeUnderFaults)
                        .hasMessageContaining("operations that never finished");
            }
        }

        @Test
        @DisplayName("a worker killed at the run timeout is unfinished, one killed by the schedule is not")
        void reapedVersusKilled() {
            try (SyntheticRun run = twoWorkers()) {
                run.hold(0, 0, 0, 100, 200, 1);
                run.hold(1, 0, 0, 300, 400, 2);
                run.runner().killed(500, 0, "-");
                run.runner().reaped(600, 1);

                TortureReport report = run.check();

                assertThat(report.unfinishedOperations()).isEqualTo(1);
                assertThat(report.violations()).singleElement().asString()
                        .startsWith("UNFINISHED: worker 1 thread 0 never finished (killed at the run timeout)");
            }
        }
    }

    @Test
    @DisplayName("a line torn by a kill in the middle of its write is ignored")
    void tornLastLine() {
        try (SyntheticRun run = twoWorkers()) {
            run.hold(0, 0, 0, 100, 200, 1);
            run.finish(0, 900);
            run.hold(1, 0, 0, 300, 400, 2);
            run.finish(1, 900);
            run.appendRaw(1, "ACQ\t0\t0\t950\t96");

            TortureReport report = run.check();

            assertThat(report.acquisitions()).isEqualTo(2);
            assertThat(report.isClean()).as(report.summary()).isTrue();
        }
    }

    @Test
    @DisplayName("a holder frozen after taking its release time, before recording it, still held its lock")
    void frozenBetweenReleaseTimeAndRecord() {
        try (SyntheticRun run = twoWorkers()) {
            // worker 0 takes its release time (140), is frozen (150) with the hold open in its history, and records
            // the release, with the earlier time, once resumed; it had not unlocked, so its lock was held meanwhile
            run.openHold(0, 0, 0, 100, 1);
            run.runner().faultBegins(145, 1, "client SIGSTOP past lease");
            run.runner().stopped(150, 0, "0");
            run.worker(0, 0).releasing(0, 0, 140);
            run.runner().continued(2_000, 0);
            run.runner().faultEnds(2_000, 1, "ok");
            run.worker(0, 0).unlocked(0, 0, 2_001);
            run.hold(1, 0, 0, 1_200, 1_300, 2);
            run.finish(0, 3_000);
            run.finish(1, 3_000);

            TortureReport report = run.check();

            assertThat(report.overlaps()).isZero();
            assertThat(report.faults()).singleElement().satisfies(f -> {
                assertThat(f.clientFault()).isTrue();
                assertThat(f.heldNames()).containsExactly("a");
                assertThat(f.recovery()).isEqualTo(Duration.ofNanos(1_200 - 150));
            });
        }
    }

    @Test
    @DisplayName("a store fault's recovery runs from its end to the next acquisition")
    void storeFaultRecovery() {
        try (SyntheticRun run = twoWorkers()) {
            run.hold(0, 0, 0, 100, 200, 1);
            run.runner().faultBegins(300, 1, "store kill + restart");
            run.runner().faultEnds(400, 1, "ok");
            run.runner().faultBegins(1_000, 2, "store pause");
            run.runner().faultEnds(1_100, 2, "ok");
            run.hold(1, 0, 1, 450, 500, 1);
            run.finish(0, 1_200);
            run.finish(1, 1_200);

            TortureReport report = run.check();

            assertThat(report.faults()).hasSize(2);
            assertThat(report.faults().get(0).recovery()).isEqualTo(Duration.ofNanos(50));
            assertThat(report.faults().get(1).recovered()).isFalse();
            assertThat(report.unrecoveredFaults()).isEqualTo(1);
            assertThatThrownBy(report::assertSafeUnderFaults).hasMessageContaining("no acquisition after fault");
        }
    }
}
