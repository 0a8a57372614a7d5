package io.locksmith.spi;

import io.locksmith.LockInfo;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A {@link LockStore} that passes every call to another store. Extend it for a
 * {@link io.locksmith.LockOptions.Builder#storeWrapper store wrapper} that observes, counts or disturbs some calls
 * and forwards the rest: override only what you change.
 */
public class ForwardingLockStore implements LockStore {

    /** The store every call goes to. */
    protected final LockStore delegate;

    public ForwardingLockStore(LockStore delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    @Override
    public String address() {
        return delegate.address();
    }

    @Override
    public void start(StoreEvents events) {
        delegate.start(events);
    }

    @Override
    public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
        return delegate.tryAcquire(name, owner, lease, wait);
    }

    @Override
    public boolean release(String name, String owner) {
        return delegate.release(name, owner);
    }

    @Override
    public Set<String> renew(Map<String, String> holds, Duration lease) {
        return delegate.renew(holds, lease);
    }

    @Override
    public int renewBatchSize() {
        return delegate.renewBatchSize();
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
    public void abandon(String name, String owner) {
        delegate.abandon(name, owner);
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
    public void close() {
        delegate.close();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + '{' + delegate + '}';
    }
}
