package io.locksmith.redlock;

import io.locksmith.redis.internal.RedisNodes;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.StoreEvents;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/** A node store that passes every call on; tests override the calls they want to slow down or observe. */
class ForwardingStore implements RedisNodes.NodeStore {

    final RedisNodes.NodeStore delegate;

    ForwardingStore(RedisNodes.NodeStore delegate) {
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
    public Acquisition tryAcquire(String name, RedisNodes.Attempt attempt, Duration lease) {
        return delegate.tryAcquire(name, attempt, lease);
    }

    @Override
    public boolean release(String name, String owner) {
        return delegate.release(name, owner);
    }

    @Override
    public boolean release(String name, RedisNodes.Attempt attempt) {
        return delegate.release(name, attempt);
    }

    @Override
    public Set<String> renew(Map<String, String> holds, Duration lease) {
        return delegate.renew(holds, lease);
    }

    @Override
    public Set<String> renewAttempts(Map<String, RedisNodes.Attempt> holds, Duration lease) {
        return delegate.renewAttempts(holds, lease);
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
