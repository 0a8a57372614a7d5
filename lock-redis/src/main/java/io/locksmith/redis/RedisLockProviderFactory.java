package io.locksmith.redis;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisUri;
import io.locksmith.spi.LockProviderFactory;
import java.net.URI;
import java.util.Objects;
import java.util.Set;

/**
 * Opens providers for {@code redis://[user:password@]host[:port][/db]} and {@code rediss://…} (TLS, trusting the
 * JVM's default trust store) URIs, found by {@link LockProvider#open(String)} through
 * {@link java.util.ServiceLoader}. The provider owns the client it creates: a pool of up to 16 connections whose
 * connect, socket and pool-wait timeouts are the {@link LockOptions#operationTimeout()}.
 *
 * <p>The port defaults to 6379 and the database to 0; user and password may be percent-encoded, and
 * {@code redis://:password@host} authenticates the {@code default} user.
 */
public final class RedisLockProviderFactory implements LockProviderFactory {

    /** A factory; {@link java.util.ServiceLoader} calls this. */
    public RedisLockProviderFactory() {
    }

    @Override
    public Set<String> schemes() {
        return Set.of("redis", "rediss");
    }

    /**
     * Opens a provider for the Redis server {@code uri} names.
     *
     * @throws IllegalArgumentException if the URI is malformed or names a database the server does not have
     * @throws io.locksmith.LockBackendException if the server cannot be reached or refuses the credentials
     */
    @Override
    public LockProvider create(URI uri, LockOptions options) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        return RedisLockProviders.open(RedisUri.parse(uri), options);
    }
}
