package io.locksmith.redis;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** A store that forwards to a real one and counts the machinery's calls, to check behaviour by counts. */
class CountingStore<H> extends ForwardingLockStore<H> {
    /** Acquisition attempts begun; an attempt counts here before the store has answered it. */
    final AtomicInteger acquireAttempts = new AtomicInteger();
    /**
     * Acquisition attempts the store answered "busy". A test that waits for a waiter to be waiting counts these:
     * a begun attempt may still be in flight, and a release made meanwhile lets it acquire without a wake-up.
     */
    final AtomicInteger busyAnswers = new AtomicInteger();
    final AtomicInteger subscriptions = new AtomicInteger();
    final AtomicInteger renewCalls = new AtomicInteger();

    CountingStore(LockStore<H> delegate) {
        super(delegate);
    }

    @Override
    public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
        acquireAttempts.incrementAndGet();
        Acquisition answer = super.tryAcquire(hold, lease, wait, wakeUp);
        if (!answer.isAcquired()) {
            busyAnswers.incrementAndGet();
        }
        return answer;
    }

    @Override
    public RenewResult<H> renew(List<H> holds, Duration lease) {
        renewCalls.incrementAndGet();
        return super.renew(holds, lease);
    }

    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        subscriptions.incrementAndGet();
        return super.subscribe(name, onRelease);
    }
}
