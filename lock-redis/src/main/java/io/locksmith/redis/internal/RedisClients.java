package io.locksmith.redis.internal;

import java.time.Duration;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.providers.PooledConnectionProvider;

/**
 * Unsupported internal API: the pooled Jedis client a {@code redis://} URI (or one Redlock node) is served by. Not a
 * stable API; applications use {@code io.locksmith.redis.RedisLockProviders} or a URI.
 */
public final class RedisClients {

    /** Connections per client: enough for the lock calls, the pipelined ones and the spare ones. */
    private static final int POOL_SIZE = 16;

    private RedisClients() {
    }

    /**
     * A client with its pool; {@link #dropIdle} empties the pool's idle connections, which are likely stale after a
     * broken connection (a restarted server).
     */
    public record Pooled(RedisClient client, Runnable dropIdle) {
    }

    /** A client of {@code uri} whose connects, reads and waits for a pooled connection take at most {@code timeout}. */
    public static Pooled open(RedisUri uri, Duration timeout) {
        int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(millis)
                .socketTimeoutMillis(millis)
                .database(uri.database());
        if (uri.tls()) {
            config.sslOptions(SslOptions.defaults());
        }
        if (uri.user() != null) {
            config.user(uri.user());
        }
        if (uri.password() != null) {
            config.password(uri.password());
        }
        JedisClientConfig clientConfig = config.build();
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(POOL_SIZE);
        pool.setMaxIdle(POOL_SIZE);
        pool.setBlockWhenExhausted(true);
        pool.setMaxWait(timeout);
        HostAndPort server = new HostAndPort(uri.host(), uri.port());
        PooledConnectionProvider connections = new PooledConnectionProvider(server, clientConfig, pool);
        RedisClient client = RedisClient.builder()
                .hostAndPort(server)
                .clientConfig(clientConfig)
                .connectionProvider(connections)
                .build();
        return new Pooled(client, connections.getPool()::clear);
    }
}
