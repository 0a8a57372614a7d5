package io.locksmith.redis.internal;

import io.locksmith.spi.LockStore.Subscription;
import java.util.function.Consumer;

/**
 * The wake-up subscriptions of one provider: how its waiting locks hear that a lock may have become free.
 * {@link RedisWakeups} is one subscriber connection (pub/sub, or sharded pub/sub on one cluster node);
 * {@link RedisShardedWakeups} is one such connection per cluster node that owns a subscribed channel.
 */
interface RedisSubscriber extends AutoCloseable {

    /**
     * Calls {@code onMessage} with each message on {@code channel} until the subscription is closed, and with null
     * whenever a message may have been missed (the connection failed or came back, the server confirmed the
     * subscription late, the channel moved to another node); returns once the server confirmed the subscription,
     * the connection failed, or the operation timeout passed.
     */
    Subscription subscribe(String channel, Consumer<String> onMessage);

    /** Whether nobody waits and no connection is held or being made; for tests. */
    boolean idle();

    @Override
    void close();
}
