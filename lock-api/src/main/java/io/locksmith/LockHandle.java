package io.locksmith;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * One acquisition of a {@link DistributedLock}, released by {@link #close()}; made for try-with-resources:
 *
 * <pre>{@code
 * try (LockHandle held = lock.acquire()) {
 *     store.write(order, held.fencingToken());
 * }
 * }</pre>
 *
 * <p>A handle from {@link DistributedLock#acquire()} or {@link DistributedLock#tryAcquire(Duration)} stands for
 * one acquisition by the calling thread, which keeps owning the hold (re-entry included) and must close it. A
 * handle from {@link DistributedLock#acquireAsync()} or {@link DistributedLock#tryAcquireAsync(Duration)} owns its
 * hold itself: no thread owns it, any thread may use and close the handle, and it is never re-entered.
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
     * Whether the hold is still held and, as far as this client knows, kept by the store: false once the handle
     * is closed or the hold was lost. No round trip.
     */
    boolean isValid();

    /**
     * A future completed with the loss if this hold is lost (its lease could not be renewed in time, the store
     * dropped it, a session expired), and cancelled if the hold ends otherwise (closed, or its provider closed).
     * Completing or cancelling the returned future affects nobody else.
     */
    CompletableFuture<LockLostException> whenLost();

    /**
     * Releases this acquisition exactly once; later calls do nothing. If the store could not be told
     * ({@link LockBackendException}), the lock is no longer held by this handle, the provider retries the release
     * in the background, and closing again retries it now.
     *
     * @throws LockLostException if the hold was lost before it could be released
     * @throws IllegalMonitorStateException for a thread's handle, if called from a thread that does not hold the
     *     lock
     * @throws LockBackendException if the store could not be told
     */
    @Override
    void close();
}
