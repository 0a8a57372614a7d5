package io.locksmith.internal;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with full jitter between attempts of a polling waiter: each delay is drawn uniformly
 * from [min, ceiling], and the ceiling doubles up to max, so waiters of many processes spread out instead of
 * retrying in step. A waiter backs off from a holder, not from a rotation: when it sees the lock change hands
 * between two looks it {@linkplain #restart restarts} from the bottom.
 */
final class Backoff {

    private final long minNanos;
    private final long maxNanos;
    private long ceiling;

    Backoff(long minNanos, long maxNanos) {
        this.minNanos = minNanos;
        this.maxNanos = maxNanos;
        this.ceiling = minNanos;
    }

    /** Starts over from the shortest delays, keeping the jitter: the next delay is drawn from [min, 2 min]. */
    void restart() {
        ceiling = Math.min(maxNanos, minNanos * 2);
    }

    /** The next delay in nanoseconds. */
    long next() {
        long delay = minNanos + (ceiling > minNanos ? ThreadLocalRandom.current().nextLong(ceiling - minNanos + 1) : 0);
        ceiling = Math.min(maxNanos, ceiling > maxNanos / 2 ? maxNanos : ceiling * 2);
        return delay;
    }
}
