package io.locksmith.redis.internal;

import java.time.Duration;

/**
 * The package-private state of {@link RedisLockStore} that the tests in {@code io.locksmith.redis} check: test
 * code only, so that the store shows none of it outside its package.
 */
public final class RedisStoreProbe {

    private RedisStoreProbe() {
    }

    /** Whether {@code store}'s wake-ups go over sharded pub/sub. */
    public static boolean sharded(RedisLockStore store) {
        return store.sharded();
    }

    /** Whether nobody waits on {@code store}'s wake-ups and they hold no connection and make none. */
    public static boolean wakeupsIdle(RedisLockStore store) {
        return store.wakeups().idle();
    }

    /** How many lost acquisitions {@code store} still has to cancel. */
    public static int pendingCancellations(RedisLockStore store) {
        return store.pendingCancellations();
    }

    /** {@code store}'s pipelined calls, or null if it cannot pipeline. */
    public static RedisPipeline pipeline(RedisLockStore store) {
        return store.pipeline();
    }

    /** The lease in whole milliseconds as the store's scripts are given it. */
    public static long leaseMillis(Duration lease) {
        return RedisLockStore.leaseMillis(lease);
    }
}
