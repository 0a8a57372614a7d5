package io.locksmith.redlock;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.LockProviderFactory;
import java.net.URI;
import java.util.Objects;
import java.util.Set;

/**
 * Opens Redlock providers for {@code redlock://[user:password@]host[:port],host[:port],…[/db][?nodeTimeout=50ms]}
 * and {@code redlocks://…} (TLS to every node), found by {@link LockProvider#open(String)} through
 * {@link java.util.ServiceLoader}. At least 3 nodes; an even count is allowed but warned about.
 *
 * <p>The provider owns one client per node: a pool of up to 16 connections whose connect, socket and pool-wait
 * timeouts are the per-node timeout ({@code nodeTimeout}, default
 * {@link RedlockProviders#DEFAULT_NODE_TIMEOUT}).
 */
public final class RedlockProviderFactory implements LockProviderFactory {

    /** A factory; {@link java.util.ServiceLoader} calls this. */
    public RedlockProviderFactory() {
    }

    @Override
    public Set<String> schemes() {
        return Set.of("redlock", "redlocks");
    }

    /**
     * Opens a provider over the Redis masters {@code uri} names.
     *
     * @throws IllegalArgumentException if the URI is malformed or names fewer than 3 nodes
     * @throws io.locksmith.LockBackendException if fewer than a quorum of the nodes can be reached
     */
    @Override
    public LockProvider create(URI uri, LockOptions options) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        return RedlockProviders.open(RedlockUri.parse(uri), options);
    }
}
