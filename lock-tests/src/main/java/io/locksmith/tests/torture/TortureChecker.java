package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Reads the files of a torture run directory (the workers' histories, the runner's history, the counters and the
 * fenced resources' logs) and reports what went wrong, as a {@link TortureReport}.
 *
 * <p>How it judges, per lock name:
 * <ul>
 *   <li><b>Holds.</b> A hold lasts from its {@code ACQ} (taken after the lock call returned) to its {@code REL} (taken
 *       before unlock), so it lies inside the time its owner believed it held the lock. All timestamps are
 *       {@code System.nanoTime()} of one machine ({@code CLOCK_MONOTONIC}), comparable across processes, so two holds
 *       of a correct lock never intersect: the first owner's {@code REL} precedes its release, which precedes the
 *       second owner's acquisition, which precedes its {@code ACQ}. A hold with no {@code REL} because the schedule
 *       killed its process ends at the kill: the process did nothing after it, and the store must keep the lock until
 *       the lease ends, so another owner inside that interval is a violation too. A hold whose unlock reported it lost
 *       (or failed) ended in the store without its owner knowing; an overlap with it is counted apart, as
 *       {@code overlapsAfterLoss}: that is what a client paused past its lease does, and fencing is the remedy.</li>
 *   <li><b>Tokens.</b> Acquisition order is only certain between acquisitions whose lock calls did not overlap in
 *       time, so an acquisition is flagged if some acquisition whose call returned before its call began has a token
 *       at least as high, or if two acquisitions share a token. This stays sound when a process is frozen between
 *       the store's answer and the {@code ACQ} record.</li>
 *   <li><b>Lost updates.</b> Every {@code WRITE} record is one increment of the unguarded counter; the counter's
 *       final value falls short of their number by the updates lost. It is a lower bound: a process killed between
 *       writing the counter and recording it adds an increment nobody recorded.</li>
 *   <li><b>Fencing.</b> The fenced resource's log is replayed: an accepted write whose token is below the highest
 *       accepted before is a stale write accepted; a rejected write that was not stale, a logged "highest" that
 *       disagrees with the replay, a token never granted to the writing thread, or a write outside the writer's hold
 *       is a fence error. Accepted writes after a newer token was granted (but not yet written) are counted as
 *       superseded: what fencing cannot stop.</li>
 *   <li><b>Unfinished operations.</b> Every thread of every process the schedule did not kill must record
 *       {@code DONE}; a {@code HANG} record names an operation that overran its bound.</li>
 *   <li><b>Recovery.</b> For a fault that froze or killed a client while it held locks: the time from that moment
 *       until another process acquired each of those names (compare with lease + renewal period). For any other
 *       fault: from its end to the next acquisition.</li>
 * </ul>
 */
public final class TortureChecker {

    private static final int MAX_LISTED = 40;
    private static final Pattern WORKER_HISTORY = Pattern.compile("worker-(\\d+)\\.history");

    private final Path directory;
    private final RunInfo info;
    private final List<String> violations = new ArrayList<>();
    private int unlisted;

    // runner history
    private final Map<Integer, Long> spawned = new TreeMap<>();
    private final Map<Integer, Long> killed = new HashMap<>();
    private final Map<Integer, Long> reaped = new HashMap<>();
    private final Map<Integer, Long> exitedAt = new HashMap<>();
    private final Map<Integer, Integer> exitCode = new HashMap<>();
    private final List<ClientEvent> clientEvents = new ArrayList<>();
    private final Map<Integer, FaultWindow> faultWindows = new LinkedHashMap<>();
    private long firstRunnerEvent = Long.MAX_VALUE;
    private long lastRunnerEvent = Long.MIN_VALUE;

    // worker histories
    private final List<List<Hold>> holds = new ArrayList<>();
    private final long[] writes;
    private long operations;
    private long acquisitions;
    private long busy;
    private long errors;
    private long lostHolds;
    private long unfinished;
    private long failedWorkers;
    private long firstStart = Long.MAX_VALUE;

    private TortureChecker(Path directory) {
        this.directory = directory;
        this.info = RunInfo.load(directory);
        this.writes = new long[info.names().size()];
        for (int n = 0; n < info.names().size(); n++) {
            holds.add(new ArrayList<>());
        }
    }

    /**
     * Checks the run in {@code directory} (a directory {@link TortureRun} made, after its processes have ended).
     *
     * @throws UncheckedIOException if the files cannot be read
     */
    public static TortureReport check(Path directory) {
        return new TortureChecker(directory).analyse();
    }

    private TortureReport analyse() {
        readRunner();
        Set<Integer> workers = new TreeSet<>(spawned.keySet());
        workers.addAll(historyFiles());
        for (int w : workers) {
            readWorker(w);
        }
        long overlaps = 0;
        long overlapsAfterLoss = 0;
        long nonMonotonic = 0;
        long lostUpdates = 0;
        long counterTotal = 0;
        long[] fence = new long[4]; // stale accepted, stale rejected, superseded accepted, errors
        for (int n = 0; n < info.names().size(); n++) {
            List<Hold> list = holds.get(n);
            list.sort(Comparator.comparingLong((Hold h) -> h.t1).thenComparingInt(h -> h.worker));
            long[] o = overlaps(n, list);
            overlaps += o[0];
            overlapsAfterLoss += o[1];
            nonMonotonic += tokens(n, list);
            long counter = CounterFile.valueIn(directory, n);
            counterTotal += counter;
            if (writes[n] > counter) {
                lostUpdates += writes[n] - counter;
                note("LOST UPDATES on '" + info.names().get(n) + "': " + writes[n]
                        + " increments recorded inside holds, counter holds " + counter);
            }
            fence(n, list, fence);
        }
        List<TortureReport.FaultOutcome> faults = faultOutcomes();
        long end = Math.max(lastRunnerEvent, exitedAt.values().stream().mapToLong(Long::longValue).max()
                .orElse(Long.MIN_VALUE));
        long begin = Math.min(firstRunnerEvent, firstStart);
        Duration elapsed = begin == Long.MAX_VALUE || end == Long.MIN_VALUE ? Duration.ZERO
                : Duration.ofNanos(Math.max(0, end - begin));
        if (unlisted > 0) {
            violations.add("… and " + unlisted + " more");
        }
        return new TortureReport(info.backend(), info.fault(), info.profile(), workers.size(), info.threads(),
                operations, acquisitions, busy, errors, lostHolds, sum(writes), counterTotal, overlaps,
                overlapsAfterLoss, lostUpdates, nonMonotonic, fence[0], fence[1], fence[2], fence[3], unfinished,
                failedWorkers, faults, info.lease(), info.renewInterval(), elapsed, Instant.now(), directory,
                violations);
    }

    // ------------------------------------------------------------------ reading

    private Set<Integer> historyFiles() {
        Set<Integer> found = new TreeSet<>();
        try (Stream<Path> files = Files.list(directory)) {
            files.forEach(p -> {
                Matcher m = WORKER_HISTORY.matcher(p.getFileName().toString());
                if (m.matches()) {
                    found.add(Integer.parseInt(m.group(1)));
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot list " + directory, e);
        }
        return found;
    }

    private void readRunner() {
        for (String[] f : HistoryFile.read(directory.resolve("runner.history"))) {
            long t = Long.parseLong(f[1]);
            firstRunnerEvent = Math.min(firstRunnerEvent, t);
            lastRunnerEvent = Math.max(lastRunnerEvent, t);
            switch (f[0]) {
                case HistoryFile.SPAWN -> spawned.put(Integer.parseInt(f[2]), t);
                case HistoryFile.EXIT -> {
                    exitedAt.put(Integer.parseInt(f[2]), t);
                    exitCode.put(Integer.parseInt(f[2]), Integer.parseInt(f[3]));
                }
                case HistoryFile.KILL -> {
                    killed.putIfAbsent(Integer.parseInt(f[2]), t);
                    clientEvents.add(new ClientEvent(t, Integer.parseInt(f[2]), names(f)));
                }
                case HistoryFile.STOP -> clientEvents.add(new ClientEvent(t, Integer.parseInt(f[2]), names(f)));
                case HistoryFile.REAP -> reaped.putIfAbsent(Integer.parseInt(f[2]), t);
                case HistoryFile.FAULT_BEGIN -> faultWindows.put(Integer.parseInt(f[2]),
                        new FaultWindow(f[3], t));
                case HistoryFile.FAULT_END -> {
                    FaultWindow w = faultWindows.get(Integer.parseInt(f[2]));
                    if (w != null) {
                        w.end = t;
                        w.outcome = f[3];
                    }
                }
                default -> { }
            }
        }
    }

    private void readWorker(int worker) {
        Map<Integer, Hold> current = new HashMap<>();
        Map<Integer, String> lastEvent = new HashMap<>();
        Set<Integer> done = new HashSet<>();
        List<Hold> mine = new ArrayList<>();
        int[] threads = {info.threads()};
        HistoryFile.read(WorkerSpec.historyOf(directory, worker), f -> {
            switch (f[0]) {
                case HistoryFile.START -> {
                    threads[0] = Integer.parseInt(f[3]);
                    firstStart = Math.min(firstStart, Long.parseLong(f[1]));
                }
                case HistoryFile.ACQ, HistoryFile.ACQR -> {
                    Hold h = new Hold(worker, Integer.parseInt(f[1]), Integer.parseInt(f[2]), Long.parseLong(f[3]),
                            Long.parseLong(f[4]), Long.parseLong(f[5]), f[0].equals(HistoryFile.ACQR));
                    current.put(h.thread, h);
                    holds.get(h.name).add(h);
                    mine.add(h);
                    acquisitions++;
                    operations++;
                }
                case HistoryFile.BUSY -> {
                    busy++;
                    operations++;
                    current.remove(Integer.parseInt(f[1]));
                }
                case HistoryFile.ERR -> {
                    errors++;
                    int thread = Integer.parseInt(f[1]);
                    switch (f[4]) {
                        case "acquire" -> {
                            operations++;
                            current.remove(thread);
                        }
                        case "unlock" -> outcome(current.get(thread)).failed = true;
                        case "open", "thread" -> note("worker " + worker + (thread >= 0 ? " thread " + thread : "")
                                + " failed (" + f[4] + "): " + f[5]);
                        default -> { }
                    }
                }
                case HistoryFile.LOST -> {
                    lostHolds++;
                    int thread = Integer.parseInt(f[1]);
                    if (f[4].equals("token")) {
                        operations++;
                        current.remove(thread);
                    } else {
                        outcome(current.get(thread)).lost = true;
                    }
                }
                case HistoryFile.WRITE -> writes[Integer.parseInt(f[2])]++;
                case HistoryFile.REL -> {
                    Hold h = current.get(Integer.parseInt(f[1]));
                    if (h != null && h.name == Integer.parseInt(f[2]) && !h.released) {
                        h.released = true;
                        h.end = Long.parseLong(f[3]);
                    }
                }
                case HistoryFile.UNLOCKED -> outcome(current.get(Integer.parseInt(f[1]))).clean = true;
                case HistoryFile.DONE -> done.add(Integer.parseInt(f[1]));
                case HistoryFile.HANG -> note("HANG in worker " + worker + " thread " + f[1] + ": " + f[3]);
                default -> { }
            }
            if (!f[0].equals(HistoryFile.START) && !f[0].equals(HistoryFile.END)) {
                lastEvent.put(Integer.parseInt(f[1]), String.join(" ", f));
            }
        });
        Long killedAt = killed.get(worker);
        Long endedAt = killedAt != null ? killedAt : reaped.containsKey(worker) ? reaped.get(worker)
                : exitedAt.get(worker);
        for (Hold h : mine) {
            if (!h.released) {
                h.end = endedAt != null ? endedAt : Long.MAX_VALUE;
                h.killed = killedAt != null;
            }
        }
        if (killedAt != null) {
            return;
        }
        for (int t = 0; t < threads[0]; t++) {
            if (!done.contains(t)) {
                unfinished++;
                note("UNFINISHED: worker " + worker + " thread " + t + " never finished"
                        + (reaped.containsKey(worker) ? " (killed at the run timeout)" : "") + "; last event: "
                        + lastEvent.getOrDefault(t, "none"));
            }
        }
        Integer code = exitCode.get(worker);
        if (code != null && code != 0) {
            failedWorkers++;
            note("worker " + worker + " exited with code " + code + (code == 3 ? " (an operation hung)" : "")
                    + "; see worker-" + worker + ".log");
        }
    }

    /** The hold whose unlock outcome this is; a dummy if the unlock belonged to no recorded hold. */
    private static Hold outcome(Hold h) {
        return h != null && h.released ? h : new Hold(-1, -1, -1, 0, 0, 0, false);
    }

    // ------------------------------------------------------------------ analyses

    /**
     * Counts overlapping pairs of confirmed holds, and lost holds that overlapped another; {@code list} is sorted by
     * start. (One client paused past its lease overlaps every hold taken meanwhile: that is one lost hold, not
     * hundreds of violations.)
     */
    private long[] overlaps(int name, List<Hold> list) {
        long[] counts = new long[2];
        Set<Hold> lostAndOverlapped = new HashSet<>();
        List<Hold> active = new ArrayList<>();
        for (Hold h : list) {
            active.removeIf(a -> a.end <= h.t1);
            for (Hold a : active) {
                if (a.shared && h.shared) {
                    continue; // read holds of a read-write lock may overlap each other
                }
                if (a.lost || a.failed || h.lost || h.failed) {
                    for (Hold either : List.of(a, h)) {
                        if ((either.lost || either.failed) && lostAndOverlapped.add(either)) {
                            note("OVERLAP AFTER LOSS on '" + info.names().get(name) + "': " + h + " acquired "
                                    + micros(h.t1 - a.t1) + " after " + a + " did, and " + micros(a.end - h.t1)
                                    + " before that hold ended; " + (either == a ? "the first" : "the second")
                                    + " ended " + (either.lost ? "lost" : "with a failed unlock"));
                        }
                    }
                } else {
                    counts[0]++;
                    note("OVERLAP on '" + info.names().get(name) + "': " + h + " acquired " + micros(h.t1 - a.t1)
                            + " after " + a + " did, and " + micros(a.end - h.t1) + " before that hold ended"
                            + (a.killed ? " (its process was killed)" : ""));
                }
            }
            active.add(h);
        }
        counts[1] = lostAndOverlapped.size();
        return counts;
    }

    /**
     * Counts acquisitions whose token is not above an acquisition certainly before it, or repeats one. A read hold
     * of a read-write lock is flagged only if its token is below a write's certainly before it (reads share the
     * last write's token, or carry one of their own between two writes'); a write's must exceed reads' too.
     */
    private long tokens(int name, List<Hold> byEnd) {
        List<Hold> byStart = new ArrayList<>(byEnd);
        byStart.sort(Comparator.comparingLong(h -> h.t0));
        long count = 0;
        int p = 0;
        Hold highest = null;
        Hold highestWrite = null;
        Map<Long, Hold> seen = new HashMap<>();
        for (Hold y : byStart) {
            while (p < byEnd.size() && byEnd.get(p).t1 < y.t0) {
                Hold x = byEnd.get(p++);
                if (highest == null || x.token > highest.token) {
                    highest = x;
                }
                if (!x.shared && (highestWrite == null || x.token > highestWrite.token)) {
                    highestWrite = x;
                }
            }
            if (y.shared) {
                if (highestWrite != null && highestWrite.token > y.token) {
                    count++;
                    note("READ TOKEN BELOW AN EARLIER WRITE'S on '" + info.names().get(name) + "': " + y
                            + " got token " + y.token + " after " + highestWrite + " had got " + highestWrite.token);
                }
                continue;
            }
            Hold twin = seen.putIfAbsent(y.token, y);
            if (highest != null && highest.token >= y.token) {
                count++;
                note("TOKEN NOT INCREASING on '" + info.names().get(name) + "': " + y + " got token " + y.token
                        + " after " + highest + " had got " + highest.token);
            } else if (twin != null) {
                count++;
                note("TOKEN REPEATED on '" + info.names().get(name) + "': " + y + " and " + twin + " both got "
                        + y.token);
            }
        }
        return count;
    }

    /** Replays the fenced resource log of {@code name}; adds to {stale accepted, stale rejected, superseded, errors}. */
    private void fence(int name, List<Hold> byStart, long[] counts) {
        FenceReplay replay = new FenceReplay(info.names().get(name), byStart, counts);
        HistoryFile.read(FencedFile.logOf(directory, name), replay);
    }

    /** The fenced resource's decisions replayed line by line against its rule and the holds of the history. */
    private final class FenceReplay implements Consumer<String[]> {
        private final String label;
        private final List<Hold> byStart;
        private final long[] counts;
        private final Map<List<Long>, Hold> grants = new HashMap<>();
        private boolean any;
        private long highest;
        private long granted = Long.MIN_VALUE;
        private int next;

        FenceReplay(String label, List<Hold> byStart, long[] counts) {
            this.label = label;
            this.byStart = byStart;
            this.counts = counts;
            for (Hold h : byStart) {
                // readers never write the fenced resource, and may carry the token of their thread's last write
                if (!h.shared) {
                    grants.put(List.of((long) h.worker, (long) h.thread, h.token), h);
                }
            }
        }

        @Override
        public void accept(String[] f) {
            long t = Long.parseLong(f[0]);
            int worker = Integer.parseInt(f[1]);
            int thread = Integer.parseInt(f[2]);
            long token = Long.parseLong(f[3]);
            boolean accepted = f[4].equals("A");
            boolean shouldAccept = !any || token >= highest;
            String logged = f[5];
            if (!logged.equals(any ? Long.toString(highest) : "-")) {
                counts[3]++;
                note("FENCE LOG on '" + label + "': a write of token " + token + " logs highest " + logged
                        + " where the log before it says " + (any ? highest : "none"));
            }
            if (accepted && !shouldAccept) {
                counts[0]++;
                note("STALE WRITE ACCEPTED on '" + label + "': token " + token + " from worker " + worker + " thread "
                        + thread + " after token " + highest + " had been accepted");
            } else if (!accepted) {
                counts[1]++;
                if (shouldAccept) {
                    counts[3]++;
                    note("FENCE on '" + label + "': token " + token + " rejected although the highest accepted was "
                            + (any ? highest : "none"));
                }
            }
            if (accepted) {
                any = true;
                highest = token;
            }
            Hold h = grants.get(List.of((long) worker, (long) thread, token));
            if (h == null) {
                counts[3]++;
                note("FENCE on '" + label + "': worker " + worker + " thread " + thread + " wrote with token " + token
                        + ", which the history never granted it");
            } else if (t < h.t1 || t > h.end) {
                counts[3]++;
                note("FENCE on '" + label + "': " + h + " wrote at " + t + " outside its hold");
            }
            while (next < byStart.size() && byStart.get(next).t1 < t) {
                Hold later = byStart.get(next++);
                if (!later.shared) {
                    granted = Math.max(granted, later.token);
                }
            }
            if (accepted && granted > token) {
                counts[2]++;
            }
        }
    }

    private List<TortureReport.FaultOutcome> faultOutcomes() {
        long origin = Math.min(firstStart, spawned.values().stream().mapToLong(Long::longValue).min()
                .orElse(Long.MAX_VALUE));
        List<TortureReport.FaultOutcome> outcomes = new ArrayList<>();
        for (FaultWindow w : faultWindows.values()) {
            long end = w.end != null ? w.end : lastRunnerEvent;
            Set<Integer> victims = new HashSet<>();
            Set<String> heldNames = new TreeSet<>();
            boolean client = false;
            boolean recovered = true;
            long recovery = 0;
            for (ClientEvent e : clientEvents) {
                long t = e.t();
                int worker = e.worker();
                if (t < w.begin || t > end || !victims.add(worker)) {
                    continue; // outside the fault, or a later event (the kill after the freeze) of the same victim
                }
                for (int n = 0; n < holds.size(); n++) {
                    // The names the runner saw held when it froze the victim count too: a thread frozen after taking
                    // its release time but before recording it has a hold that ends, by its record, just before the
                    // freeze, yet it had not unlocked, so the store still held its lock.
                    if (!e.held().contains(n) && heldAt(n, worker, t) == null) {
                        continue;
                    }
                    client = true;
                    heldNames.add(info.names().get(n));
                    long next = firstAcquisitionAfter(n, t, worker);
                    if (next == Long.MAX_VALUE) {
                        recovered = false;
                    } else {
                        recovery = Math.max(recovery, next - t);
                    }
                }
            }
            if (!client) {
                long next = Long.MAX_VALUE;
                for (int n = 0; n < holds.size(); n++) {
                    next = Math.min(next, firstAcquisitionAfter(n, end, -1));
                }
                recovered = next != Long.MAX_VALUE;
                recovery = recovered ? next - end : 0;
            }
            outcomes.add(new TortureReport.FaultOutcome(w.name, Duration.ofNanos(Math.max(0, w.begin - origin)),
                    Duration.ofNanos(Math.max(0, end - w.begin)), w.outcome != null ? w.outcome : "did not finish",
                    client, List.copyOf(heldNames), recovered ? Duration.ofNanos(recovery) : null));
        }
        return outcomes;
    }

    /** The name indexes a STOP or KILL line of the runner lists as held ({@code -} for none). */
    private static Set<Integer> names(String[] f) {
        Set<Integer> names = new HashSet<>();
        if (f.length > 3 && !f[3].equals("-")) {
            for (String n : f[3].split(",")) {
                names.add(Integer.parseInt(n));
            }
        }
        return names;
    }

    private Hold heldAt(int name, int worker, long t) {
        for (Hold h : holds.get(name)) {
            if (h.worker == worker && h.t1 <= t && h.end > t) {
                return h;
            }
        }
        return null;
    }

    private long firstAcquisitionAfter(int name, long t, int notWorker) {
        long first = Long.MAX_VALUE;
        for (Hold h : holds.get(name)) {
            if (h.worker != notWorker && h.t1 > t) {
                first = Math.min(first, h.t1);
            }
        }
        return first;
    }

    private void note(String violation) {
        if (violations.size() < MAX_LISTED) {
            violations.add(violation);
        } else {
            unlisted++;
        }
    }

    private static long sum(long[] values) {
        long total = 0;
        for (long v : values) {
            total += v;
        }
        return total;
    }

    private static String micros(long nanos) {
        return TimeUnit.NANOSECONDS.toMicros(nanos) + " µs";
    }

    /** One hold as the history shows it. */
    private static final class Hold {
        final int worker;
        final int thread;
        final int name;
        final long t0;
        final long t1;
        final long token;
        /** Whether this is a read hold of a read-write lock, which may overlap other read holds. */
        final boolean shared;
        long end = Long.MAX_VALUE;
        boolean released;
        boolean clean;
        boolean lost;
        boolean failed;
        boolean killed;

        Hold(int worker, int thread, int name, long t0, long t1, long token, boolean shared) {
            this.worker = worker;
            this.thread = thread;
            this.name = name;
            this.t0 = t0;
            this.t1 = t1;
            this.token = token;
            this.shared = shared;
        }

        @Override
        public String toString() {
            return "worker " + worker + " thread " + thread + (shared ? " reading" : "") + " (token " + token + ")";
        }
    }

    /** A worker frozen or killed by the schedule at {@code t}, holding {@code held} as the runner saw it. */
    private record ClientEvent(long t, int worker, Set<Integer> held) {
    }

    private static final class FaultWindow {
        final String name;
        final long begin;
        Long end;
        String outcome;

        FaultWindow(String name, long begin) {
            this.name = name;
            this.begin = begin;
        }
    }
}
