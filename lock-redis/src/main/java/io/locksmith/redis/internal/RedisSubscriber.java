package io.locksmith.redis.internal;

import io.locksmith.spi.LockStore.Subscription;

/**
 * The wake-up subscriptions of one provider: how its waiting locks hear that a lock may have become free.
 * {@link RedisWakeups} is one subscriber connection (pub/sub, or sharded pub/sub on one cluster node);
 * {@link RedisShardedWakeups} is one such connection per cluster node that owns a subscribed channel.
 */
interface RedisSubscriber extends AutoCloseable {

    /**
     * Calls {@code onMessage} on each message on {@code channel} until the subscription is closed; returns once
     * the server confirmed the subscription, the connection failed, or the operation timeout passed.
     */
    Subscription subscribe(String channel, Runnable onMessage);

    /** Whether nobody waits and no connection is held or being made; for tests. */
    boolean idle();

    @Override
    void close();
}
