package io.locksmith.spi;

import io.locksmith.LockInfo;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * A {@link LockStore} that passes every call to another store. Extend it for a
 * {@link io.locksmith.LockOptions.Builder#storeWrapper store wrapper} that observes, counts or disturbs some calls
 * and forwards the rest: override only what you change.
 *
 * @param <H> the wrapped store's hold type
 */
public class ForwardingLockStore<H> implements LockStore<H> {

    /** The store every call goes to. */
    protected final LockStore<H> delegate;

    public ForwardingLockStore(LockStore<H> delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    @Override
    public String address() {
        return delegate.address();
    }

    @Override
    public void start(StoreEvents<H> events) {
        delegate.start(events);
    }

    @Override
    public H newHold(String name, String owner) {
        return delegate.newHold(name, owner);
    }

    @Override
    public boolean supportsSharedHolds() {
        return delegate.supportsSharedHolds();
    }

    @Override
    public H newSharedHold(String name, String owner, H ownWrite) {
        return delegate.newSharedHold(name, owner, ownWrite);
    }

    @Override
    public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
        return delegate.tryAcquire(hold, lease, wait, wakeUp);
    }

    @Override
    public boolean takesOver() {
        return delegate.takesOver();
    }

    @Override
    public Acquisition takeOver(H previous, H hold, Duration lease, Runnable wakeUp) {
        return delegate.takeOver(previous, hold, lease, wakeUp);
    }

    @Override
    public boolean release(H hold) {
        return delegate.release(hold);
    }

    @Override
    public RenewResult<H> renew(List<H> holds, Duration lease) {
        return delegate.renew(holds, lease);
    }

    @Override
    public int renewBatchSize() {
        return delegate.renewBatchSize();
    }

    @Override
    public void leaseEnded(H hold) {
        delegate.leaseEnded(hold);
    }

    @Override
    public void abandon(H hold) {
        delegate.abandon(hold);
    }

    @Override
    public boolean isLocked(String name) {
        return delegate.isLocked(name);
    }

    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        return delegate.subscribe(name, onRelease);
    }

    @Override
    public LockInfo inspect(String name) {
        return delegate.inspect(name);
    }

    @Override
    public boolean forceRelease(String name) {
        return delegate.forceRelease(name);
    }

    @Override
    public OptionalInt semaphorePermits(String name) {
        return delegate.semaphorePermits(name);
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        delegate.setSemaphorePermits(name, permits);
    }

    @Override
    public void close() {
        delegate.close();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + '{' + delegate + '}';
    }
}
