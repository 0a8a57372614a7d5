package io.locksmith.redis.internal;

import io.locksmith.LockOptions;
import redis.clients.jedis.UnifiedJedis;

/**
 * Where {@link RedisNodeStore#open} finds the Redis backend's store constructor. Unsupported internal API.
 *
 * <p>The store lives in {@code io.locksmith.redis} beside the wake-up subscribers it builds, which are
 * package-private there; so that package installs the constructor here when it initializes, and nothing else
 * may.
 */
public final class RedisNodeStores {

    /** The store's constructor, as the Redis backend's package installs it. */
    @FunctionalInterface
    public interface Factory {
        /** See {@link RedisNodeStore#open}. */
        RedisNodeStore open(UnifiedJedis client, String address, LockOptions options, Runnable onConnectionFailure);
    }

    private static final String INSTALLER = "io.locksmith.redis.RedisNodeAccess";
    private static volatile Factory factory;

    private RedisNodeStores() {
    }

    /** Called once by the Redis backend's package when it initializes; nobody else may install a factory. */
    public static void install(Factory implementation) {
        if (!implementation.getClass().getName().equals(INSTALLER)) {
            throw new IllegalArgumentException("only lock-redis installs its store factory");
        }
        factory = implementation;
    }

    static RedisNodeStore open(UnifiedJedis client, String address, LockOptions options,
            Runnable onConnectionFailure) {
        Factory current = factory;
        if (current == null) {
            try {
                // initializing the class installs it
                Class.forName(INSTALLER, true, RedisNodeStores.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("lock-redis is incomplete: " + e.getMessage(), e);
            }
            current = factory;
        }
        return current.open(client, address, options, onConnectionFailure);
    }
}
