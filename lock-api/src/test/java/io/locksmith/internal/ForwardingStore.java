package io.locksmith.internal;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.StoreEvents;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/** A store that forwards to a real one; tests override a method to observe or disturb it. */
class ForwardingStore implements LockStore {
    final LockStore delegate;

    ForwardingStore(LockStore delegate) {
        this.delegate = delegate;
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
    public void close() {
        delegate.close();
    }
}
