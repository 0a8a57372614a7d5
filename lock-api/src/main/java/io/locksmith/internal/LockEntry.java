package io.locksmith.internal;

import io.locksmith.spi.LockStore;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A provider's local state for one lock name, alive while some thread holds, waits for, or has not yet
 * heard about the loss of that lock.
 *
 * <p>The FIFO {@link #gate} admits one owner of the provider (a thread, or a handle being acquired
 * asynchronously) at a time to the store: the holder keeps it until it releases, so owners of one JVM queue here
 * and only the head of the queue talks to the store. {@link #signal} (a thread) or {@link #asyncWaiter} wakes
 * that head when the store says the lock may be free.
 *
 * <p>A read hold has an entry of its own per owner (the thread, or the handle), keyed by the name and the owner,
 * so that readers of one provider do not queue behind each other; each of them is a run of its own in the store.
 */
final class LockEntry {

    /** The key of this entry in the provider's map: the name, or for a read hold the name and its owner. */
    final String key;
    /** The lock's name, as the store knows it. */
    final String name;
    /** Whether this entry's holds are shared (read) holds: one entry per owner, so its gate is the owner's own. */
    final boolean shared;
    final Gate gate = new Gate();
    final Semaphore signal = new Semaphore(0);
    /** The asynchronous acquisition inside the gate waiting for the store, or null: wake-ups go to it too. */
    volatile Runnable asyncWaiter;
    /** Threads waiting, holding, or owning an unreported loss; guarded by the provider's entry map. */
    int refs;
    /** The current hold, or null. */
    volatile Hold hold;
    /** Lost thread-owned holds not yet reported to their thread by unlock(); at most one per thread. */
    final Map<Thread, Hold> lost = new ConcurrentHashMap<>(2);
    /**
     * Releases whose outcome is unknown, by the thread that released, until that thread calls unlock() again or
     * acquires the lock again; at most one per thread. Each holds a reference on the entry, like a lost hold.
     */
    final Map<Thread, PendingReleases.Pending<?>> unconfirmed = new ConcurrentHashMap<>(2);

    /**
     * The store hold of the last release, when its owner handed the lock to the gate's next owner instead of
     * releasing it in the store ({@link Gate#handTo}): the next owner's first attempt replaces it with its own
     * grant ({@link LockStore#takeOver}), and an owner that leaves the gate without an attempt releases it. Null
     * otherwise.
     */
    private final AtomicReference<Handed> handed = new AtomicReference<>();

    /** A store hold handed to the gate's next owner, and when its lease ends (the provider's clock). */
    record Handed(Object storeHold, long validUntil) {
    }

    /** Runs {@link #wake}; handed to the store as a waiting attempt's wake-up. */
    final Runnable waker = this::wake;

    // guarded by this
    private LockStore.Subscription subscription;
    private boolean subscribed;

    LockEntry(String key, String name, boolean shared) {
        this.key = key;
        this.name = name;
        this.shared = shared;
    }

    /** Leaves {@code hold} to the gate's next owner; called under the gate's lock, before it is handed over. */
    void hand(Handed hold) {
        handed.set(hold);
    }

    /** Takes the hold handed to this gate owner, or null; whoever takes it replaces or releases it. */
    Handed takeHanded() {
        return handed.get() == null ? null : handed.getAndSet(null);
    }

    /** Wakes the waiting head; extra wake-ups collapse into one. */
    void wake() {
        Runnable async = asyncWaiter;
        if (async != null) {
            async.run();
        }
        if (signal.availablePermits() == 0) {
            signal.release();
        }
    }

    /**
     * Subscribes to the store's wake-ups for this name unless already subscribed; the store is called outside this
     * object's monitor, so no thread waits on it for store I/O.
     *
     * @return whether the store pushes wake-ups (false: the waiter polls)
     */
    boolean subscribe(LockStore<?> store) {
        synchronized (this) {
            if (subscribed) {
                return subscription != null;
            }
            subscribed = true;
        }
        LockStore.Subscription made = store.subscribe(name, waker);
        boolean kept;
        synchronized (this) {
            // an unsubscribe() that ran meanwhile cancelled this subscription before it existed
            kept = subscribed && subscription == null;
            if (kept) {
                subscription = made;
            }
        }
        if (!kept && made != null) {
            made.close();
        }
        return made != null;
    }

    synchronized boolean isSubscribed() {
        return subscribed;
    }

    /** Ends the subscription, if any; the store is called outside this object's monitor. */
    void unsubscribe() {
        LockStore.Subscription current;
        synchronized (this) {
            current = subscription;
            subscription = null;
            subscribed = false;
        }
        if (current != null) {
            current.close();
        }
    }
}
