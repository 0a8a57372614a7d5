package io.locksmith;

import java.util.List;

/**
 * Follows one acquisition of a lock, begun by {@link LockObserver#acquisitionStarted}, to its outcome and, when
 * it is granted, the hold to its end. Each method is called at most once, {@link #holdEnded} only after
 * {@link #acquisitionEnded} with {@link LockObserver.Outcome#ACQUIRED}. The same rules as for
 * {@link LockObserver} apply: short, non-blocking, never while Locksmith holds an internal lock.
 */
public interface AcquisitionObserver {

    /**
     * The acquisition ended.
     *
     * @param waitedNanos from the start of the acquisition to its outcome
     * @param fencingToken the token of the new hold if acquired, otherwise -1
     * @param failure what went wrong for {@code FAILED} and {@code INTERRUPTED}, otherwise null
     */
    void acquisitionEnded(LockObserver.Outcome outcome, long waitedNanos, long fencingToken, Throwable failure);

    /**
     * The hold ended; called on the releasing thread, or on the thread that detected a loss.
     *
     * @param heldNanos from the grant to the end
     * @param reason why a hold was lost or its release is unconfirmed, otherwise null
     */
    default void holdEnded(LockObserver.HoldEnd end, long heldNanos, String reason) {
    }

    /** An observer passing each call to each of {@code observers} in turn, as {@link LockObserver#composite}. */
    static AcquisitionObserver composite(List<AcquisitionObserver> observers) {
        return new CompositeLockObserver.Acquisitions(observers.toArray(new AcquisitionObserver[0]));
    }
}
