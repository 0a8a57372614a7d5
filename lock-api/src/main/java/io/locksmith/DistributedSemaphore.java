package io.locksmith;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A counting semaphore shared by every process of a namespace, from {@link LockProvider#getSemaphore}: at most
 * {@link #permits()} {@link Permit}s are held at any instant, across all processes. Each permit is a hold of its
 * own, with its own lease and fencing token, renewed while its provider runs, released only through its handle, and
 * expiring when its owner dies.
 *
 * <pre>{@code
 * DistributedSemaphore exports = locks.getSemaphore("exports", 4);
 * try (Permit permit = exports.tryAcquire(Duration.ofSeconds(2))
 *         .orElseThrow(() -> new IllegalStateException("four exports are running"))) {
 *     runExport();
 * }
 * }</pre>
 *
 * <p>The permits are the locks {@code <name>#permit-0} to {@code <name>#permit-<permits - 1>}. The count is given
 * in code ({@link LockProvider#getSemaphore(String, int)}: every process must open the semaphore with the same
 * count) or kept in the store ({@link LockProvider#getSemaphore(String)}, changed by an operator with
 * {@link LockProvider#setSemaphorePermits}). Not reentrant: every acquisition takes permits of its own.
 */
public interface DistributedSemaphore {

    /** The semaphore's name. */
    String name();

    /**
     * How many permits the semaphore has: the count given in code, or the one kept in the store now (a round trip).
     *
     * @throws IllegalStateException if the count is kept in the store and the store has none
     * @throws LockBackendException if the store fails
     */
    int permits();

    /**
     * Waits for one permit, as long as it takes.
     *
     * @throws InterruptedException if the thread is interrupted while waiting; no permit is then held (one granted
     *     at the moment of the interrupt is given back in the background)
     * @throws LockBackendException if the store fails
     */
    Permit acquire() throws InterruptedException;

    /**
     * One permit, if one is free within {@code wait}; a zero wait makes one attempt per permit.
     *
     * @throws InterruptedException as {@link #acquire()}
     * @throws LockBackendException if the store fails
     * @throws IllegalArgumentException if {@code wait} is negative
     */
    Optional<Permit> tryAcquire(Duration wait) throws InterruptedException;

    /**
     * {@code count} permits together, or none: if they are not all had within {@code wait}, those taken are given
     * back and the result is empty. Never holds some while it waits for others, so two callers asking for more than
     * half of the permits each cannot block each other.
     *
     * @throws IllegalArgumentException if {@code count} is not between 1 and {@link #permits()} when the call
     *     starts, or {@code wait} is negative
     * @throws InterruptedException as {@link #acquire()}
     * @throws LockBackendException if the store fails; nothing is held then
     */
    Optional<List<Permit>> tryAcquire(int count, Duration wait) throws InterruptedException;

    /**
     * How many permits are free now: one store round trip per permit, and only a snapshot (others may take or give
     * back permits meanwhile).
     *
     * @throws LockBackendException if the store fails
     */
    int availablePermits();
}
