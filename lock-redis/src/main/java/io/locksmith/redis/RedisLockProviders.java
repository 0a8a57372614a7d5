package io.locksmith.redis;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisClients;
import io.locksmith.redis.internal.RedisLockStore;
import io.locksmith.redis.internal.RedisUri;
import io.locksmith.spi.LockStores;
import java.util.Locale;
import java.util.Objects;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Opens {@link LockProvider}s on Redis over a Jedis client the application already has.
 *
 * <pre>{@code
 * RedisClient redis = RedisClient.builder().hostAndPort("10.0.0.5", 6379).build();
 * LockProvider locks = RedisLockProviders.builder(redis)
 *         .options(LockOptions.builder().namespace("orders").build())
 *         .build();
 * }</pre>
 *
 * <p>Any {@link UnifiedJedis} works: {@code RedisClient}, {@code RedisClusterClient}, {@code JedisCluster}, and
 * {@code JedisPooled} on Jedis 7. The provider uses the client's own timeouts and pool, so give the client socket and
 * connection timeouts no longer than {@link LockOptions#operationTimeout()}, a pool wait no longer than that
 * either, and room in the pool for one long-lived subscriber connection (taken while a thread waits for a lock).
 * The provider does not close the client; close the provider first, then the client.
 *
 * <p>To let Locksmith create and own the client, open {@code redis://[user:password@]host:port[/db]} or
 * {@code rediss://…} with {@link LockProvider#open(String, LockOptions)} instead ({@code ?fairness=fifo} selects
 * {@link Fairness#FIFO} there).
 */
public final class RedisLockProviders {

    private RedisLockProviders() {
    }

    /** A builder of a provider over {@code client}, which the provider uses but does not close. */
    public static Builder builder(UnifiedJedis client) {
        return new Builder(Objects.requireNonNull(client, "client"));
    }

    /** Opens a provider that owns a client built from {@code uri}: the URI form of the backend. */
    static LockProvider open(RedisUri uri, LockOptions options, Fairness fairness) {
        return LockStores.newProvider(openStore(uri, options, fairness), options);
    }

    /** A store that owns a client built from {@code uri}, its scripts loaded. */
    static RedisLockStore openStore(RedisUri uri, LockOptions options, Fairness fairness) {
        RedisClients.Pooled pooled = RedisClients.open(uri, options.operationTimeout());
        RedisClient client = pooled.client();
        // After a broken connection the idle ones are likely stale too (server restarted): drop them.
        RedisLockStore store = new RedisLockStore(client, uri.address(), options, fairness == Fairness.FIFO,
                pooled.dropIdle(), client);
        try {
            store.loadScripts();
        } catch (LockBackendException e) {
            store.close();
            String problem = e.getMessage() == null ? "" : e.getMessage().toLowerCase(Locale.ROOT);
            if (problem.contains("db index is out of range")) {
                throw new IllegalArgumentException("Invalid Redis URI '" + uri.address() + "': database "
                        + uri.database() + " does not exist on the server (" + e.getMessage() + ")", e);
            }
            if (problem.contains("wrongpass")) {
                throw new LockBackendException(uri.address() + " refused the " + (uri.user() == null
                        ? "password of the default user" : "user name or password") + " given in the URI ("
                        + e.getMessage() + ")", e);
            }
            if (problem.contains("noauth")) {
                throw new LockBackendException(uri.address() + " requires a password: give it in the URI as"
                        + " redis://user:password@host or redis://:password@host (" + e.getMessage() + ")", e);
            }
            throw e;
        }
        return store;
    }

    /**
     * How a lock's waiters in different processes take turns. Every provider of one lock should use the same; a
     * {@link #BOUNDED} provider never passes a waiter that a {@link #FIFO} provider queued, but does not queue
     * itself.
     */
    public enum Fairness {
        /**
         * The default: a provider hands the lock among its own threads, and a waiter of another process claims the
         * next turn, which it gets after at most {@value io.locksmith.spi.LockStore#GRANTS_PAST_A_CLAIM} further
         * grants to others. No store command is added to an uncontended acquisition or a local hand-off.
         */
        BOUNDED,
        /**
         * First come, first served across processes: a provider's waiting thread queues in the store (a sorted
         * set in the lock's hash slot), and a free lock goes only to the head of that queue, so a provider
         * releasing the lock waits behind the waiters of other processes that came before its next thread. A
         * queued waiter looks again at least every third of max(5 s, 2 × the operation timeout) (at most a third
         * of the lease), and a waiter that died holds the queue up for at most that time, however many died.
         * Within one provider threads keep their local first-come, first-served line, and the provider has one
         * place in the store's queue at a time: the thread at the head of its line. Costs hand-offs: each turn
         * goes to another process, which first hears of the release.
         */
        FIFO
    }

    /** Configures and builds a provider over an application's Jedis client. */
    public static final class Builder {
        private final UnifiedJedis client;
        private LockOptions options = LockOptions.defaults();
        private String address;
        private Fairness fairness = Fairness.BOUNDED;

        private Builder(UnifiedJedis client) {
            this.client = client;
        }

        /** The provider's options (lease, namespace, listener, …); default {@link LockOptions#defaults()}. */
        public Builder options(LockOptions options) {
            this.options = Objects.requireNonNull(options, "options");
            return this;
        }

        /**
         * How messages and {@link LockProvider#backend()} name the server, such as {@code redis://10.0.0.5:6379/0};
         * must not contain credentials. Default: {@code redis} and the client's class.
         */
        public Builder address(String address) {
            Objects.requireNonNull(address, "address");
            if (address.isBlank()) {
                throw new IllegalArgumentException("address must not be blank");
            }
            this.address = address;
            return this;
        }

        /** How waiters of different processes take turns; default {@link Fairness#BOUNDED}. */
        public Builder fairness(Fairness fairness) {
            this.fairness = Objects.requireNonNull(fairness, "fairness");
            return this;
        }

        /**
         * Loads the lock scripts into the server and returns the provider.
         *
         * @throws LockBackendException if the server cannot be reached or refuses the scripts
         */
        public LockProvider build() {
            String shown = address != null ? address : "redis (" + client.getClass().getSimpleName() + ")";
            RedisLockStore store = new RedisLockStore(client, shown, options, fairness == Fairness.FIFO, () -> { },
                    null);
            store.loadScripts();
            return LockStores.newProvider(store, options);
        }
    }
}
