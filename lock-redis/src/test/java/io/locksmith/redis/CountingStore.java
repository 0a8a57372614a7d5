package io.locksmith.redis;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/** A store that forwards to a real one and counts the machinery's calls, to check behaviour by counts. */
class CountingStore extends ForwardingLockStore {
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
        super(delegate);
    }

    @Override
    public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
        acquireAttempts.incrementAndGet();
        Acquisition answer = super.tryAcquire(name, owner, lease, wait);
        if (!answer.isAcquired()) {
            busyAnswers.incrementAndGet();
        }
        return answer;
    }

    @Override
    public Set<String> renew(Map<String, String> holds, Duration lease) {
        renewCalls.incrementAndGet();
        return super.renew(holds, lease);
    }

    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        subscriptions.incrementAndGet();
        return super.subscribe(name, onRelease);
    }
}
