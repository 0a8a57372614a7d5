package io.locksmith.internal;

import io.locksmith.LockLostException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

/**
 * One owner's hold of one lock through one provider: its reentrancy count, fencing token and validity. The owner
 * is a thread (the {@code Lock} methods) or a {@link OwnedHandle handle} (asynchronous acquisition), which
 * any thread may release.
 *
 * <p>The count is touched only by the owner thread; a handle's hold is never re-entered. The state moves once, from HELD to RELEASED or LOST, under
 * this object's monitor; whoever moves it cleans up. A release in flight ({@link #releasing}) defers the
 * clean-up of a concurrent loss to the releasing thread, so that no other thread of the provider can take the
 * lock in the store while the owner's release is still on the wire (both would use the same owner id).
 */
final class Hold {

    enum State { HELD, RELEASED, LOST }

    final LockEntry entry;
    /** The owning thread, or the handle that owns the hold. */
    final Object owner;
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
    /** Told of a loss; made on first demand, cancelled when the hold ends otherwise. */
    private CompletableFuture<LockLostException> lossFuture;
    /** A handle-owned hold's release whose outcome is unknown, retried by closing the handle again. */
    PendingReleases.Pending<?> unconfirmed;

    Hold(LockEntry entry, Object owner, Object storeHold, long token, boolean renewable, long leaseNanos,
            long validUntil) {
        this.entry = entry;
        this.owner = owner;
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

    /** Whether a thread owns this hold, as opposed to a handle. */
    boolean ownedByThread() {
        return owner instanceof Thread;
    }

    /** The owner, for messages: the thread's name or the handle. */
    String ownerName() {
        return owner instanceof Thread t ? "thread '" + t.getName() + "'" : "a handle";
    }

    /**
     * A future completed with the loss if this hold is lost, and cancelled if it ends otherwise (released, or
     * given up when the provider closed).
     */
    synchronized CompletableFuture<LockLostException> lossFuture(String address) {
        if (lossFuture == null) {
            lossFuture = new CompletableFuture<>();
            if (state == State.LOST) {
                lossFuture.complete(new LockLostException(lossMessage(address)));
            } else if (state == State.RELEASED) {
                lossFuture.cancel(false);
            }
        }
        return lossFuture;
    }

    /** Completes or cancels the loss future, if anyone asked for it, after the state moved. */
    void settleLossFuture(String address) {
        CompletableFuture<LockLostException> future;
        boolean lost;
        synchronized (this) {
            future = lossFuture;
            lost = state == State.LOST;
        }
        if (future == null) {
            return;
        }
        if (lost) {
            future.complete(new LockLostException(lossMessage(address)));
        } else {
            future.cancel(false);
        }
    }

    /** What a loss exception says: the lock, the owner, the token and the reason. */
    synchronized String lossMessage(String address) {
        return "Lock '" + entry.name + "' on " + address + " was lost by " + ownerName() + " (token " + token + "): "
                + lossReason;
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
        return "Hold{" + entry.name + ", " + ownerName() + ", token=" + token + '}';
    }
}
