package io.locksmith.spi;

import io.locksmith.LockInfo;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;

/**
 * What a backend implements: how to acquire, release, renew and be woken in its store. Everything else
 * (reentrancy, waiting, local queuing, every lease and validity clock, renewal scheduling, loss handling,
 * backoff, timeouts) is done once for all backends by the provider {@link LockStores#newProvider} builds around a
 * store.
 *
 * <p><b>The store's own hold.</b> {@code H} is the store's record of one acquisition run: whatever it needs to
 * release or renew exactly what that run took (the key and owner id, the node it created, the connection that
 * holds a row lock). The machinery asks for one with {@link #newHold} before the run's first attempt, passes the
 * same object to every later call about the run ({@link #tryAcquire}, {@link #abandon}, {@link #release},
 * {@link #renew}, {@link #leaseEnded}) and keeps it with the hold; a store reports a loss with the object too
 * ({@link StoreEvents#holdLost}). Nothing is looked up again by name, so a store keeps no map from names to its
 * holds and no lease timer of its own. The object exists before the first attempt because an attempt whose
 * answer was lost may have been applied: the machinery then releases that object in the background.
 *
 * <p><b>Owner ids.</b> Each run has an owner id of its own, passed to {@link #newHold}: the provider's client id, a
 * dot and a hex number that grows with every run and is never used again ({@code 3f2a….1c}). So a call that
 * arrives late (a release retried after its answer was lost, an attempt the server ran after the client gave up
 * on it) can only ever act on the hold it was made for. Owner ids are at most 64 ASCII characters, letters,
 * digits and dots. Names arrive already checked against {@link io.locksmith.LockNames}; the store maps them
 * injectively to keys inside its namespace. The machinery guarantees that at most one exclusive run of a provider
 * holds or attempts a given name at a time (shared runs, {@link #newSharedHold}, are one per reading owner).
 *
 * <p><b>Failures.</b> A call that fails with {@link io.locksmith.LockBackendException} may still have been applied
 * (its answer was lost). After a failed {@link #tryAcquire} the machinery never uses that hold for another
 * attempt and releases it in the background; after a failed {@link #release} it retries the release in the
 * background until it is answered or the lease has ended. So every method must be idempotent for the same hold.
 * A store's message names what failed in the store's own terms (the node, the statement, the reply); the
 * machinery adds the lock name and the backend address once, in front.
 *
 * <p>Every method must return or throw {@link io.locksmith.LockBackendException} within the provider's operation
 * timeout, and must be safe to call from several threads at once.
 *
 * @param <H> the store's record of one acquisition run and, once acquired, of its hold
 */
public interface LockStore<H> extends AutoCloseable {

    /**
     * How many times a lock may still be granted to others after a waiting run has claimed the next turn; then
     * only the claimant may take it. See {@link #tryAcquire}.
     */
    int GRANTS_PAST_A_CLAIM = 8;

    /** Where the store is, without credentials, for messages: {@code redis://10.0.0.5:6379/0}. */
    String address();

    /** Called once before any other method, with the sink for losses the store detects on its own. */
    default void start(StoreEvents<H> events) {
    }

    /**
     * The store's record of a new acquisition run of {@code name} by {@code owner}; no I/O. The same object is
     * passed to every later call about the run.
     */
    H newHold(String name, String owner);

    /**
     * Whether this store keeps shared (read) holds, so that {@link #newSharedHold} works and the provider offers
     * {@link io.locksmith.LockProvider#getReadWriteLock read-write locks}. Default: false.
     */
    default boolean supportsSharedHolds() {
        return false;
    }

