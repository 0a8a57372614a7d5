package io.locksmith.redis;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisLockStore;
import io.locksmith.redis.internal.RedisUri;
import io.locksmith.spi.LockStores;
import io.locksmith.tests.servers.RedisServer;
import java.net.URI;
import java.util.concurrent.ThreadLocalRandom;

/** Small helpers shared by the Redis-specific tests. */
final class TestRedis {

    private TestRedis() {
    }

    /** A namespace of its own for one test, so tests never see each other's keys. */
    static String freshNamespace() {
        return "rt" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    /** A store that owns its client, as the URI form builds it. */
    static RedisLockStore store(RedisServer server, LockOptions options) {
        return RedisLockProviders.openStore(RedisUri.parse(URI.create(server.uri())), options,
                RedisLockProviders.Fairness.BOUNDED);
    }

    /** A provider over {@code store} run by the shared machinery. */
    static LockProvider provider(CountingStore<?> store, LockOptions options) {
        return LockStores.newProvider(store, options);
    }
}
