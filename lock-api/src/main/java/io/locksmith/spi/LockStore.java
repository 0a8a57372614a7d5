package io.locksmith.spi;

import io.locksmith.LockInfo;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * What a backend implements: how to acquire, release, renew and be woken in its store. Everything else
 * (reentrancy, waiting, local queuing, lease renewal scheduling, loss handling, backoff, timeouts) is done
 * once for all backends by the provider {@link LockStores#newProvider} builds around a store.
 *
 * <p>The machinery guarantees that at most one thread of a provider holds or attempts a given name at a time.
 * Each acquisition run (one {@code lock()} or {@code tryLock} call, with all its attempts) has an owner id of its
 * own: the provider's client id, a dot and a hex number that grows with every run and is never used again
 * ({@code 3f2a….1c}), so a store may tell a later run of the same provider from an earlier one. So an
 * owner id names one hold, and a call that arrives late (a release retried after its answer was lost, an attempt
 * the server ran after the client gave up on it) can only ever act on the hold it was made for, never on a newer
 * hold of the same provider. Owner ids are at most 64 ASCII characters, letters, digits and dots. Names arrive
 * already checked against {@link io.locksmith.LockNames}; the store maps them injectively to keys inside its
 * namespace.
 *
 * <p>A call that fails with {@link io.locksmith.LockBackendException} may still have been applied (its answer was
 * lost). The machinery treats its outcome as unknown: after a failed {@link #tryAcquire} it never uses that owner
 * id for another hold and releases it in the background; after a failed {@link #release} it retries the release
 * in the background until it is answered or the lease has ended. So every method must be idempotent for the
 * same owner id.
 *
 * <p>Every method must return or throw {@link io.locksmith.LockBackendException} within the provider's
 * operation timeout, and must be safe to call from several threads at once.
 */
public interface LockStore extends AutoCloseable {

    /** Where the store is, without credentials, for messages: {@code redis://10.0.0.5:6379/0}. */
    String address();

    /** Called once before any other method, with the sink for losses the store detects on its own. */
    default void start(StoreEvents events) {
    }

    /**
     * Makes one attempt to take {@code name} for {@code owner} with the given lease.
     *
     * @param wait how long the store itself may block waiting for the lock; zero for one attempt. Stores that
     *     do not queue waiters themselves ignore it and answer at once.
     * @return {@link Acquisition#acquired(long)} with a fresh fencing token, or {@link Acquisition#busy}
     */
    Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait);

    /**
     * Releases {@code name} if {@code owner} holds it.
     *
     * @return true if it was held by {@code owner} and is now free; false if {@code owner} did not hold it
     *     (expired, deleted, or released by an earlier attempt), in which case nothing changed
     */
    boolean release(String name, String owner);

    /**
     * Extends the lease of every hold in {@code holds} (lock name to the owner id of this provider's hold of it)
     * that its owner still holds, in as few round trips as the store allows (the machinery passes at most
     * {@link #renewBatchSize()} holds, in a map that iterates in a stable order).
     *
     * @return the names whose owner no longer holds them
     */
    Set<String> renew(Map<String, String> holds, Duration lease);

    /** The most names {@link #renew} takes in one call. */
    default int renewBatchSize() {
        return 100;
    }

    /** Whether anybody holds {@code name} now. */
    boolean isLocked(String name);

    /**
     * Asks to be told when {@code name} may have become free. Stores that can push such events (pub/sub,
     * watches) return a subscription; the default returns null and the machinery polls with backoff.
     *
     * @param onRelease called, on any thread, each time the lock may have become free; must not block
     */
    default Subscription subscribe(String name, Runnable onRelease) {
        return null;
    }

    /**
     * Tells a store that queues waiters that {@code owner} stopped waiting for {@code name} without acquiring
     * it, so it can drop its place in the queue. Default: nothing to do.
     */
    default void abandon(String name, String owner) {
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
