package io.locksmith;

import java.util.OptionalLong;

/**
 * One process's candidacy for leadership of a name, from {@link LockProvider#leadership}: while it is open, a
 * thread of its own contends for the lock of that name, and the process that holds it is the leader. At most one
 * process leads at a time, and each leader has an epoch, the fencing token of its hold, greater than every earlier
 * leader's. The {@link LeadershipListener} is told of each election and of its end; after a loss or a
 * {@link #relinquish()}, the candidacy contends again, until {@link #close()}.
 *
 * <pre>{@code
 * Leadership leadership = locks.leadership("nightly-report", new LeadershipListener() {
 *     public void elected(long epoch) { scheduler.start(epoch); }
 *     public void revoked(long epoch, Reason reason) { scheduler.stop(); }
 * });
 * ...
 * leadership.close(); // steps down if leading, and stops contending
 * }</pre>
 *
 * <p>Threads: the listener is called on the candidacy's thread ({@code locksmith-leadership-<name>}). Every method
 * here may be called from any thread, the listener's included.
 */
public interface Leadership extends AutoCloseable {

    /** The name whose lock decides the leadership. */
    String name();

    /**
     * Whether this process leads now: true from just before {@link LeadershipListener#elected} is called until the
     * hold ends, and false at once, before {@link LeadershipListener#revoked} is called, when the client learns
     * of a loss. No round trip.
     */
    boolean isLeader();

    /** The epoch of the current leadership while {@link #isLeader()}; empty otherwise. */
    OptionalLong epoch();

    /**
     * Steps down if this process leads: {@link LeadershipListener#revoked} with
     * {@link LeadershipListener.Reason#RELINQUISHED}, then the lock is given back, and the candidacy contends again
     * after a pause of the provider's operation timeout, so that another process can take over. Returns when the lock has
     * been given back (at once if called from the listener; the step-down then follows its return). Does nothing
     * if this process does not lead.
     *
     * <p>Like {@link DistributedLock#unlock()}, it says whether the term held to its end: if the give-back finds
     * the hold already gone in the store (a pause past the lease that the watchdog had no time to notice), the
     * listener was told {@code RELINQUISHED}, but another process may have led meanwhile, and this throws. If the
     * loss was noticed first, the listener was told {@code LOST} and this returns.
     *
     * @throws LockLostException if the hold had been lost before it was given back (not from the listener's thread)
     * @throws LockBackendException if the store could not be told; the provider retries the release
     */
    void relinquish();

    /**
     * Stops contending: if this process leads, {@link LeadershipListener#revoked} with
     * {@link LeadershipListener.Reason#CLOSED} is called and the lock is given back. Returns when the candidacy's
     * thread has ended (at once if called from the listener; the step-down then follows its return). Later calls
     * do nothing.
     *
     * @throws LockLostException if this process led, and its hold had been lost before it was given back (see
     *     {@link #relinquish()})
     * @throws LockBackendException if the store could not be told; the provider retries the release
     */
    @Override
    void close();
}
