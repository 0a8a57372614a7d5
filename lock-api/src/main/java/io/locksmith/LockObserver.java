package io.locksmith;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Watches what a provider's locks do, for metrics and tracing: each acquisition and its outcome, how each hold
 * ended, the store's failures and the renewal rounds. Set it with {@link LockOptions.Builder#observer}; when it is
 * not set the machinery makes no call and allocates nothing for it.
 *
 * <p>Calls come on the thread that acts (the acquiring or releasing thread; the provider's scheduler thread for
 * renewals and for losses it detects), never while Locksmith holds an internal lock. Keep them short and
 * non-blocking. An observer that throws is logged and otherwise ignored: it never changes what the lock does.
 *
 * <p>{@code backend} is the provider's {@link LockProvider#backend()}: the store address, without credentials.
 */
public interface LockObserver {

    /** An observer that observes nothing: the default. */
    LockObserver NONE = new LockObserver() {
        @Override
        public String toString() {
            return "LockObserver.NONE";
        }
    };

    /** How an acquisition ended. */
    enum Outcome {
        /** The lock was granted: a hold began. */
        ACQUIRED,
        /** A single attempt ({@code tryLock()}, a zero wait) found the lock held. */
        BUSY,
        /** The wait ran out while somebody else held the lock. */
        TIMED_OUT,
        /** The waiting thread was interrupted. */
        INTERRUPTED,
        /** The future of an asynchronous acquisition was cancelled while it waited. */
        CANCELLED,
        /** The store failed or could not be reached, or the provider was closed. */
        FAILED
    }

    /** How a hold ended. */
    enum HoldEnd {
        /** Released by its owner (or by closing the provider), confirmed by the store. */
        RELEASED,
        /**
         * Its owner released it, but the store's answer was lost: the provider retries the release in the
         * background; the owner no longer holds the lock.
         */
        RELEASE_UNCONFIRMED,
        /** Lost: lease ended unrenewed, session expired, key deleted, owner thread died. */
        LOST
    }

    /**
     * The calling thread starts a fresh acquisition of {@code lockName}; a holder's re-entry is not one.
     *
     * @return what follows this acquisition to its outcome and, if it is granted, the hold to its end; null to
     *         follow nothing more
     */
    default AcquisitionObserver acquisitionStarted(String backend, String lockName) {
        return null;
    }

    /**
     * A call to the store failed or its outcome is unknown; a busy answer is not a failure.
     *
     * @param lockName the lock the call was for, or null for a call about several (a renewal batch)
     * @param operation what was asked: {@code acquire}, {@code release}, {@code renew}, {@code inspect}, ...
     */
    default void backendFailed(String backend, String lockName, String operation, RuntimeException failure) {
    }

    /**
     * A renewal round ended.
     *
     * @param holds how many holds it was to renew
     * @param renewed how many the store renewed
     * @param gone how many the store no longer had (each also ends as {@link HoldEnd#LOST})
     * @param nanos how long the round took
     * @param failure the first failed call of the round, or null
     */
    default void renewalRound(String backend, int holds, int renewed, int gone, long nanos,
            RuntimeException failure) {
    }

    /**
     * An observer that passes every call to each of {@code observers} in turn; one that throws is logged and does
     * not keep the call from the others.
     */
    static LockObserver composite(LockObserver... observers) {
        List<LockObserver> all = new ArrayList<>(Arrays.asList(observers));
        all.forEach(o -> Objects.requireNonNull(o, "observer"));
        all.removeIf(o -> o == NONE);
        if (all.isEmpty()) {
            return NONE;
        }
        if (all.size() == 1) {
            return all.get(0);
        }
        return new CompositeLockObserver(all.toArray(new LockObserver[0]));
    }
}
