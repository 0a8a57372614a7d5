package io.locksmith;

/**
 * One acquisition of a {@link DistributedLock}, released by {@link #close()}; made for try-with-resources:
 *
 * <pre>{@code
 * try (LockHandle held = lock.acquire()) {
 *     store.write(order, held.fencingToken());
 * }
 * }</pre>
 */
public interface LockHandle extends AutoCloseable {

    /** The lock this handle holds. */
    DistributedLock lock();

    /**
     * The fencing token of this hold.
     *
     * @throws LockLostException if the hold was lost
     */
    long fencingToken();

    /**
     * Releases this acquisition exactly once; later calls do nothing.
     *
     * @throws LockLostException if the hold was lost before it could be released
     * @throws IllegalMonitorStateException if called from a thread that does not hold the lock
     */
    @Override
    void close();
}
