package io.locksmith.spi;

import java.time.Duration;
import java.util.Optional;

/** The outcome of one acquisition attempt in a {@link LockStore}: acquired with a fencing token, or busy. */
public final class Acquisition {

    private static final Acquisition BUSY_UNKNOWN = new Acquisition(false, 0, null);

    private final boolean acquired;
    private final long fencingToken;
    private final Duration retryAfter;

    private Acquisition(boolean acquired, long fencingToken, Duration retryAfter) {
        this.acquired = acquired;
        this.fencingToken = fencingToken;
        this.retryAfter = retryAfter;
    }

    /** The lock was acquired; {@code fencingToken} is greater than that of every earlier acquisition. */
    public static Acquisition acquired(long fencingToken) {
        return new Acquisition(true, fencingToken, null);
    }

    /** Somebody else holds the lock; its remaining lease is unknown. */
    public static Acquisition busy() {
        return BUSY_UNKNOWN;
    }

    /**
     * Somebody else holds the lock and it frees itself within {@code remainingLease} at the latest, so a
     * waiter should look again by then even if no wake-up arrives.
     */
    public static Acquisition busy(Duration remainingLease) {
        return remainingLease == null ? BUSY_UNKNOWN : new Acquisition(false, 0, remainingLease);
    }

    /** Whether the lock was acquired. */
    public boolean isAcquired() {
        return acquired;
    }

    /** The fencing token of the new hold; only meaningful if {@link #isAcquired()}. */
    public long fencingToken() {
        return fencingToken;
    }

    /** The holder's remaining lease, if the store told it. */
    public Optional<Duration> retryAfter() {
        return Optional.ofNullable(retryAfter);
    }

    @Override
    public String toString() {
        return acquired ? "acquired(token=" + fencingToken + ")" : "busy(retryAfter=" + retryAfter + ")";
    }
}
