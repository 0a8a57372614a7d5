package io.locksmith.internal;

import java.util.concurrent.ScheduledFuture;

/**
 * One thread's hold of one lock through one provider: its reentrancy count, fencing token and validity.
 *
 * <p>The count is touched only by the owner thread. The state moves once, from HELD to RELEASED or LOST, under
 * this object's monitor; whoever moves it cleans up. A release in flight ({@link #releasing}) defers the
 * clean-up of a concurrent loss to the releasing thread, so that no other thread of the provider can take the
 * lock in the store while the owner's release is still on the wire (both would use the same owner id).
 */
final class Hold {

    enum State { HELD, RELEASED, LOST }

    final LockEntry entry;
    final Thread thread;
    /** The store's own record of this hold ({@code H} of the provider's store), used by no other hold. */
    final Object storeHold;
    final long token;
    final boolean renewable;
    final long leaseNanos;

    /** Follows this hold for the provider's observer; null when there is none. Set before the hold is published. */
    ObservedAcquisition watch;
    /** Unreleased acquisitions; owner thread only. */
    int count = 1;
    /** Until when (time source nanos) the store is known to keep this hold; advanced by renewals. */
    volatile long validUntil;

    // guarded by this
    State state = State.HELD;
    String lossReason;
    boolean releasing;
    boolean cleanupDeferred;
    boolean recorded;
    ScheduledFuture<?> expiry;

    Hold(LockEntry entry, Thread thread, Object storeHold, long token, boolean renewable, long leaseNanos,
            long validUntil) {
        this.entry = entry;
        this.thread = thread;
        this.storeHold = storeHold;
        this.token = token;
        this.renewable = renewable;
        this.leaseNanos = leaseNanos;
        this.validUntil = validUntil;
    }

    synchronized boolean isHeld() {
        return state == State.HELD;
    }

    /** Whether the hold is held and, as far as this client knows, still kept by the store at {@code now}. */
    boolean isValid(long now) {
        return isHeld() && now - validUntil < 0;
    }

    synchronized String lossReason() {
        return lossReason;
    }

    void extendTo(long newValidUntil) {
        synchronized (this) {
            if (state == State.HELD && newValidUntil - validUntil > 0) {
                validUntil = newValidUntil;
            }
        }
    }

    @Override
    public String toString() {
        return "Hold{" + entry.name + ", thread=" + thread.getName() + ", token=" + token + '}';
    }
}
