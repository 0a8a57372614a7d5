package io.locksmith.internal;

import io.locksmith.DistributedLock;
import io.locksmith.LockHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

/**
 * A lock of a {@link StoreLockProvider}: a name, a side (the exclusive lock, which is also the write lock of a
 * read-write lock, or the shared read lock) and a provider; all state lives in the provider.
 */
final class StoreLock implements DistributedLock {

    private final StoreLockProvider<?> provider;
    private final String name;
    /** Whether this is the read lock of a read-write lock: its holds are shared. */
    final boolean shared;
    private final AcquireRequest lock;
    private final AcquireRequest lockInterruptibly;
    private final AcquireRequest tryLock;

    StoreLock(StoreLockProvider<?> provider, String name, boolean shared) {
        this.provider = provider;
        this.name = name;
        this.shared = shared;
        long lease = provider.options().leaseTime().toNanos();
        boolean renews = provider.options().renewLeases();
        this.lock = AcquireRequest.untilAcquired(false, lease, renews);
        this.lockInterruptibly = AcquireRequest.untilAcquired(true, lease, renews);
        this.tryLock = AcquireRequest.once(lease, renews);
    }

    @Override
    public String name() {
        return name;
    }

    StoreLockProvider<?> provider() {
        return provider;
    }

    @Override
    public void lock() {
        try {
            provider.acquire(name, shared, lock);
        } catch (InterruptedException impossible) {
            throw new AssertionError("uninterruptible acquire was interrupted", impossible);
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        provider.acquire(name, shared, lockInterruptibly);
    }

    @Override
    public boolean tryLock() {
        try {
            return provider.acquire(name, shared, tryLock);
        } catch (InterruptedException impossible) {
            throw new AssertionError("uninterruptible acquire was interrupted", impossible);
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        Objects.requireNonNull(unit, "unit");
        if (time < 0) {
            throw new IllegalArgumentException("wait time must not be negative, got " + time + " " + unit);
        }
        return provider.acquire(name, shared, AcquireRequest.within(unit.toNanos(time), lock.leaseNanos,
                lock.renewable));
    }

    @Override
    public boolean tryLock(Duration wait, Duration lease) throws InterruptedException {
        Objects.requireNonNull(wait, "wait");
        Objects.requireNonNull(lease, "lease");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative, got " + wait);
        }
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive, got " + lease);
        }
        return provider.acquire(name, shared, AcquireRequest.within(saturatedNanos(wait), saturatedNanos(lease),
                false));
    }

    @Override
    public void unlock() {
        provider.release(name, shared);
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return provider.heldByCurrentThread(name, shared) != null;
    }

    @Override
    public int getHoldCount() {
        Hold hold = provider.heldByCurrentThread(name, shared);
        return hold == null ? 0 : hold.count;
    }

    @Override
    public boolean isLocked() {
        return provider.isLocked(name);
    }

    @Override
    public long fencingToken() {
        return provider.fencingToken(name, shared);
    }

    @Override
    public LockHandle acquire() {
        lock();
        return new ThreadHandle();
    }

    @Override
    public Optional<LockHandle> tryAcquire(Duration wait) throws InterruptedException {
        Objects.requireNonNull(wait, "wait");
        if (!tryLock(saturatedNanos(wait), TimeUnit.NANOSECONDS)) {
            return Optional.empty();
        }
        return Optional.of(new ThreadHandle());
    }

    @Override
    public CompletableFuture<LockHandle> acquireAsync() {
        return provider.acquireAsync(this, AcquireRequest.async(-1, lock.leaseNanos, lock.renewable));
    }

    @Override
    public CompletableFuture<LockHandle> tryAcquireAsync(Duration wait) {
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative, got " + wait);
        }
        long nanos = saturatedNanos(wait);
        return provider.acquireAsync(this, AcquireRequest.async(nanos == Long.MAX_VALUE ? -1 : nanos,
                lock.leaseNanos, lock.renewable));
    }

    /**
     * {@link #tryAcquireAsync} waiting on the calling thread, interruptibly: a hold its handle owns (any thread may
     * close it; not reentrant), without the asynchronous path's executor hops.
     *
     * @return the handle, or empty if the lock stayed busy for {@code wait}
     */
    Optional<LockHandle> tryAcquireOwned(Duration wait) throws InterruptedException {
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative, got " + wait);
        }
        return Optional.ofNullable(provider.acquireOwned(this, AcquireRequest.within(saturatedNanos(wait),
                lock.leaseNanos, lock.renewable)));
    }

    /**
     * Not supported.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("Lock '" + name + "' on " + provider.backend()
                + ": a distributed lock has no conditions; use the store's own messaging to signal other processes");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoreLock other && other.provider == provider && other.name.equals(name)
                && other.shared == shared;
    }

    @Override
    public int hashCode() {
        return (System.identityHashCode(provider) * 31 + name.hashCode()) * 31 + (shared ? 1 : 0);
    }

    @Override
    public String toString() {
        return "DistributedLock{'" + name + "'" + (shared ? " (read)" : "") + " on " + provider.backend() + '}';
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }

    /** One acquisition by the current thread, which keeps owning the hold and must close the handle. */
    private final class ThreadHandle extends HoldHandle {

        ThreadHandle() {
            super(StoreLock.this, StoreLock.this.provider);
            Hold held = provider.heldByCurrentThread(name, shared);
            if (held == null) {
                StoreLock.this.fencingToken(); // the lease ended at once: throws LockLostException
                throw new IllegalStateException("Lock '" + name + "' is not held after acquiring it");
            }
            this.hold = held;
        }

        @Override
        public long fencingToken() {
            checkNotClosed();
            StoreLock.this.fencingToken(); // throws if the hold was lost
            return hold.token;
        }

        @Override
        void release() {
            unlock();
        }
    }
}
