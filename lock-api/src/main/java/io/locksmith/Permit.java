package io.locksmith;

import java.util.concurrent.CompletableFuture;

/**
 * One permit of a {@link DistributedSemaphore}, released by {@link #close()}; made for try-with-resources. A permit
 * is a hold of one of the semaphore's permit locks, owned by this handle (not by a thread): any thread may use and
 * close it, exactly once. Its lease is renewed like any hold's while the provider runs, and it expires when its
 * process dies, after one lease.
 */
public interface Permit extends AutoCloseable {

    /** The semaphore this permit belongs to. */
    DistributedSemaphore semaphore();

    /**
     * The permit lock that holds this permit, {@code <semaphore name>#permit-<i>}: inspect or force-release it as
     * any lock ({@link LockProvider#inspect}, the {@code locksmith} command).
     */
    String lockName();

    /** An id of this permit, unique for the semaphore: its lock's name and its fencing token. */
    String id();

    /**
     * The fencing token of this permit's hold: it grows with every grant of the same permit lock, not across the
     * semaphore's permits.
     *
     * @throws LockLostException if the permit was lost
     */
    long fencingToken();

    /** Whether the permit is still held and, as far as this client knows, kept by the store. No round trip. */
    boolean isValid();

    /**
     * A future completed with the loss if this permit's hold is lost, and cancelled if it ends otherwise (closed,
     * or its provider closed).
     */
    CompletableFuture<LockLostException> whenLost();

    /**
     * Gives the permit back, exactly once; later calls do nothing.
     *
     * @throws LockLostException if the permit was lost before it could be given back
     * @throws LockBackendException if the store could not be told (the provider retries in the background)
     */
    @Override
    void close();
}
