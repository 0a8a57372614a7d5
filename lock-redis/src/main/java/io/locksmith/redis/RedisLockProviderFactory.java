package io.locksmith.redis;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisUri;
import io.locksmith.spi.LockProviderFactory;
import io.locksmith.redis.RedisLockProviders.Fairness;
import java.net.URI;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * Opens providers for {@code redis://[user:password@]host[:port][/db]} and {@code rediss://…} (TLS, trusting the
 * JVM's default trust store) URIs, found by {@link LockProvider#open(String)} through
 * {@link java.util.ServiceLoader}. The provider owns the client it creates: a pool of up to 16 connections whose
 * connect, socket and pool-wait timeouts are the {@link LockOptions#operationTimeout()}.
 *
 * <p>The port defaults to 6379 and the database to 0; user and password may be percent-encoded, and
 * {@code redis://:password@host} authenticates the {@code default} user. The one query parameter,
 * {@code ?fairness=fifo}, serves waiters of different processes first come, first served
 * ({@link RedisLockProviders.Fairness#FIFO}); {@code ?fairness=bounded} is the default.
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
        RedisUri server = RedisUri.parse(uri, true);
        String query = uri.getRawQuery();
        return RedisLockProviders.open(server, options, query == null ? Fairness.BOUNDED : fairness(query));
    }

    /** The one query parameter a Redis URI takes: {@code fairness=bounded} or {@code fairness=fifo}. */
    static Fairness fairness(String query) {
        Fairness fairness = Fairness.BOUNDED;
        for (String parameter : query.split("&", -1)) {
            int equals = parameter.indexOf('=');
            String key = equals < 0 ? parameter : parameter.substring(0, equals);
            String value = equals < 0 ? "" : parameter.substring(equals + 1);
            if (!key.equals("fairness")) {
                throw new IllegalArgumentException("Invalid Redis URI: unknown query parameter '" + key
                        + "'; the only one is fairness=bounded or fairness=fifo");
            }
            fairness = switch (value.toLowerCase(Locale.ROOT)) {
                case "bounded" -> Fairness.BOUNDED;
                case "fifo" -> Fairness.FIFO;
                default -> throw new IllegalArgumentException("Invalid Redis URI: fairness must be bounded or fifo,"
                        + " got '" + value + "'");
            };
        }
        return fairness;
    }
}
