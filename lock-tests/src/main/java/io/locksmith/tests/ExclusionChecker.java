package io.locksmith.tests;

import io.locksmith.DistributedLock;
import io.locksmith.TimeSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A recorder of lock acquisitions and releases from many threads that finds overlapping holds and fencing tokens
 * that do not grow in acquisition order.
 *
 * <p>Record {@link #acquired} right <em>after</em> the lock call returns and {@link #releasing} right
 * <em>before</em> the unlock call. Each recorded interval then lies inside the time its owner believed it held
 * the lock, so any two recorded intervals of different owners that overlap are a real violation of mutual
 * exclusion; a correct lock can never produce one. Events are ordered by a global sequence number taken when
 * they are recorded, which is consistent with real time across threads, so the analysis needs no clock
 * tolerance; the time source only adds readable timestamps to the report.
 *
 * <pre>{@code
 * lock.lock();
 * checker.acquired(lock, owner);
 * try {
 *     // critical section
 * } finally {
 *     checker.releasing(lock.name(), owner);
 *     lock.unlock();
 * }
 * ...
 * checker.assertClean();
 * }</pre>
 *
 * <p>Thread-safe; recording is one sequence increment and one lock-free queue insertion.
 */
public final class ExclusionChecker {

    private static final int MAX_LISTED = 25;

    private final TimeSource time;
    private final AtomicLong sequence = new AtomicLong();
    private final ConcurrentLinkedQueue<Event> events = new ConcurrentLinkedQueue<>();
    private final long origin;

    /** A checker that timestamps events with {@link System#nanoTime()}. */
    public ExclusionChecker() {
        this(TimeSource.system());
    }

    /** A checker that timestamps events with the given time source. */
    public ExclusionChecker(TimeSource time) {
        this.time = Objects.requireNonNull(time, "time");
        this.origin = time.nanoTime();
    }

    /**
     * Records that {@code owner} now holds {@code lockName} with {@code fencingToken}; call it right after the
     * lock call returned. A re-entrant acquisition by the same owner is recorded the same way and must carry
     * the same token.
     *
     * @param lockName the lock's name
     * @param owner a label unique to one thread of one provider, such as {@code clientId + "#" + threadName}
     * @param fencingToken the token of the hold
     */
    public void acquired(String lockName, String owner, long fencingToken) {
        record(Kind.ACQUIRE, lockName, owner, fencingToken);
    }

    /**
     * Records that {@code owner} holds {@code lock}, reading the name and the token from the lock; call it
     * right after the lock call returned, on the holding thread.
     */
    public void acquired(DistributedLock lock, String owner) {
        acquired(lock.name(), owner, lock.fencingToken());
    }

    /**
     * Records that {@code owner} is about to release one acquisition of {@code lockName}; call it right
     * before the unlock call.
     */
    public void releasing(String lockName, String owner) {
        record(Kind.RELEASE, lockName, owner, 0);
    }

    private void record(Kind kind, String lockName, String owner, long token) {
        Objects.requireNonNull(lockName, "lockName");
        Objects.requireNonNull(owner, "owner");
        // Sequence first: the number must be taken inside the recorded interval, the timestamp is decoration.
        long seq = sequence.getAndIncrement();
        events.add(new Event(seq, time.nanoTime(), kind, lockName, owner, token));
    }

    /** Analyses everything recorded so far; call it once the recording threads have finished. */
    public Report report() {
        List<Event> ordered = new ArrayList<>(events);
        ordered.sort(Comparator.comparingLong(Event::seq));
        Map<String, List<Event>> byName = new LinkedHashMap<>();
        for (Event e : ordered) {
            byName.computeIfAbsent(e.lockName, n -> new ArrayList<>()).add(e);
        }
        List<Violation> violations = new ArrayList<>();
        int acquisitions = 0;
        for (Map.Entry<String, List<Event>> entry : byName.entrySet()) {
            acquisitions += analyse(entry.getKey(), entry.getValue(), violations);
        }
        return new Report(acquisitions, violations);
    }

    /**
     * Fails with an {@link AssertionError} listing every violation if the recording shows any.
     *
     * @throws AssertionError if {@link Report#isClean()} is false
     */
    public void assertClean() {
        Report report = report();
        if (!report.isClean()) {
            throw new AssertionError(report.toString());
        }
    }

    private int analyse(String name, List<Event> ordered, List<Violation> out) {
        Map<String, Holding> holders = new LinkedHashMap<>();
        Event lastFresh = null;
        int acquisitions = 0;
        for (Event e : ordered) {
            if (e.kind == Kind.ACQUIRE) {
                acquisitions++;
                Holding mine = holders.get(e.owner);
                if (mine != null) {
                    mine.count++;
                    if (mine.first.token != e.token) {
                        out.add(new Violation(ViolationKind.TOKEN_CHANGED_ON_REENTRY, name,
                                e.owner + " re-entered at " + at(e) + " with token " + e.token
                                        + " but its hold started with token " + mine.first.token));
                    }
                    continue;
                }
                for (Holding other : holders.values()) {
                    out.add(new Violation(ViolationKind.OVERLAP, name,
                            e.owner + " acquired at " + at(e) + " (token " + e.token + ") while "
                                    + other.first.owner + " held it since " + at(other.first) + " (token "
                                    + other.first.token + ")"));
                }
                if (lastFresh != null && e.token <= lastFresh.token) {
                    out.add(new Violation(ViolationKind.TOKEN_NOT_INCREASING, name,
                            e.owner + " acquired at " + at(e) + " with token " + e.token + ", not above token "
                                    + lastFresh.token + " of the earlier acquisition by " + lastFresh.owner + " at "
                                    + at(lastFresh)));
                }
                if (lastFresh == null || e.token > lastFresh.token) {
                    lastFresh = e;
                }
                holders.put(e.owner, new Holding(e));
            } else {
                Holding mine = holders.get(e.owner);
                if (mine == null) {
                    out.add(new Violation(ViolationKind.RELEASE_WITHOUT_HOLD, name,
                            e.owner + " released at " + at(e) + " without a recorded hold"));
                } else if (--mine.count == 0) {
                    holders.remove(e.owner);
                }
            }
        }
        for (Holding open : holders.values()) {
            out.add(new Violation(ViolationKind.OPEN_HOLD, name,
                    open.first.owner + " acquired at " + at(open.first) + " (token " + open.first.token
                            + ") and never recorded the release"));
        }
        return acquisitions;
    }

    private String at(Event e) {
        return "#" + e.seq + " +" + TimeUnit.NANOSECONDS.toMicros(e.nanos - origin) + "µs";
    }

    private enum Kind { ACQUIRE, RELEASE }

    private record Event(long seq, long nanos, Kind kind, String lockName, String owner, long token) {
    }

    private static final class Holding {
        final Event first;
        int count = 1;

        Holding(Event first) {
            this.first = first;
        }
    }

    /** What a {@link Violation} is about. */
    public enum ViolationKind {
        /** Two owners held the same lock at once. */
        OVERLAP,
        /** A fresh acquisition's fencing token was not greater than an earlier acquisition's. */
        TOKEN_NOT_INCREASING,
        /** A re-entrant acquisition reported a different token than the hold it re-entered. */
        TOKEN_CHANGED_ON_REENTRY,
        /** A release was recorded for an owner that had no recorded hold. */
        RELEASE_WITHOUT_HOLD,
        /** An acquisition was never followed by a release. */
        OPEN_HOLD
    }

    /**
     * One broken rule found in a recording.
     *
     * @param kind which rule
     * @param lockName the lock it happened on
     * @param description the events involved, with sequence numbers and timestamps
     */
    public record Violation(ViolationKind kind, String lockName, String description) {
        @Override
        public String toString() {
            return kind + " on '" + lockName + "': " + description;
        }
    }

    /**
     * The outcome of analysing a recording.
     *
     * @param acquisitions how many acquisitions were recorded, re-entrant ones included
     * @param violations every broken rule, in recording order per lock
     */
    public record Report(int acquisitions, List<Violation> violations) {

        /** A report; the list is copied. */
        public Report {
            violations = List.copyOf(violations);
        }

        /** Whether nothing was violated. */
        public boolean isClean() {
            return violations.isEmpty();
        }

        /** The violations of one kind. */
        public List<Violation> violations(ViolationKind kind) {
            List<Violation> matching = new ArrayList<>();
            for (Violation v : violations) {
                if (v.kind() == kind) {
                    matching.add(v);
                }
            }
            return Collections.unmodifiableList(matching);
        }

        @Override
        public String toString() {
            if (isClean()) {
                return "exclusion check clean: " + acquisitions + " acquisitions, no overlaps, tokens increasing";
            }
            Map<ViolationKind, Integer> counts = new HashMap<>();
            violations.forEach(v -> counts.merge(v.kind(), 1, Integer::sum));
            StringBuilder b = new StringBuilder("exclusion check failed over ").append(acquisitions)
                    .append(" acquisitions: ").append(counts);
            violations.stream().limit(MAX_LISTED).forEach(v -> b.append("\n  ").append(v));
            if (violations.size() > MAX_LISTED) {
                b.append("\n  … and ").append(violations.size() - MAX_LISTED).append(" more");
            }
            return b.toString();
        }
    }
}
