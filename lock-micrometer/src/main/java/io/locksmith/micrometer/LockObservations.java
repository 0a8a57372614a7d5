package io.locksmith.micrometer;

import io.locksmith.AcquisitionObserver;
import io.locksmith.LockObserver;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * Micrometer {@link Observation}s of lock waits and holds, so that tracing shows them as spans, fed by lock-api's
 * {@link LockObserver} hook:
 *
 * <ul>
 *   <li>{@value #WAIT}: from the start of an acquisition to its outcome, with the low-cardinality key values
 *       {@code locksmith.backend} and {@code locksmith.outcome} ({@code acquired}, {@code busy},
 *       {@code timed_out}, {@code interrupted}, {@code failed}; the error set for the last two);</li>
 *   <li>{@value #HOLD}: from the grant to the release or loss, with {@code locksmith.backend} and
 *       {@code locksmith.end} ({@code released}, {@code release_unconfirmed}, {@code lost}) and the fencing
 *       token as a high-cardinality key value.</li>
 * </ul>
 *
 * <p>Both are created on the acquiring thread, so the observation current there (a request's, say) is their
 * parent; neither is opened in a scope, because a hold may end on another thread (a loss). The lock's name is a
 * high-cardinality key value ({@code locksmith.lock.name}: spans, not metrics); a low-cardinality {@code lock}
 * value comes only from {@link #lockTag}, as for {@link LockMetrics}.
 */
public final class LockObservations implements LockObserver {

    /** The name of the observation of an acquisition's wait. */
    public static final String WAIT = "locksmith.lock.wait";
    /** The name of the observation of a hold. */
    public static final String HOLD = "locksmith.lock.hold";

    private final ObservationRegistry registry;
    private final Function<String, String> lockTag;

    private LockObservations(ObservationRegistry registry, Function<String, String> lockTag) {
        this.registry = registry;
        this.lockTag = lockTag;
    }

    /** Observations in {@code registry}, with no low-cardinality lock tag. */
    public static LockObservations of(ObservationRegistry registry) {
        return new LockObservations(Objects.requireNonNull(registry, "registry"), null);
    }

    /**
     * These observations with a low-cardinality {@code lock} key value: what {@code mapping} gives for the lock's
     * name (null or empty: {@code other}); keep its set of values small.
     */
    public LockObservations lockTag(Function<String, String> mapping) {
        return new LockObservations(registry, Objects.requireNonNull(mapping, "mapping"));
    }

    @Override
    public AcquisitionObserver acquisitionStarted(String backend, String lockName) {
        if (registry.isNoop()) {
            return null;
        }
        Observation wait = observation(WAIT, backend, lockName).start();
        return new Tracked(backend, lockName, wait);
    }

    @Override
    public String toString() {
        return "LockObservations{" + registry + '}';
    }

    private Observation observation(String name, String backend, String lockName) {
        LockObservationContext context = new LockObservationContext(backend, lockName);
        Observation observation = Observation.createNotStarted(name, () -> context, registry)
                .parentObservation(registry.getCurrentObservation())
                .contextualName(name)
                .lowCardinalityKeyValue("locksmith.backend", LockMetrics.backendKind(backend))
                .highCardinalityKeyValue("locksmith.lock.name", lockName);
        if (lockTag != null) {
            String value = lockTag.apply(lockName);
            observation.lowCardinalityKeyValue(LockMetrics.LOCK_TAG,
                    value == null || value.isEmpty() ? "other" : value);
        }
        return observation;
    }

    private static String lower(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT);
    }

    /** One acquisition's wait and, once granted, its hold. */
    private final class Tracked implements AcquisitionObserver {
        private final String backend;
        private final String lockName;
        private final Observation wait;
        private Observation hold;

        Tracked(String backend, String lockName, Observation wait) {
            this.backend = backend;
            this.lockName = lockName;
            this.wait = wait;
        }

        @Override
        public void acquisitionEnded(Outcome outcome, long waitedNanos, long fencingToken, Throwable failure) {
            wait.lowCardinalityKeyValue("locksmith.outcome", lower(outcome));
            if (failure != null) {
                wait.error(failure);
            }
            wait.stop();
            if (outcome == Outcome.ACQUIRED) {
                hold = observation(HOLD, backend, lockName)
                        .highCardinalityKeyValue("locksmith.fencing.token", Long.toString(fencingToken))
                        .start();
            }
        }

        @Override
        public void holdEnded(HoldEnd end, long heldNanos, String reason) {
            hold.lowCardinalityKeyValue("locksmith.end", lower(end));
            if (reason != null) {
                hold.highCardinalityKeyValue("locksmith.end.reason", reason);
            }
            hold.stop();
        }
    }
}