    /**
     * The store's record of a new run for a <em>shared</em> (read) hold of {@code name} by {@code owner}; no I/O.
     * Holds from {@link #newHold} are exclusive (write) holds of the same lock: a name is held by one exclusive
     * hold, or by any number of shared holds, never by both (but for a downgrade, below). Every other method takes
     * shared holds as it takes exclusive ones, with these differences:
     * <ul>
     * <li>{@link #tryAcquire} grants a shared hold when no exclusive hold is kept (other than {@code ownWrite})
     *     and no other run's live claim to the next turn was made by an exclusive run, so that new readers do not
     *     pass a waiting writer; it answers {@link Acquisition#acquired(long)} with a token at least that of the
     *     latest exclusive grant and below every later exclusive grant's: the latest exclusive grant's token itself
     *     (0 if none), or a value of the store's own order (a ZooKeeper node's creation zxid). Exclusive grants'
     *     tokens then also exceed every earlier shared grant's. A busy answer claims the next turn as for
     *     an exclusive run, and an exclusive attempt is busy while any shared hold is kept, its remaining lease
     *     being the longest of the shared holds'.</li>
     * <li>{@link #release} of the last shared hold wakes waiters as the release of an exclusive hold does.</li>
     * <li>{@link #isLocked}, {@link #inspect} and {@link #forceRelease} see and free holds of both kinds.</li>
     * </ul>
     *
     * @param ownWrite the caller's own exclusive hold of the same name, which does not keep this run out (a
     *     downgrade: the holder of the write lock takes the read lock), or null
     * @throws UnsupportedOperationException if the store keeps no shared holds (the default)
     */
    default H newSharedHold(String name, String owner, H ownWrite) {
        throw new UnsupportedOperationException(address() + " keeps no shared (read) holds");
    }

