package io.locksmith.internal;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedSemaphore;
import io.locksmith.LockBackendException;
import io.locksmith.LockHandle;
import io.locksmith.LockLostException;
import io.locksmith.LockNames;
import io.locksmith.LockProvider;
import io.locksmith.Permit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;

/**
 * {@link LockProvider#getSemaphore}: {@code permits} permit locks, {@code <name>#permit-<i>}; a permit is a hold of
 * one of them owned by its handle ({@link DistributedLock#tryAcquireAsync}), so at most {@code permits} are held at
 * once, each with the lock's lease, renewal, loss reporting and fencing. Taking permits tries the permit locks once
 * each from a random one (so callers spread over them), and gives back what it took unless it got all it asked
 * for; while none is free it waits on one permit lock at a time (woken by the store where the backend can) for a
 * slice that grows from the provider's minimum to its maximum backoff, then looks at all of them again. Built on the
 * public lock API, so every backend has it. Unsupported internal API.
 */
public final class SlotSemaphore implements DistributedSemaphore {

    /** Between a semaphore's name and a permit lock's number. */
    public static final String PERMIT_SEPARATOR = "#permit-";
    /** The most permits a semaphore may have: {@link #availablePermits()} costs a round trip per permit. */
    public static final int MAX_PERMITS = 1024;

    private final LockProvider provider;
    private final String name;
    /** The permit count given in code, or 0 where the store keeps it ({@link LockProvider#getSemaphore(String)}). */
    private final int fixedPermits;
    private final long minSliceNanos;
    private final long maxSliceNanos;
    /** The permit locks 0 … n-1 opened so far, grown as the count is seen to grow. */
    private volatile List<DistributedLock> locks = List.of();

    private SlotSemaphore(LockProvider provider, String name, int fixedPermits) {
        this.provider = provider;
        this.name = name;
        this.fixedPermits = fixedPermits;
        this.minSliceNanos = Math.max(1, provider.options().minBackoff().toNanos());
        this.maxSliceNanos = Math.max(minSliceNanos, provider.options().maxBackoff().toNanos());
    }

    /** See {@link LockProvider#getSemaphore(String, int)}. */
    public static DistributedSemaphore open(LockProvider provider, String name, int permits) {
        checkPermits(provider, name, permits);
        SlotSemaphore semaphore = new SlotSemaphore(provider, name, permits);
        semaphore.locks(permits);
        return semaphore;
    }

    /** See {@link LockProvider#getSemaphore(String)}. */
    public static DistributedSemaphore openStored(LockProvider provider, String name) {
        LockNames.check(name);
        SlotSemaphore semaphore = new SlotSemaphore(provider, name, 0);
        semaphore.locks(semaphore.permits());
        return semaphore;
    }

    /**
     * Checks a permit count for semaphore {@code name}: 1 to {@link #MAX_PERMITS}, and room in the name for the
     * last permit lock's suffix.
     */
    public static void checkPermits(LockProvider provider, String name, int permits) {
        LockNames.check(name);
        if (permits < 1 || permits > MAX_PERMITS) {
            throw new IllegalArgumentException("a semaphore has 1 to " + MAX_PERMITS + " permits, not " + permits);
        }
        String suffix = PERMIT_SEPARATOR + (permits - 1);
        try {
            LockNames.check(name + suffix);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("semaphore name '" + name + "' leaves no room for its permit "
                    + "locks' names ('" + suffix + "' appended): " + e.getMessage(), e);
        }
    }

