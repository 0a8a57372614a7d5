package io.locksmith;

/**
 * Hears about holds that ended without their owner releasing them.
 *
 * <p>Called once per lost hold, on a Locksmith thread, never while Locksmith holds an internal lock. Keep it
 * short; it must not block.
 */
@FunctionalInterface
public interface LockListener {

    /** A listener that does nothing. */
    LockListener NONE = (lockName, reason) -> { };

    /**
     * A hold of {@code lockName} was lost: the owner no longer has the lock and may not know it yet.
     *
     * @param lockName the name of the lock
     * @param reason what happened, for logs (lease expired, renewal rejected, session expired, ...)
     */
    void onLost(String lockName, String reason);
}
