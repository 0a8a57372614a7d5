package io.locksmith.redlock;

import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/** A node store that passes every call on; tests override the calls they want to slow down or observe. */
class ForwardingStore implements RedisNodeStore {

    final RedisNodeStore delegate;

    ForwardingStore(RedisNodeStore delegate) {
        this.delegate = delegate;
    }

    @Override
    public String address() {
        return delegate.address();
    }

    @Override
    public String permitRecord(String name) {
        return delegate.permitRecord(name);
    }

    @Override
    public void setPermitRecord(String name, String record) {
        delegate.setPermitRecord(name, record);
    }

    @Override
    public RedisNodeStore.Hold newHold(String name, String owner) {
        return delegate.newHold(name, owner);
    }

    @Override
    public RedisNodeStore.Hold newSharedHold(String name, String owner, RedisNodeStore.Hold ownWrite) {
        return delegate.newSharedHold(name, owner, ownWrite);
    }

    @Override
    public Acquisition tryAcquire(RedisNodeStore.Attempt attempt, Duration lease) {
        return delegate.tryAcquire(attempt, lease);
    }

    @Override
    public boolean release(RedisNodeStore.Attempt attempt) {
        return delegate.release(attempt);
    }

    @Override
    public Set<RedisNodeStore.Attempt> renewAttempts(List<RedisNodeStore.Attempt> attempts, Duration lease) {
        return delegate.renewAttempts(attempts, lease);
    }

    @Override
    public boolean isLocked(String name) {
        return delegate.isLocked(name);
    }

    @Override
    public LockStore.Subscription subscribe(String name, Runnable onRelease) {
        return delegate.subscribe(name, onRelease);
    }

    @Override
    public void waitingAs(Runnable onRelease, String owner) {
        delegate.waitingAs(onRelease, owner);
    }

    @Override
    public void loadScripts() {
        delegate.loadScripts();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
