package io.locksmith.redis;

import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisNodes;
import java.net.URI;
import redis.clients.jedis.UnifiedJedis;

/** Gives {@link RedisNodes} (unsupported, for Redlock) this package's per-server store, URI parser and keys. */
final class RedisNodeAccess implements RedisNodes.Access {

    static {
        RedisNodes.install(new RedisNodeAccess());
    }

    private RedisNodeAccess() {
    }

    @Override
    public RedisNodes.Address parse(URI uri) {
        RedisUri parsed = RedisUri.parse(uri);
        return new RedisNodes.Address(parsed.tls(), parsed.host(), parsed.port(), parsed.database(), parsed.user(),
                parsed.password());
    }

    @Override
    public RedisNodes.NodeStore newStore(UnifiedJedis client, String address, LockOptions options,
            Runnable onConnectionFailure) {
        return new RedisLockStore(client, address, options, onConnectionFailure, null);
    }

    @Override
    public void loadScripts(RedisNodes.NodeStore store) {
        ((RedisLockStore) store).loadScripts();
    }

    @Override
    public String lockKey(String namespace, String name) {
        return new RedisKeys(namespace).lock(name);
    }

    @Override
    public String fenceKey(String namespace, String name) {
        return new RedisKeys(namespace).fence(name);
    }

    @Override
    public String lockPattern(String namespace) {
        return new RedisKeys(namespace).lockPattern();
    }

    @Override
    public String nameOfLock(String namespace, String key) {
        return new RedisKeys(namespace).nameOfLock(key);
    }
}
