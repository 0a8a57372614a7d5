package io.locksmith;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Several locks of one provider held together, from {@link LockProvider#acquireAll}, released together by
 * {@link #close()}; made for try-with-resources:
 *
 * <pre>{@code
 * try (MultiLockHandle held = locks.acquireAll(List.of("account-17", "account-4"), Duration.ofSeconds(2))
 *         .orElseThrow(() -> new IllegalStateException("accounts busy"))) {
 *     transfer(from, to, held.fencingToken("account-17"), held.fencingToken("account-4"));
 * }
 * }</pre>
 *
 * <p>Like a handle from {@link DistributedLock#acquire()}, its holds are the calling thread's (a lock the thread
 * already held is re-entered, and needs this handle's close as well as its own unlock): close it on that thread.
 */
public interface MultiLockHandle extends AutoCloseable {

    /** The handle of each lock, in the order they were taken: the names' natural ({@link String}) order. */
    List<LockHandle> handles();

    /**
     * The fencing token of the hold of {@code name}.
     *
     * @throws IllegalArgumentException if {@code name} is not one of the names
     * @throws LockLostException if that hold was lost
     * @throws IllegalStateException if this handle was closed
     */
    long fencingToken(String name);

    /** Whether every hold is still held and, as far as this client knows, kept by the store. No round trip. */
    boolean isValid();

    /**
     * A future completed with the first loss of any of the holds, and cancelled if all end otherwise (closed, or
     * the provider closed). Completing or cancelling it affects nobody else.
     */
    CompletableFuture<LockLostException> whenLost();

    /**
     * Releases every hold, in the reverse of the order they were taken, exactly once; later calls do nothing.
     * Every hold is released even if releasing one fails; the first failure is thrown, the others added to it as
     * suppressed.
     *
     * @throws LockLostException if a hold was lost before it could be released
     * @throws IllegalMonitorStateException if called from another thread than the one that took the locks
     * @throws LockBackendException if the store could not be told (the provider retries in the background)
     */
    @Override
    void close();
}