    /** The permit locks 0 … {@code count}-1, opening those not opened yet. */
    private List<DistributedLock> locks(int count) {
        List<DistributedLock> known = locks;
        if (known.size() >= count) {
            return known.subList(0, count);
        }
        synchronized (this) {
            List<DistributedLock> grown = new ArrayList<>(locks);
            for (int i = grown.size(); i < count; i++) {
                String lockName = name + PERMIT_SEPARATOR + i;
                try {
                    grown.add(provider.getLock(lockName));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("semaphore name '" + name + "' leaves no room for its permit "
                            + "locks' names ('" + PERMIT_SEPARATOR + i + "' appended): " + e.getMessage(), e);
                }
            }
            locks = List.copyOf(grown);
            return locks.subList(0, count);
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int permits() {
        if (fixedPermits > 0) {
            return fixedPermits;
        }
        return provider.semaphorePermits(name).orElseThrow(() -> new IllegalStateException("semaphore '" + name
                + "' has no permit count in the store of " + provider.backend() + ": set one first (LockProvider"
                + ".setSemaphorePermits, or 'locksmith semaphore --set'), or give the count in code with "
                + "getSemaphore(name, permits)"));
    }

    @Override
    public Permit acquire() throws InterruptedException {
        return take(1, -1).get(0);
    }

    @Override
    public Optional<Permit> tryAcquire(Duration wait) throws InterruptedException {
        return tryAcquire(1, wait).map(permits -> permits.get(0));
    }

    @Override
    public Optional<List<Permit>> tryAcquire(int count, Duration wait) throws InterruptedException {
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative: " + wait);
        }
        return Optional.ofNullable(take(count, Math.min(wait.toNanos(), Long.MAX_VALUE / 4)));
    }

    /**
     * {@code count} permits, or null if {@code waitNanos} (negative: for ever) passed first. A count kept in the
     * store is read again before each look at the permits, so a waiter sees a raised count.
     */
    private List<Permit> take(int count, long waitNanos) throws InterruptedException {
        long deadline = System.nanoTime() + Math.max(0, waitNanos);
        int permits = permits();
        if (count < 1 || count > permits) {
            throw new IllegalArgumentException("semaphore '" + name + "' has " + permits
                    + (permits == 1 ? " permit" : " permits") + "; cannot take " + count);
        }
        long slice = minSliceNanos;
        while (true) {
            List<DistributedLock> locks = locks(permits);
            List<Permit> taken = new ArrayList<>(count);
            if (count <= permits && sweep(locks, taken, count, -1)) {
                return Collections.unmodifiableList(taken);
            }
            long remaining = waitNanos < 0 ? slice : deadline - System.nanoTime();
            if (remaining <= 0) {
                return null;
            }
            int index = ThreadLocalRandom.current().nextInt(locks.size());
            Permit first = attempt(locks, index, Duration.ofNanos(Math.min(slice, remaining)), taken);
            if (first != null) {
                taken.add(first);
                if (count == 1 || count <= permits && sweep(locks, taken, count, index)) {
                    return Collections.unmodifiableList(taken);
                }
                giveBack(taken, null);
            }
            slice = Math.min(slice * 2, maxSliceNanos);
            if (fixedPermits == 0) {
                permits = permits(); // lowered below count meanwhile: wait on, it may be raised again
            }
        }
    }

    /**
     * Tries each permit lock but {@code skip} once, from a random one, until {@code taken} has {@code count}
     * permits; if it does not, gives them all back and returns false.
     */
    private boolean sweep(List<DistributedLock> locks, List<Permit> taken, int count, int skip)
            throws InterruptedException {
        int start = ThreadLocalRandom.current().nextInt(locks.size());
        for (int i = 0; i < locks.size() && taken.size() < count; i++) {
            int index = (start + i) % locks.size();
            if (index != skip) {
                Permit permit = attempt(locks, index, Duration.ZERO, taken);
                if (permit != null) {
                    taken.add(permit);
                }
            }
        }
        if (taken.size() == count) {
            return true;
        }
        giveBack(taken, null);
        return false;
    }

    /**
     * One acquisition of permit lock {@code index} waiting up to {@code wait}: the permit, or null if it stayed
     * busy. On an interrupt or a store failure, gives back {@code taken} and throws.
     */
    private Permit attempt(List<DistributedLock> locks, int index, Duration wait, List<Permit> taken)
            throws InterruptedException {
        DistributedLock lock = locks.get(index);
        if (lock instanceof StoreLock storeLock) {
            try {
                return storeLock.tryAcquireOwned(wait).map(h -> new SlotPermit(this, lock.name(), h)).orElse(null);
            } catch (InterruptedException | RuntimeException e) {
                giveBack(taken, e);
                throw e;
            }
        }
        // a lock of another LockProvider implementation (a decorator, say): its handle-owned holds come async
        CompletableFuture<LockHandle> pending = lock.tryAcquireAsync(wait);
        try {
            return new SlotPermit(this, lock.name(), pending.get());
        } catch (InterruptedException e) {
            pending.cancel(false); // a hold granted at this moment is given back by the provider
            giveBack(taken, e);
            throw e;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof TimeoutException) {
                return null;
            }
            RuntimeException failure = cause instanceof RuntimeException runtime ? runtime
                    : new LockBackendException("taking permit lock '" + lock.name() + "' failed", cause);
            giveBack(taken, failure);
            throw failure;
        }
    }

    /** Closes every permit of {@code taken}, each even if another failed; failures go to {@code cause}. */
    private static void giveBack(List<Permit> taken, Throwable cause) {
        for (Permit permit : taken) {
            try {
                permit.close();
            } catch (RuntimeException e) {
                if (cause != null) {
                    cause.addSuppressed(e);
                } // else: lost, or retried by the provider in the background; nothing is held either way
            }
        }
        taken.clear();
    }

    @Override
    public int availablePermits() {
        int free = 0;
        for (DistributedLock lock : locks(permits())) {
            if (!lock.isLocked()) {
                free++;
            }
        }
        return free;
    }

    @Override
    public String toString() {
        return "DistributedSemaphore{'" + name + "', " + (fixedPermits > 0 ? "permits=" + fixedPermits
                : "permits kept in the store") + '}';
    }

    /** A permit: a handle-owned hold of one permit lock. */
    private static final class SlotPermit implements Permit {
        private final SlotSemaphore semaphore;
        private final String lockName;
        private final LockHandle handle;
        private final String id;

        SlotPermit(SlotSemaphore semaphore, String lockName, LockHandle handle) {
            this.semaphore = semaphore;
            this.lockName = lockName;
            this.handle = handle;
            long token;
            try {
                token = handle.fencingToken();
            } catch (LockLostException lostAtOnce) {
                token = -1;
            }
            this.id = lockName + "@" + token;
        }

        @Override
        public DistributedSemaphore semaphore() {
            return semaphore;
        }

        @Override
        public String lockName() {
            return lockName;
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public long fencingToken() {
            return handle.fencingToken();
        }

        @Override
        public boolean isValid() {
            return handle.isValid();
        }

        @Override
        public CompletableFuture<LockLostException> whenLost() {
            return handle.whenLost();
        }

        @Override
        public void close() {
            handle.close();
        }

        @Override
        public String toString() {
            return "Permit{" + id + (handle.isValid() ? "" : ", ended") + '}';
        }
    }
}
