package io.locksmith.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The outcome of one acquisition attempt in a {@link LockStore}: acquired with a fencing token (and, where the
 * store knows it better than the lease, how long the hold is valid), or busy (with, where the store knows it, when
 * to look again, and whether the store will wake the waiter itself).
 */
public final class Acquisition {

    private static final Acquisition BUSY_UNKNOWN =
            new Acquisition(false, 0, null, null, false, false, false, -1, false);
    private static final Acquisition QUEUED = new Acquisition(false, 0, null, null, false, false, false, -1, true);

    private final boolean acquired;
    private final long fencingToken;
    private final Duration validFor;
    private final Duration retryAfter;
    private final boolean watched;
    private final boolean backOff;
    private final boolean claimed;
    private final long holderToken;
    private final boolean queued;

    private Acquisition(boolean acquired, long fencingToken, Duration validFor, Duration retryAfter,
            boolean watched, boolean backOff, boolean claimed, long holderToken, boolean queued) {
        this.acquired = acquired;
        this.fencingToken = fencingToken;
        this.validFor = validFor;
        this.retryAfter = retryAfter;
        this.watched = watched;
        this.backOff = backOff;
        this.claimed = claimed;
        this.holderToken = holderToken;
        this.queued = queued;
    }

    /**
     * The lock was acquired for the full lease, counted from when {@link LockStore#tryAcquire} was called;
     * {@code fencingToken} is greater than that of every earlier acquisition.
     */
    public static Acquisition acquired(long fencingToken) {
        return new Acquisition(true, fencingToken, null, null, false, false, false, -1, false);
    }

    /**
     * The lock was acquired and the store guarantees it for {@code validFor} only, counted from when
     * {@link LockStore#tryAcquire} was called (Redlock: the lease less the time the vote took and the clock
     * drift).
     */
    public static Acquisition acquired(long fencingToken, Duration validFor) {
        return new Acquisition(true, fencingToken, Objects.requireNonNull(validFor, "validFor"), null, false, false,
                false, -1, false);
    }

    /** Somebody else holds the lock; its remaining lease is unknown. */
    public static Acquisition busy() {
        return BUSY_UNKNOWN;
    }

    /**
     * Somebody else holds the lock and a waiter should look again within {@code retryAfter} at the latest, even if
     * no wake-up arrives: the holder's remaining lease, or a store's own retry delay (Redlock after a split vote).
     */
    public static Acquisition busy(Duration retryAfter) {
        return retryAfter == null ? BUSY_UNKNOWN
                : new Acquisition(false, 0, null, retryAfter, false, false, false, -1, false);
    }

    /**
     * Somebody else holds the lock, and the store read the fencing token of the latest grant, {@code holderToken}
     * (not negative): a polling waiter that sees it change between two looks knows the lock changed hands meanwhile
     * and looks again soon, rather than backing off further from a holder that is no longer there. {@code
     * retryAfter} as for {@link #busy(Duration)}, or null.
     */
    public static Acquisition busy(Duration retryAfter, long holderToken) {
        if (holderToken < 0) {
            throw new IllegalArgumentException("holderToken must not be negative: " + holderToken);
        }
        return new Acquisition(false, 0, null, retryAfter, false, false, false, holderToken, false);
    }

    /**
     * Somebody else holds the lock, and the store keeps this run's claim to the next turn (see
     * {@link LockStore#tryAcquire}): the waiter should look again within {@code retryAfter} at the latest, and
     * soon after any wake-up, since once the holders have had their {@value LockStore#GRANTS_PAST_A_CLAIM} turns
     * the lock waits for this run alone.
     */
    public static Acquisition claimed(Duration retryAfter) {
        return new Acquisition(false, 0, null, retryAfter, false, false, true, -1, false);
    }

    /**
     * As {@link #claimed(Duration)}, and the store read the fencing token of the latest grant, {@code holderToken}
     * (not negative): a polling claimant that sees it change between two looks knows the lock is going round the
     * others' turns, which end with its own, and keeps looking soon rather than backing off as from a long hold.
     */
    public static Acquisition claimed(Duration retryAfter, long holderToken) {
        if (holderToken < 0) {
            throw new IllegalArgumentException("holderToken must not be negative: " + holderToken);
        }
        return new Acquisition(false, 0, null, retryAfter, false, false, true, holderToken, false);
    }

    /**
     * Nobody has the lock for sure, and the store asks to be asked again only after {@code delay}, whatever wake-ups
     * arrive meanwhile: Redlock after a split vote, where a random delay separates the contenders that would
     * otherwise split the next vote too.
     */
    public static Acquisition backOff(Duration delay) {
        return new Acquisition(false, 0, null, Objects.requireNonNull(delay, "delay"), false, true, false, -1, false);
    }

    /**
     * Somebody else holds the lock and the store has arranged to run the attempt's wake-up when it may have become
     * free (a watch on the waiter ahead); {@code retryAfter}, if not null, bounds the wait all the same.
     */
    public static Acquisition watched(Duration retryAfter) {
        return new Acquisition(false, 0, null, retryAfter, true, false, false, -1, false);
    }

    /**
     * Somebody else holds the lock, and this attempt waited for it in the store's own queue (a database row-lock
     * wait) until the wait it was given ran out: the waiter should attempt again at once, since every pause outside
     * the queue lets the waiters behind it, and the holder's own process, take the turns it waited for.
     */
    public static Acquisition queued() {
        return QUEUED;
    }

    /** Whether the attempt waited in the store's own queue until its wait ran out; see {@link #queued()}. */
    public boolean isQueued() {
        return queued;
    }

    /** Whether the lock was acquired. */
    public boolean isAcquired() {
        return acquired;
    }

    /** The fencing token of the new hold; only meaningful if {@link #isAcquired()}. */
    public long fencingToken() {
        return fencingToken;
    }

    /** How long the new hold is valid, if the store knows it better than the lease. */
    public Optional<Duration> validFor() {
        return Optional.ofNullable(validFor);
    }

    /** When a waiter should look again at the latest, if the store told it. */
    public Optional<Duration> retryAfter() {
        return Optional.ofNullable(retryAfter);
    }

    /** The fencing token of the latest grant as a busy answer read it, or -1 if the store did not read it. */
    public long holderToken() {
        return holderToken;
    }

    /** Whether the store asked not to be asked again before {@link #retryAfter()}. */
    public boolean isBackOff() {
        return backOff;
    }

    /** Whether the store keeps this run's claim to the next turn; see {@link #claimed}. */
    public boolean isClaimed() {
        return claimed;
    }

    /** Whether the store will run the attempt's wake-up itself. */
    public boolean isWatched() {
        return watched;
    }

    @Override
    public String toString() {
        if (acquired) {
            return "acquired(token=" + fencingToken + (validFor == null ? "" : ", validFor=" + validFor) + ")";
        }
        return (watched ? "watched" : backOff ? "backOff" : claimed ? "claimed" : queued ? "queued" : "busy")
                + "(retryAfter="
                + retryAfter + (holderToken < 0 ? "" : ", holderToken=" + holderToken) + ")";
    }
}
