package io.locksmith.spring.internal;

import io.locksmith.AcquisitionObserver;
import io.locksmith.LockObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The holds this application has now, for the Actuator endpoint: a {@link LockObserver} the starter gives every
 * provider it builds.
 */
public final class HeldLocks implements LockObserver {

    private final Set<Held> holds = ConcurrentHashMap.newKeySet();

    @Override
    public AcquisitionObserver acquisitionStarted(String backend, String lockName) {
        return new AcquisitionObserver() {
            private Held held;

            @Override
            public void acquisitionEnded(Outcome outcome, long waitedNanos, long fencingToken, Throwable failure) {
                if (outcome == Outcome.ACQUIRED) {
                    held = new Held(backend, lockName, fencingToken, Instant.now(), System.nanoTime(),
                            Thread.currentThread().getName());
                    holds.add(held);
                }
            }

            @Override
            public void holdEnded(HoldEnd end, long heldNanos, String reason) {
                holds.remove(held);
            }
        };
    }

    /** The holds now, oldest first. */
    public List<Held> list() {
        List<Held> now = new ArrayList<>(holds);
        now.sort(Comparator.comparingLong(Held::grantedNanos));
        return now;
    }

    @Override
    public String toString() {
        return "HeldLocks{" + holds.size() + " held}";
    }

    /** One hold: where, which lock, its token, since when, and the thread that took it. */
    public record Held(String backend, String name, long fencingToken, Instant since, long grantedNanos,
            String thread) {

        /** How long it has been held. */
        public Duration heldFor() {
            return Duration.ofNanos(System.nanoTime() - grantedNanos);
        }
    }
}
