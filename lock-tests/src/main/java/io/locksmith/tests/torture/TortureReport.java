package io.locksmith.tests.torture;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link TortureChecker} found in the histories of one torture run.
 *
 * <p>The safety counts, each zero for a correct backend:
 * <ul>
 *   <li>{@code overlaps}: pairs of holds of one name by different owners (thread of a process) whose intervals,
 *       from the lock call's return to just before unlock, intersect, where both holds were confirmed by the store at
 *       their unlock (or ended with their process's SIGKILL). Such a pair is a plain violation of mutual exclusion.
 *   <li>{@code nonMonotonicTokens}: acquisitions whose fencing token is not above that of an acquisition that
 *       certainly came before it (whose lock call returned before this one's began), or that repeat a token.
 *   <li>{@code staleWritesAccepted}: writes the fenced resource accepted although their token was below one it had
 *       accepted already.
 *   <li>{@code fenceErrors}: inconsistencies of the fenced resource's log: a write rejected although its token was
 *       not stale, a token no hold of that thread was granted, a write outside its hold.
 *   <li>{@code unfinishedOperations}: threads of processes the schedule did not kill that never finished their
 *       loop (hung, crashed, or killed at the run timeout).
 * </ul>
 * Counts that faults legitimately produce: {@code overlapsAfterLoss} (holds that ended in the store without their
 * owner knowing, so that its unlock reported them lost or failed, and that overlapped another owner's hold: what a
 * client paused past its lease does),
 * {@code lostUpdates} (read-modify-write cycles of the unguarded counter that another overwrote; zero without faults),
 * {@code staleWritesRejected} (late writes fencing stopped) and {@code supersededWritesAccepted} (writes accepted from
 * a holder after a newer hold was granted but before its holder wrote: what fencing cannot catch).
 *
 * @param backend the backend label
 * @param fault the fault label
 * @param profile the profile of the run
 * @param processes worker processes started, replacements included
 * @param threads threads per worker process
 * @param operations lock attempts
 * @param acquisitions attempts that acquired
 * @param busy {@code tryLock} calls that returned false
 * @param errors exceptions other than lost holds
 * @param lostHolds {@code LockLostException}s
 * @param guardedIncrements increments of the unguarded counters made inside a hold
 * @param counterTotal the sum of the counters at the end
 * @param overlaps overlapping holds both confirmed by the store: violations
 * @param overlapsAfterLoss holds that ended lost (or whose unlock failed) and overlapped another owner's hold
 * @param lostUpdates increments missing from the counters (a lower bound: a killed process may have written once
 *     more than it recorded)
 * @param nonMonotonicTokens acquisitions whose token did not grow
 * @param staleWritesAccepted stale writes the fenced resource accepted
 * @param staleWritesRejected stale writes the fenced resource rejected
 * @param supersededWritesAccepted writes accepted after a newer hold had been granted
 * @param fenceErrors inconsistencies of the fenced resource log
 * @param unfinishedOperations threads that never finished
 * @param failedWorkers workers not killed by the schedule that exited with a code other than 0
 * @param faults what happened at each scheduled fault
 * @param lease the workers' lease
 * @param renewInterval the workers' renewal interval
 * @param elapsed from the first worker's start to the last one's exit
 * @param finishedAt when the check ran
 * @param directory the run directory
 * @param violations descriptions of the first violations and notable events
 */
public record TortureReport(String backend, String fault, TortureProfile profile, int processes, int threads,
                            long operations, long acquisitions, long busy, long errors, long lostHolds,
                            long guardedIncrements, long counterTotal, long overlaps, long overlapsAfterLoss,
                            long lostUpdates, long nonMonotonicTokens, long staleWritesAccepted,
                            long staleWritesRejected, long supersededWritesAccepted, long fenceErrors,
                            long unfinishedOperations, long failedWorkers, List<FaultOutcome> faults, Duration lease,
                            Duration renewInterval, Duration elapsed, Instant finishedAt, Path directory,
                            List<String> violations) {

    /** A report; the lists are copied. */
    public TortureReport {
        faults = List.copyOf(faults);
        violations = List.copyOf(violations);
    }

    /**
     * What happened at one scheduled fault.
     *
     * @param name the fault's label
     * @param at when it began, from the first worker's start
     * @param duration how long its injection took (until healed)
     * @param outcome {@code ok}, or why it failed or was skipped
     * @param clientFault whether it froze or killed a worker that held locks
     * @param heldNames for a client fault, the names the victim held
     * @param recovery for a client fault, the time from freezing the victim until another process acquired every name
     *     it held; for a store fault, the time from the end of the fault until the next acquisition; null if that
     *     never happened
     */
    public record FaultOutcome(String name, Duration at, Duration duration, String outcome, boolean clientFault,
                               List<String> heldNames, Duration recovery) {

        /** An outcome; the list is copied. */
        public FaultOutcome {
            heldNames = List.copyOf(heldNames);
        }

        /** Whether the workers acquired again after the fault (see {@link #recovery}). */
        public boolean recovered() {
            return recovery != null;
        }

        @Override
        public String toString() {
            return name + " at +" + at.toMillis() + " ms (" + outcome + (clientFault ? ", held " + heldNames : "")
                    + "): " + (recovery == null ? "never recovered" : "recovered in " + recovery.toMillis() + " ms");
        }
    }

    /** How many scheduled faults froze or killed a client that held locks. */
    public long clientFaults() {
        return faults.stream().filter(FaultOutcome::clientFault).count();
    }

    /** How many faults failed, were skipped, or were never recovered from. */
    public long unrecoveredFaults() {
        return faults.stream().filter(f -> !f.outcome().equals("ok") || !f.recovered()).count();
    }

    /** The longest recovery over all faults, if any fault recovered. */
    public Optional<Duration> maxRecovery() {
        return faults.stream().filter(FaultOutcome::recovered).map(FaultOutcome::recovery)
                .max(Duration::compareTo);
    }

    /** The longest recovery over the client faults, if any. */
    public Optional<Duration> maxClientRecovery() {
        return faults.stream().filter(f -> f.clientFault() && f.recovered()).map(FaultOutcome::recovery)
                .max(Duration::compareTo);
    }

    /**
     * Whether the run shows nothing wrong for a run without faults: no overlaps of any kind, no lost updates, no
     * token or fencing problem, every operation finished, every worker exited normally.
     */
    public boolean isClean() {
        return overlaps == 0 && overlapsAfterLoss == 0 && lostUpdates == 0 && nonMonotonicTokens == 0
                && staleWritesAccepted == 0 && fenceErrors == 0 && unfinishedOperations == 0 && failedWorkers == 0
                && acquisitions > 0;
    }

    /**
     * Fails unless {@link #isClean()}: what a run without faults must show.
     *
     * @throws AssertionError listing what is wrong
     */
    public void assertClean() {
        List<String> problems = new ArrayList<>();
        check(problems, overlaps == 0, "overlapping holds");
        check(problems, overlapsAfterLoss == 0, "overlapping holds after a loss");
        check(problems, lostUpdates == 0, "lost updates");
        check(problems, acquisitions > 0, "no acquisitions at all");
        checkSafety(problems);
        fail(problems, "a run without faults");
    }

    /**
     * Fails unless the run was safe under its faults: no overlaps of confirmed holds, tokens growing, no stale write
     * accepted, no fenced-resource inconsistency, every operation finished, every fault recovered from, and every
     * client fault's locks free again within the lease plus a renewal period plus one second for the waiters to
     * notice.
     *
     * @throws AssertionError listing what is wrong
     */
    public void assertSafeUnderFaults() {
        assertSafeUnderFaults(lease.plus(renewInterval).plusSeconds(1));
    }

    /**
     * Fails unless the run was safe under its faults (see {@link #assertSafeUnderFaults()}), with an explicit bound on
     * the time until a frozen or killed client's locks were acquired by another process (ZooKeeper: the session
     * timeout; JDBC session mode: the time the database takes to notice the dead connection).
     *
     * @throws AssertionError listing what is wrong
     */
    public void assertSafeUnderFaults(Duration maxClientRecovery) {
        Objects.requireNonNull(maxClientRecovery, "maxClientRecovery");
        List<String> problems = new ArrayList<>();
        check(problems, overlaps == 0, "overlapping holds that the store confirmed to both owners");
        checkSafety(problems);
        check(problems, !faults.isEmpty(), "no fault was scheduled");
        for (FaultOutcome f : faults) {
            check(problems, f.outcome().equals("ok"), "fault " + f.name() + " " + f.outcome());
            check(problems, f.recovered(), "no acquisition after fault " + f);
            if (f.clientFault() && f.recovered()) {
                check(problems, f.recovery().compareTo(maxClientRecovery) <= 0, "locks of the client in " + f
                        + " were free only after " + f.recovery().toMillis() + " ms, more than "
                        + maxClientRecovery.toMillis() + " ms");
            }
        }
        fail(problems, "a run under faults");
    }

    private void checkSafety(List<String> problems) {
        check(problems, nonMonotonicTokens == 0, "fencing tokens not increasing");
        check(problems, staleWritesAccepted == 0, "stale writes accepted by the fenced resource");
        check(problems, fenceErrors == 0, "fenced resource inconsistencies");
        check(problems, unfinishedOperations == 0, "operations that never finished");
        check(problems, failedWorkers == 0, "workers that failed");
    }

    private static void check(List<String> problems, boolean ok, String problem) {
        if (!ok) {
            problems.add(problem);
        }
    }

    private void fail(List<String> problems, String what) {
        if (problems.isEmpty()) {
            return;
        }
        StringBuilder b = new StringBuilder("Torture run ").append(backend).append(" / ").append(fault)
                .append(" failed as ").append(what).append(": ").append(String.join("; ", problems)).append("\n  ")
                .append(summary());
        faults.forEach(f -> b.append("\n  fault: ").append(f));
        violations.forEach(v -> b.append("\n  ").append(v));
        b.append("\n  files: ").append(directory);
        throw new AssertionError(b.toString());
    }

    /** One readable line with every count. */
    public String summary() {
        return backend + " / " + fault + ": " + processes + " processes x " + threads + " threads, " + operations
                + " operations, " + acquisitions + " acquisitions (" + busy + " busy, " + errors + " errors, "
                + lostHolds + " lost), " + guardedIncrements + " guarded increments (counters " + counterTotal + "); "
                + overlaps + " overlaps, " + overlapsAfterLoss + " overlaps after loss, " + lostUpdates
                + " lost updates, " + nonMonotonicTokens + " non-monotonic tokens, " + staleWritesAccepted
                + " stale writes accepted, " + staleWritesRejected + " rejected, " + supersededWritesAccepted
                + " superseded writes accepted, " + fenceErrors + " fence errors, " + unfinishedOperations
                + " unfinished, " + failedWorkers + " failed workers; " + faults.size() + " faults, "
                + unrecoveredFaults() + " unrecovered, max recovery "
                + maxRecovery().map(d -> d.toMillis() + " ms").orElse("-") + "; " + elapsed.toMillis() + " ms";
    }

    /** This report as one row of the {@code docs/reliability.md} table ({@link ReliabilityTable#HEADER}). */
    public String toMarkdownRow() {
        return ReliabilityTable.row(ReliabilityTable.Aggregate.of(this));
    }

    /** This report as one line of JSON, the format of {@code results.jsonl}. */
    public String toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("backend", backend);
        m.put("fault", fault);
        m.put("profile", profile.name().toLowerCase(java.util.Locale.ROOT));
        m.put("finishedAt", finishedAt.toString());
        m.put("processes", processes);
        m.put("threads", threads);
        m.put("operations", operations);
        m.put("acquisitions", acquisitions);
        m.put("busy", busy);
        m.put("errors", errors);
        m.put("lostHolds", lostHolds);
        m.put("guardedIncrements", guardedIncrements);
        m.put("counterTotal", counterTotal);
        m.put("overlaps", overlaps);
        m.put("overlapsAfterLoss", overlapsAfterLoss);
        m.put("lostUpdates", lostUpdates);
        m.put("nonMonotonicTokens", nonMonotonicTokens);
        m.put("staleWritesAccepted", staleWritesAccepted);
        m.put("staleWritesRejected", staleWritesRejected);
        m.put("supersededWritesAccepted", supersededWritesAccepted);
        m.put("fenceErrors", fenceErrors);
        m.put("unfinishedOperations", unfinishedOperations);
        m.put("failedWorkers", failedWorkers);
        m.put("faults", (long) faults.size());
        m.put("clientFaults", clientFaults());
        m.put("unrecoveredFaults", unrecoveredFaults());
        m.put("maxRecoveryMillis", maxRecovery().map(Duration::toMillis).orElse(-1L));
        m.put("leaseMillis", lease.toMillis());
        m.put("renewIntervalMillis", renewInterval.toMillis());
        m.put("elapsedMillis", elapsed.toMillis());
        return Json.write(m);
    }

    @Override
    public String toString() {
        return summary();
    }
}
