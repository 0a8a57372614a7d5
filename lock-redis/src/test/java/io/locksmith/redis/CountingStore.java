package io.locksmith.redis;

import io.locksmith.LockInfo;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.StoreEvents;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/** A store that forwards to a real one and counts the machinery's calls, to check behaviour by counts. */
class CountingStore implements LockStore {
    final LockStore delegate;
    /** Acquisition attempts begun; an attempt counts here before the store has answered it. */
    final AtomicInteger acquireAttempts = new AtomicInteger();
    /**
     * Acquisition attempts the store answered "busy". A test that waits for a waiter to be waiting counts these:
     * a begun attempt may still be in flight, and a release made meanwhile lets it acquire without a wake-up.
     */
    final AtomicInteger busyAnswers = new AtomicInteger();
    final AtomicInteger subscriptions = new AtomicInteger();
    final AtomicInteger renewCalls = new AtomicInteger();

    CountingStore(LockStore delegate) {
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
        acquireAttempts.incrementAndGet();
        Acquisition answer = delegate.tryAcquire(name, owner, lease, wait);
        if (!answer.isAcquired()) {
            busyAnswers.incrementAndGet();
        }
        return answer;
    }

    @Override
    public boolean release(String name, String owner) {
        return delegate.release(name, owner);
    }

    @Override
    public Set<String> renew(Map<String, String> holds, Duration lease) {
        renewCalls.incrementAndGet();
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
    public LockInfo inspect(String name) {
        return delegate.inspect(name);
    }

    @Override
    public boolean forceRelease(String name) {
        return delegate.forceRelease(name);
    }

    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        subscriptions.incrementAndGet();
        return delegate.subscribe(name, onRelease);
    }

    @Override
    public void close() {
        delegate.close();
    }
}
