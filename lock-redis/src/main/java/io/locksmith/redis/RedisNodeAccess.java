package io.locksmith.redis;

import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.redis.internal.RedisNodeStores;
import redis.clients.jedis.UnifiedJedis;

/** Gives {@link RedisNodeStore#open} (unsupported, for Redlock) this package's per-server store. */
final class RedisNodeAccess implements RedisNodeStores.Factory {

    static {
        RedisNodeStores.install(new RedisNodeAccess());
    }

    private RedisNodeAccess() {
    }

    @Override
    public RedisNodeStore open(UnifiedJedis client, String address, LockOptions options,
            Runnable onConnectionFailure) {
        return new RedisLockStore(client, address, options, onConnectionFailure, null);
    }
}