    /**
     * Makes one attempt to take the lock for {@code hold} with the given lease.
     *
     * <p><b>Turns across providers.</b> Within one provider the machinery queues its own threads fairly; across
     * providers a store that does not queue waiters itself (one that polls or publishes releases) keeps at most
     * one <em>claim</em> per lock, so that a provider whose threads hand the lock to each other cannot starve
     * another process's waiter:
     * <ul>
     * <li>An attempt answered busy with a {@code wakeUp} (the caller will wait) claims the next turn when no live
     *     claim exists, remembering the number of grants so far, or refreshes its own claim; either way it
     *     answers {@link Acquisition#claimed}. A claim lives for the claimant's {@code lease} from its last
     *     refresh, so a waiter that dies costs at most one lease, and only to providers that would otherwise take
     *     the lock past it.
     * <li>An attempt that finds the lock free takes it unless another run's live claim has seen
     *     {@link #GRANTS_PAST_A_CLAIM} grants since it was made; the claimant's own grant ends its claim.
     * <li>{@link #release} and {@link #abandon} of a run end its claim.
     * </ul>
     * Stores that queue waiters themselves (a ZooKeeper sequence, a database row lock) are first come, first
     * served already and keep no claims.
     *
     * @param wait how long the store itself may block waiting for the lock; zero for one attempt. Stores that
     *     do not queue waiters themselves ignore it and answer at once. A store that kept the attempt in its own
     *     queue until this wait ran out (a database lock wait) answers {@link Acquisition#queued()}, and the
     *     machinery attempts again at once instead of backing off outside the queue.
     * @param wakeUp null when the caller will not wait after a busy answer; otherwise a callback the store may
     *     arrange to run, on any thread and without blocking, when the lock may have become free (a watch on the
     *     waiter ahead, say), in which case it answers {@link Acquisition#watched}
     * @return {@link Acquisition#acquired(long)} with a fresh fencing token, or a busy answer
     */
    Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp);

    /**
     * Whether this store implements {@link #takeOver}, so that a provider hands a lock between its own runs in one
     * store call. Default: false, and the machinery releases the hold and the next run acquires, two calls.
     */
    default boolean takesOver() {
        return false;
    }

    /**
     * One attempt for {@code hold}, exactly as {@link #tryAcquire} with no store wait, that also counts the lock as
     * free where {@code previous} holds it: an exclusive hold of the same name and provider whose owner has
     * released it locally and handed it to this run. A grant replaces {@code previous} in the same atomic step, so
     * that the lock passes from one run to the next in one round trip and is never free in between; it obeys every
     * rule a grant obeys (a live claim that has let its grants pass, a FIFO queue, read holds), so a waiting
     * provider's turn comes as it would after a release. When the attempt does not grant, the store releases
     * {@code previous} as {@link #release} does (waking the lock's waiters) before it answers, and the answer is
     * that of the attempt. Only an exclusive {@code previous} that a grant of this provider's produced is passed.
     *
     * <p>If it throws, whether the attempt or the release of {@code previous} was applied is unknown: the machinery
     * then releases both in the background.
     *
     * @throws UnsupportedOperationException if {@link #takesOver} is false (the default)
     */
    default Acquisition takeOver(H previous, H hold, Duration lease, Runnable wakeUp) {
        throw new UnsupportedOperationException(address() + " does not hand locks over in one call");
    }

    /**
     * Releases {@code hold} if the store still keeps it, and ends the run's claim to a turn if it has one.
     *
     * @return true if it was held and is now free; false if it was not held (expired, deleted, or released by an
     *     earlier attempt), in which case nothing changed
     */
    boolean release(H hold);

    /**
     * Extends the lease of every hold in {@code holds} that the store still keeps, in as few round trips as the
     * store allows (the machinery passes at most {@link #renewBatchSize()} holds).
     *
     * @return the holds the store no longer keeps, and how long the renewed ones are valid
     */
    RenewResult<H> renew(List<H> holds, Duration lease);

    /** The most holds {@link #renew} takes in one call. */
    default int renewBatchSize() {
        return 100;
    }

    /**
     * The machinery's lease clock ended {@code hold} (an explicit lease ran out, renewals failed until the lease
     * was over, or a release retried in the background gave up when the lease ended), and the hold is reported
     * lost. A store that does not end holds on its own (a ZooKeeper node, a row lock held by an open transaction)
     * frees it here; stores whose server expires leases need nothing. Called before another thread of the
     * provider may attempt the lock, on the scheduler thread or on the caller's thread that noticed the end: it
     * must return within the operation timeout, and, like every method, be idempotent. Default: nothing to do.
     */
    default void leaseEnded(H hold) {
    }

    /**
     * Tells a store that queues waiters, or keeps claims to the next turn, that {@code hold}'s run stopped waiting
     * without acquiring, so it can drop its place in the queue or its claim. Default: nothing to do.
     */
    default void abandon(H hold) {
    }

    /** Whether anybody holds {@code name} now. */
    boolean isLocked(String name);

    /**
     * Asks to be told when {@code name} may have become free, for waiters whose attempt was answered busy without
     * a watch. Stores that can push such events (pub/sub) return a subscription; the default returns null and the
     * machinery polls with backoff.
     *
     * @param onRelease called, on any thread, each time the lock may have become free; must not block
     */
    default Subscription subscribe(String name, Runnable onRelease) {
        return null;
    }

    /**
     * What the store knows about {@code name} now, for {@link io.locksmith.LockProvider#inspect}.
     *
     * @throws UnsupportedOperationException if the store cannot tell (the default)
     */
    default LockInfo inspect(String name) {
        throw new UnsupportedOperationException(address() + " cannot inspect locks");
    }

    /**
     * Frees {@code name} whoever holds it, for {@link io.locksmith.LockProvider#forceRelease}, and wakes its
     * waiters like a release.
     *
     * @return true if it was held
     * @throws UnsupportedOperationException if the store cannot do it (the default)
     */
    default boolean forceRelease(String name) {
        throw new UnsupportedOperationException(address() + " cannot force a release");
    }

    /**
     * The permit count kept in the store for semaphore {@code name} by {@link #setSemaphorePermits}, for
     * {@link io.locksmith.LockProvider#getSemaphore(String)}; empty if none was ever set. A value of the store's
     * own, apart from every lock (no lock name reaches it), never expiring and never counted as a hold.
     *
     * @throws UnsupportedOperationException if the store keeps no permit counts (the default)
     */
    default OptionalInt semaphorePermits(String name) {
        throw new UnsupportedOperationException(address() + " keeps no semaphore permit counts");
    }

    /**
     * Stores {@code permits} (1 to {@value io.locksmith.internal.SlotSemaphore#MAX_PERMITS}, checked by the
     * caller) as the permit count of semaphore {@code name}, replacing any, for
     * {@link io.locksmith.LockProvider#setSemaphorePermits}. Durable as the store's fencing counters are.
     *
     * @throws UnsupportedOperationException if the store keeps no permit counts (the default)
     */
    default void setSemaphorePermits(String name, int permits) {
        throw new UnsupportedOperationException(address() + " keeps no semaphore permit counts");
    }

    /** Releases the store's connections and threads; holds are released before this is called. */
    @Override
    void close();

    /** A registration for wake-ups; closing it stops them. */
    @FunctionalInterface
    interface Subscription extends AutoCloseable {
        @Override
        void close();
    }
}
