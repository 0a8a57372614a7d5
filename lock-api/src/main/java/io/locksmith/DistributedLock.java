package io.locksmith;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A {@link Lock} whose state lives in a shared store, so that threads of many processes can serialize a
 * critical section.
 *
 * <p>A hold taken through the {@link Lock} methods belongs to one thread of one {@link LockProvider}, exactly like
 * a {@code ReentrantLock}: another thread of the same provider is another owner and waits, and two providers are
 * two clients even inside one JVM. The holding thread may re-acquire; each acquisition needs one
 * {@link #unlock()}, and re-acquiring costs no round trip to the store. A hold taken by {@link #acquireAsync()}
 * belongs to its {@link LockHandle} instead, which any thread may close.
 *
 * <p>Holds taken by {@link #lock()}, {@link #lockInterruptibly()}, {@link #tryLock()} and
 * {@link #tryLock(long, TimeUnit)} carry the provider's lease, which the provider renews in the background
 * for as long as the hold lasts. Holds taken by {@link #tryLock(Duration, Duration)} carry an explicit lease
 * that is never renewed: the store frees the lock when it ends.
 *
 * <p>If the provider learns that a hold can no longer be guaranteed (its lease could not be renewed in time,
 * the store dropped it, a session expired) the hold is <em>lost</em>: {@link #isHeldByCurrentThread()} turns
 * false, the {@link LockListener} is told once, and {@link #fencingToken()} and {@link #unlock()} throw
 * {@link LockLostException}. Guard writes to other systems with {@link #fencingToken()}.
 *
 * <p>Store failures surface as {@link LockBackendException}; no method waits on the store longer than the
 * provider's operation timeout beyond the wait it was asked for.
 */
public interface DistributedLock extends Lock {

    /** The name this lock was obtained with. */
    String name();

    /**
     * Acquires the lock, waiting as long as it takes. Not interruptible: an interrupt while waiting is
     * remembered and the thread's interrupt status is set again when this method returns.
     *
     * @throws LockBackendException if the store cannot be reached or fails
     * @throws IllegalStateException if the provider is closed
     */
    @Override
    void lock();

    /**
     * Acquires the lock unless the thread is interrupted. Reacts to an interrupt promptly and never leaves a
     * hold behind, even when the store granted the lock at the moment of the interrupt.
     *
     * @throws InterruptedException if the thread is interrupted before or while waiting
     * @throws LockBackendException if the store cannot be reached or fails
     */
    @Override
    void lockInterruptibly() throws InterruptedException;

    /**
     * Makes one attempt to acquire the lock and never waits for another owner.
     *
     * @return true if the current thread now holds the lock
     * @throws LockBackendException if the store cannot be reached or fails
     */
    @Override
    boolean tryLock();

    /**
     * Acquires the lock if it becomes free within the given time; returns within {@code time} plus one
     * backend operation timeout.
     *
     * @return true if the current thread now holds the lock, false if the time elapsed first
     * @throws InterruptedException if the thread is interrupted while waiting
     * @throws IllegalArgumentException if {@code time} is negative
     * @throws NullPointerException if {@code unit} is null
     */
    @Override
    boolean tryLock(long time, TimeUnit unit) throws InterruptedException;

    /**
     * Acquires the lock with an explicit lease that is not renewed, waiting at most {@code wait}. The store
     * frees the lock when the lease ends even if this thread never unlocks; an {@link #unlock()} after that
     * throws {@link LockLostException}. Re-acquiring a lock the thread already holds keeps the existing hold
     * and its lease.
     *
     * @param wait how long to wait for the lock; zero makes one attempt
     * @param lease how long the hold lasts at most; must be positive
     * @return true if the current thread now holds the lock
     * @throws InterruptedException if the thread is interrupted while waiting
     * @throws IllegalArgumentException if {@code wait} is negative or {@code lease} is not positive
     * @throws NullPointerException if an argument is null
     */
    boolean tryLock(Duration wait, Duration lease) throws InterruptedException;

    /**
     * Releases one acquisition by the current thread; the last one releases the lock in the store.
     *
     * <p>If releasing in the store fails with {@link LockBackendException}, the hold stays with the thread and
     * {@code unlock()} may be called again: a retried release never fails because the first one went
     * through, and never frees another owner's hold.
     *
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     * @throws LockLostException if the hold was lost before this call; the thread no longer holds it
     * @throws LockBackendException if the store could not be told
     */
    @Override
    void unlock();

    /** Whether the current thread holds this lock and the hold is still guaranteed. No round trip. */
    boolean isHeldByCurrentThread();

    /** How many unreleased acquisitions the current thread has; zero if it does not hold the lock. */
    int getHoldCount();

    /**
     * Whether anyone (any thread of any client) holds the lock, as the store says now.
     *
     * @throws LockBackendException if the store cannot be reached or fails
     */
    boolean isLocked();

    /**
     * The fencing token of the current thread's hold: every fresh acquisition of a name gets a token strictly
     * greater than every earlier acquisition's; re-entry keeps the token. Pass it to the resource the lock
     * protects so that it can reject writes from a holder whose hold ended without it noticing.
     *
     * @throws LockLostException if the current thread's hold was lost
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     */
    long fencingToken();

    /**
     * Acquires the lock like {@link #lock()} and returns a handle whose {@link LockHandle#close()} releases
     * it, for try-with-resources. The hold stays the thread's (re-entry included): the handle must be closed by
     * the acquiring thread. For a handle that owns its hold, see {@link #acquireAsync()}.
     */
    LockHandle acquire();

    /**
     * Acquires the lock like {@link #tryLock(long, TimeUnit)} and returns a handle, or empty if the wait
     * elapsed first.
     *
     * @throws InterruptedException if the thread is interrupted while waiting
     */
    Optional<LockHandle> tryAcquire(Duration wait) throws InterruptedException;

    /**
     * Starts acquiring the lock for a new handle that owns its hold, and returns at once. No thread is blocked
     * while the lock is busy: the acquisition queues with this provider's threads for the name, and each attempt is
     * one short store call on a small executor of the provider's. The future completes with the handle once the
     * lock is held; the handle may be used and closed from any thread, exactly once, and is not reentrant (a
     * second acquisition by anyone, this thread included, waits for it).
     *
     * <p>Cancelling the future abandons the wait and never leaves a hold: a hold granted at the moment of the
     * cancellation is released. The future fails with {@link LockBackendException} if the store fails, and with
     * {@link IllegalStateException} if the provider closes while it waits. Waiting in JDBC session mode polls
     * the row lock rather than holding a connection in a database lock wait.
     */
    CompletableFuture<LockHandle> acquireAsync();

    /**
     * Like {@link #acquireAsync()}, giving up after {@code wait}: the future then fails with
     * {@link java.util.concurrent.TimeoutException}, as {@link CompletableFuture#orTimeout} does. A zero wait makes
     * one attempt.
     *
     * @throws IllegalArgumentException if {@code wait} is negative
     * @throws NullPointerException if {@code wait} is null
     */
    CompletableFuture<LockHandle> tryAcquireAsync(Duration wait);

    /**
     * Not supported: a distributed lock has no conditions that other processes could signal.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    Condition newCondition();
}
