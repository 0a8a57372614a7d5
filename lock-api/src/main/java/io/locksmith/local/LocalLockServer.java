package io.locksmith.local;

import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockOptions;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An in-JVM lock store behind {@code local://name} URIs: the reference backend of the contract and a test
 * double for applications.
 *
 * <p>It behaves like a remote store: leases really expire (on this server's own clock, {@link System#nanoTime}),
 * fencing counters only grow, and it can be taken down ({@link #kill()}), paused ({@link #pause()}) and brought
 * back so an application can test how it copes with an unavailable store. Every provider opened on
 * {@code local://name} in this JVM talks to the same server.
 */
public final class LocalLockServer {

    private static final Map<String, LocalLockServer> SERVERS = new ConcurrentHashMap<>();

    private final String name;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition resumed = lock.newCondition();
    private final Map<String, Hold> holds = new HashMap<>();
    /** The shared (read) holds of each key, by owner; a key without any has no map. */
    private final Map<String, Map<String, Hold>> readers = new HashMap<>();
    private final Map<String, Long> counters = new HashMap<>();
    /** The semaphores' permit counts; like the counters, they survive {@link #kill()}. */
    private final Map<String, Integer> permitCounts = new HashMap<>();
    private final Map<String, Claim> claims = new HashMap<>();
    private final Map<String, List<Runnable>> subscribers = new ConcurrentHashMap<>();
    private final AtomicLong operations = new AtomicLong();
    private boolean down;
    private boolean paused;

    private LocalLockServer(String name) {
        this.name = name;
    }

    /** The server for {@code local://name}, created on first use. */
    public static LocalLockServer named(String name) {
        Objects.requireNonNull(name, "name");
        return SERVERS.computeIfAbsent(name, LocalLockServer::new);
    }

    /** The name of this server, as in {@code local://name}. */
    public String name() {
        return name;
    }

    /** Takes the server down: calls fail at once, and every hold is forgotten. Fencing counters survive. */
    public void kill() {
        lock.lock();
        try {
            down = true;
            holds.clear();
            readers.clear();
            claims.clear();
            paused = false;
            resumed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Brings a killed server back, empty but for its fencing counters. */
    public void start() {
        lock.lock();
        try {
            down = false;
        } finally {
            lock.unlock();
        }
    }

    /** Freezes the server: calls wait until {@link #resume()} or until their operation timeout. */
    public void pause() {
        lock.lock();
        try {
            paused = true;
        } finally {
            lock.unlock();
        }
    }

    /** Lets a paused server answer again. */
    public void resume() {
        lock.lock();
        try {
            paused = false;
            resumed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Frees {@code name} in {@code namespace} whoever holds it, as an operator would. */
    public boolean forceRelease(String namespace, String name) {
        String key = key(namespace, name);
        boolean released;
        lock.lock();
        try {
            released = holds.remove(key) != null | readers.remove(key) != null;
        } finally {
            lock.unlock();
        }
        publish(key);
        return released;
    }

    /** The keys ({@code namespace + '\u0000' + name}) held now and not expired. */
    public Set<String> heldKeys() {
        lock.lock();
        try {
            long now = System.nanoTime();
            holds.values().removeIf(h -> h.expired(now));
            Set<String> keys = new TreeSet<>(holds.keySet());
            for (String key : List.copyOf(readers.keySet())) {
                if (readersLeft(key, now) >= 0) {
                    keys.add(key);
                }
            }
            return keys;
        } finally {
            lock.unlock();
        }
    }

    /** The names held now in {@code namespace}. */
    public Set<String> heldNames(String namespace) {
        String prefix = namespace + '\u0000';
        Set<String> names = new TreeSet<>();
        for (String key : heldKeys()) {
            if (key.startsWith(prefix)) {
                names.add(key.substring(prefix.length()));
            }
        }
        return names;
    }

    /**
     * A new store client of this server for a provider built with {@code options}: wrap it with
     * {@link io.locksmith.spi.LockStores#newProvider} (or decorate it first, to test the machinery).
     */
    public LockStore<?> newStore(LockOptions options) {
        return new LocalLockStore(this, Objects.requireNonNull(options, "options"));
    }

    /** How many operations this server has served, for round-trip accounting in tests. */
    public long operationCount() {
        return operations.get();
    }

    @Override
    public String toString() {
        return "local://" + name;
    }

    static String key(String namespace, String name) {
        // NUL cannot occur in a namespace or a lock name, so the pair maps to the key injectively.
        return namespace + '\u0000' + name;
    }

    // ---- operations of LocalLockStore; each counts as one round trip ----

    /**
     * One attempt, with the claims of {@link io.locksmith.spi.LockStore#tryAcquire}: a busy answer claims the next
     * turn for {@code owner} if {@code claim} and nobody else has. A shared attempt ({@code shared}) is granted
     * beside other shared holds, and beside the exclusive hold of {@code ownWrite} (a downgrade), but not past an
     * exclusive run's claim; an exclusive attempt is busy while any shared hold lives.
     */
    Acquisition acquire(String key, String owner, boolean shared, String ownWrite, long leaseNanos, boolean claim,
            Duration timeout) {
        return acquire(key, owner, shared, ownWrite, leaseNanos, claim, null, timeout);
    }

    /**
     * {@link #acquire} of an exclusive hold that also counts the lock free where {@code previous}, an earlier run of
     * the same provider, holds it, and replaces that hold when it grants ({@link LockStore#takeOver}). A grant while
     * no claim lives wakes the subscribers, whose waiters heard of no release and must look again to claim; a
     * refusal leaves {@code previous} as it was.
     */
    Acquisition takeOver(String key, String previous, String owner, long leaseNanos, boolean claim,
            Duration timeout) {
        return acquire(key, owner, false, null, leaseNanos, claim, previous, timeout);
    }

    private Acquisition acquire(String key, String owner, boolean shared, String ownWrite, long leaseNanos,
            boolean claim, String previous, Duration timeout) {
        boolean wake = false;
        enter(timeout);
        try {
            long now = System.nanoTime();
            Hold current = holds.get(key);
            if (current != null && (current.expired(now) || current.owner.equals(previous))) {
                current = null;
            }
            long issued = counters.getOrDefault(key, 0L);
            Claim turn = claims.get(key);
            if (turn != null && turn.expired(now)) {
                claims.remove(key);
                turn = null;
            }
            boolean downgrade = shared && current != null && current.owner.equals(ownWrite);
            boolean otherClaim = turn != null && !turn.owner.equals(owner);
            long readersLeft = shared ? -1 : readersLeft(key, now);
            long left;
            if (current != null && !current.owner.equals(owner) && !downgrade) {
                left = Math.max(0, current.expiresAt - now);
            } else if (readersLeft >= 0) {
                left = readersLeft; // an exclusive attempt waits for the last reader
            } else if (otherClaim && !downgrade && (shared ? turn.exclusive
                    : issued - turn.issued >= LockStore.GRANTS_PAST_A_CLAIM)) {
                left = turn.expiresAt - now; // the claimant's turn
            } else {
                if (turn != null && turn.owner.equals(owner)) {
                    claims.remove(key);
                }
                if (shared) {
                    readers.computeIfAbsent(key, k -> new HashMap<>()).put(owner, new Hold(owner, issued,
                            now + leaseNanos));
                    return Acquisition.acquired(issued);
                }
                long token = issued + 1;
                counters.put(key, token);
                Hold replaced = holds.put(key, new Hold(owner, token, now + leaseNanos));
                wake = previous != null && replaced != null && replaced.owner.equals(previous) && turn == null;
                return Acquisition.acquired(token);
            }
            if (claim && (turn == null || turn.owner.equals(owner))) {
                claims.put(key, new Claim(owner, !shared, turn == null ? issued : turn.issued, now + leaseNanos));
                return Acquisition.claimed(Duration.ofNanos(left));
            }
            return Acquisition.busy(Duration.ofNanos(left));
        } finally {
            lock.unlock();
            if (wake) {
                publish(key);
            }
        }
    }

    /** Ends {@code owner}'s claim to the next turn of {@code key}, if it has one. */
    void abandon(String key, String owner, Duration timeout) {
        enter(timeout);
        try {
            Claim turn = claims.get(key);
            if (turn != null && turn.owner.equals(owner)) {
                claims.remove(key);
            }
        } finally {
            lock.unlock();
        }
    }

    boolean release(String key, String owner, Duration timeout) {
        boolean released;
        boolean wakes = true;
        enter(timeout);
        try {
            long now = System.nanoTime();
            Hold current = holds.get(key);
            released = current != null && current.owner.equals(owner) && !current.expired(now);
            if (released) {
                holds.remove(key);
            } else if (readers.containsKey(key)) {
                Hold read = readers.get(key).remove(owner);
                released = read != null && !read.expired(now);
                // the last reader wakes the waiting writers; an earlier one would wake them for nothing
                wakes = released && readersLeft(key, now) < 0;
            }
            if (!released) {
                Claim turn = claims.get(key);
                if (turn != null && turn.owner.equals(owner)) {
                    claims.remove(key); // a run that holds nothing gives up its claim
                }
            }
        } finally {
            lock.unlock();
        }
        if (released && wakes) {
            publish(key);
        }
        return released;
    }

    /**
     * The longest remaining lease of the live shared holds of {@code key}, or -1 if none lives; drops the expired
     * ones, and the key's map once empty. Under the server lock.
     */
    private long readersLeft(String key, long now) {
        Map<String, Hold> shared = readers.get(key);
        if (shared == null) {
            return -1;
        }
        shared.values().removeIf(h -> h.expired(now));
        if (shared.isEmpty()) {
            readers.remove(key);
            return -1;
        }
        long left = 0;
        for (Hold read : shared.values()) {
            left = Math.max(left, read.expiresAt - now);
        }
        return left;
    }

    /** Renews the hold of {@code key} by {@code owner}; returns false if it is no longer held so. */
    boolean renew(String key, String owner, long leaseNanos, Duration timeout) {
        enter(timeout);
        try {
            long now = System.nanoTime();
            Hold current = holds.get(key);
            if (current == null || !current.owner.equals(owner)) {
                Map<String, Hold> shared = readers.get(key);
                current = shared == null ? null : shared.get(owner);
            }
            if (current != null && current.owner.equals(owner) && !current.expired(now)) {
                current.expiresAt = now + leaseNanos;
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    boolean isLocked(String key, Duration timeout) {
        enter(timeout);
        try {
            long now = System.nanoTime();
            Hold current = holds.get(key);
            return current != null && !current.expired(now) || readersLeft(key, now) >= 0;
        } finally {
            lock.unlock();
        }
    }

    LockInfo inspect(String key, String name, Duration timeout) {
        enter(timeout);
        try {
            long now = System.nanoTime();
            Hold current = holds.get(key);
            if ((current == null || current.expired(now)) && readersLeft(key, now) >= 0) {
                Map<String, Hold> shared = readers.get(key);
                Instant since = shared.values().stream().map(h -> h.acquiredAt).min(Instant::compareTo).orElseThrow();
                return LockInfo.held(name, "readers " + String.join(", ", new TreeSet<>(shared.keySet())), since,
                        Duration.ofNanos(readersLeft(key, now)), counters.getOrDefault(key, 0L));
            }
            if (current == null || current.expired(now)) {
                return LockInfo.free(name, counters.get(key));
            }
            return LockInfo.held(name, current.owner, current.acquiredAt, Duration.ofNanos(current.expiresAt - now),
                    current.token);
        } finally {
            lock.unlock();
        }
    }

    OptionalInt semaphorePermits(String key, Duration timeout) {
        enter(timeout);
        try {
            Integer permits = permitCounts.get(key);
            return permits == null ? OptionalInt.empty() : OptionalInt.of(permits);
        } finally {
            lock.unlock();
        }
    }

    void setSemaphorePermits(String key, int permits, Duration timeout) {
        enter(timeout);
        try {
            permitCounts.put(key, permits);
        } finally {
            lock.unlock();
        }
    }

    boolean forceRelease(String key, Duration timeout) {
        boolean released;
        enter(timeout);
        try {
            long now = System.nanoTime();
            Hold current = holds.remove(key);
            boolean written = current != null && !current.expired(now);
            released = readersLeft(key, now) >= 0 || written;
            readers.remove(key);
        } finally {
            lock.unlock();
        }
        publish(key);
        return released;
    }

    Runnable subscribe(String key, Runnable listener) {
        // add inside compute: an unsubscribe that empties and drops the list at the same moment must not leave
        // this listener in a list nobody publishes to any more
        subscribers.compute(key, (k, list) -> {
            List<Runnable> listeners = list != null ? list : new CopyOnWriteArrayList<>();
            listeners.add(listener);
            return listeners;
        });
        return () -> subscribers.computeIfPresent(key, (k, list) -> {
            list.remove(listener);
            return list.isEmpty() ? null : list;
        });
    }

    private void publish(String key) {
        List<Runnable> listeners = subscribers.get(key);
        if (listeners != null) {
            listeners.forEach(Runnable::run);
        }
    }

    /** Locks the server for one operation, honouring down and paused states; the caller unlocks. */
    private void enter(Duration timeout) {
        long start = System.nanoTime();
        long remaining = timeout.toNanos();
        try {
            if (!lock.tryLock(remaining, TimeUnit.NANOSECONDS)) {
                throw timedOut(timeout, start);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockBackendException(this + " - interrupted while waiting for the server", e);
        }
        boolean entered = false;
        try {
            while (paused && !down) {
                remaining = timeout.toNanos() - (System.nanoTime() - start);
                if (remaining <= 0) {
                    throw timedOut(timeout, start);
                }
                resumed.awaitNanos(remaining);
            }
            if (down) {
                throw new LockBackendException(this + " - server is down (connection refused)");
            }
            operations.incrementAndGet();
            entered = true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockBackendException(this + " - interrupted while waiting for the server", e);
        } finally {
            if (!entered) {
                lock.unlock();
            }
        }
    }

    private LockBackendException timedOut(Duration timeout, long start) {
        return new LockBackendException(this + " - no answer within the operation timeout of " + timeout.toMillis()
                + " ms (waited " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms)");
    }

    /**
     * A waiting run's claim to the next turn: who, whether it waits for an exclusive hold (then readers do not pass
     * it), the tokens issued when it claimed, and when it lapses.
     */
    private record Claim(String owner, boolean exclusive, long issued, long expiresAt) {
        boolean expired(long now) {
            return now - expiresAt >= 0;
        }
    }

    private static final class Hold {
        final String owner;
        final long token;
        final Instant acquiredAt = Instant.now();
        long expiresAt;

        Hold(String owner, long token, long expiresAt) {
            this.owner = owner;
            this.token = token;
            this.expiresAt = expiresAt;
        }

        boolean expired(long now) {
            return now - expiresAt >= 0;
        }
    }
}
