package io.locksmith;

/**
 * Told when a {@link Leadership} makes this process the leader and when that ends. Both methods run on the
 * leadership's own thread, one call at a time, and in order: every {@link #elected} is followed by exactly one
 * {@link #revoked} for the same epoch before the next {@link #elected}.
 *
 * <p>{@link #revoked} is called <em>before</em> the lock is given back when this process steps down (relinquish,
 * close), so nobody else can be elected while the process still acts as leader. After a loss the lock is already
 * gone: another process may lead from that moment, which is what the epoch is for (fence the leader's writes with
 * it, and let the resource reject a smaller one).
 */
public interface LeadershipListener {

    /**
     * This process is the leader from now on, in {@code epoch}: the fencing token of the hold that makes it the
     * leader, greater than that of every earlier leader of the same name. If this method throws, the process steps
     * down at once ({@link #revoked} with {@link Reason#RELINQUISHED}) and contends again.
     *
     * <p>Return promptly and do the leader's work on threads of your own (unlike Curator's
     * {@code LeaderSelectorListener.takeLeadership}, leadership does not last while this method runs): until it
     * returns, {@link #revoked} cannot be called, even for a loss, and {@link Leadership#relinquish()} and
     * {@link Leadership#close()} from other threads wait. {@link Leadership#isLeader()} turns false at a loss all
     * the same.
     */
    void elected(long epoch);

    /** The leadership of {@code epoch} has ended, for {@code reason}; stop acting as leader. */
    void revoked(long epoch, Reason reason);

    /** Why a leadership ended. */
    enum Reason {
        /**
         * This process stepped down: {@link Leadership#relinquish()}, or {@link #elected} threw. It contends again
         * after a pause.
         */
        RELINQUISHED,
        /**
         * The hold was lost (its lease could not be renewed in time, the store dropped it, a session expired);
         * another process may already lead. This process contends again at once.
         */
        LOST,
        /** {@link Leadership#close()}, or the provider was closed; this process no longer contends. */
        CLOSED
    }
}
