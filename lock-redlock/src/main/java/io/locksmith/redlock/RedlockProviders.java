package io.locksmith.redlock;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisClients;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.redis.internal.RedisUri;
import io.locksmith.redlock.RedlockStore.Node;
import io.locksmith.spi.LockStores;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.StringJoiner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Opens Redlock {@link LockProvider}s over N independent Redis masters (no replication between them), given as
 * Jedis clients the application already has.
 *
 * <pre>{@code
 * LockProvider locks = RedlockProviders.builder(redis1, redis2, redis3)
 *         .options(LockOptions.builder().namespace("orders").build())
 *         .nodeTimeout(Duration.ofMillis(50))
 *         .build();
 * }</pre>
 *
 * <p>Give each client socket and connection timeouts close to the per-node timeout: a round waits for a node
 * at most that long, but a call the client keeps waiting for occupies one of the provider's threads. The
 * provider does not close the clients; close the provider first. To let Locksmith create and own the clients,
 * open {@code redlock://h1:6379,h2:6379,h3:6379} with {@link LockProvider#open(String, LockOptions)} instead.
 * See docs/redlock.md for the algorithm and the assumptions its safety rests on.
 */
public final class RedlockProviders {

    /** Default bound on one node's answer in an acquisition, release or renewal round: 50 ms. */
    public static final Duration DEFAULT_NODE_TIMEOUT = Duration.ofMillis(50);

    private static final Logger log = LoggerFactory.getLogger(RedlockProviders.class);

    private RedlockProviders() {
    }

    /** A builder of a provider over {@code clients}, one per Redis master, which it uses but does not close. */
    public static Builder builder(List<? extends UnifiedJedis> clients) {
        Objects.requireNonNull(clients, "clients");
        clients.forEach(c -> Objects.requireNonNull(c, "client"));
        return new Builder(List.copyOf(clients));
    }

    /** A builder of a provider over {@code clients}, one per Redis master, which it uses but does not close. */
    public static Builder builder(UnifiedJedis... clients) {
        return builder(Arrays.asList(clients));
    }

    /** Opens a provider that owns one client per node of {@code uri}. */
    static LockProvider open(RedlockUri uri, LockOptions options) {
        Duration nodeTimeout = uri.nodeTimeout() != null ? uri.nodeTimeout() : DEFAULT_NODE_TIMEOUT;
        check(uri.nodes().size(), nodeTimeout, nodeTimeout, options);
        List<Node> nodes = new ArrayList<>();
        List<AutoCloseable> clients = new ArrayList<>();
        AutoCloseable closeClients = () -> clients.forEach(RedlockProviders::closeQuietly);
        LockOptions nodeOptions = nodeOptions(options, nodeTimeout);
        for (RedisUri address : uri.nodes()) {
            RedisClients.Pooled pooled = RedisClients.open(address, nodeTimeout);
            RedisClient client = pooled.client();
            clients.add(client);
            // After a broken connection the idle ones are likely stale too (server restarted): drop them.
            RedisNodeStore store = RedisNodeStore.open(client, address.address(), nodeOptions, pooled.dropIdle());
            nodes.add(new Node(address.address(), store, client));
        }
        return newProvider(nodes, uri.address(), nodeTimeout, nodeTimeout, options, closeClients);
    }

    static LockProvider newProvider(List<Node> nodes, String address, Duration nodeTimeout,
            Duration retryDelay, LockOptions options, AutoCloseable owned) {
        RedlockStore store = new RedlockStore(nodes, address, options.namespace(), nodeTimeout, retryDelay,
                options.timeSource(), owned);
        loadScripts(store, nodes, address);
        return LockStores.newProvider(store, options);
    }

    /** Loads the scripts on every node that answers; fails unless a quorum does (the others load on first use). */
    private static void loadScripts(RedlockStore store, List<Node> nodes, String address) {
        int loaded = 0;
        StringJoiner problems = new StringJoiner("; ");
        for (Node node : nodes) {
            try {
                node.store().loadScripts();
                loaded++;
            } catch (LockBackendException e) {
                problems.add(e.getMessage());
            }
        }
        if (loaded < Validity.quorum(nodes.size())) {
            store.close();
            throw new LockBackendException(address + " - only " + loaded + " of " + nodes.size()
                    + " nodes answered, quorum " + Validity.quorum(nodes.size()) + ": " + problems);
        }
        if (loaded < nodes.size()) {
            log.warn("{}: {} of {} nodes unreachable at start; locking goes on with the quorum: {}", address,
                    nodes.size() - loaded, nodes.size(), problems);
        }
    }

    private static LockOptions nodeOptions(LockOptions options, Duration nodeTimeout) {
        // each node's store bounds its own waits (subscription confirmation, cancellation flush) by the node timeout
        return options.toBuilder().operationTimeout(nodeTimeout).build();
    }

    private static void check(int nodes, Duration nodeTimeout, Duration retryDelay, LockOptions options) {
        if (nodes < 3) {
            throw new IllegalArgumentException("Redlock needs at least 3 independent Redis masters, got " + nodes);
        }
        if (nodes % 2 == 0) {
            log.warn("Redlock over an even number of masters ({}) tolerates no more failures than over {} and "
                    + "costs one more round trip per node; prefer an odd number", nodes, nodes - 1);
        }
        if (nodeTimeout.isNegative() || nodeTimeout.isZero()) {
            throw new IllegalArgumentException("nodeTimeout must be positive, got " + nodeTimeout);
        }
        if (nodeTimeout.compareTo(options.leaseTime()) >= 0) {
            throw new IllegalArgumentException("nodeTimeout must be much smaller than the lease "
                    + options.leaseTime() + ", got " + nodeTimeout);
        }
        if (nodeTimeout.compareTo(options.operationTimeout()) > 0) {
            throw new IllegalArgumentException("nodeTimeout must not exceed the operation timeout "
                    + options.operationTimeout() + ", got " + nodeTimeout);
        }
        if (retryDelay.isNegative()) {
            throw new IllegalArgumentException("retryDelay must not be negative, got " + retryDelay);
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            log.warn("closing a Redis client failed: {}", e.getMessage());
        }
    }

    /** Configures and builds a Redlock provider over an application's Jedis clients. */
    public static final class Builder {
        private final List<UnifiedJedis> clients;
        private LockOptions options = LockOptions.defaults();
        private Duration nodeTimeout = DEFAULT_NODE_TIMEOUT;
        private Duration retryDelay;
        private List<String> addresses;

        private Builder(List<UnifiedJedis> clients) {
            this.clients = clients;
        }

        /** The provider's options (lease, namespace, listener, time source, …); default {@link LockOptions#defaults()}. */
        public Builder options(LockOptions options) {
            this.options = Objects.requireNonNull(options, "options");
            return this;
        }

        /**
         * How long a round waits for one node's answer before counting it as a no; much smaller than the lease
         * and no longer than the operation timeout. Default {@link #DEFAULT_NODE_TIMEOUT}.
         */
        public Builder nodeTimeout(Duration nodeTimeout) {
            this.nodeTimeout = Objects.requireNonNull(nodeTimeout, "nodeTimeout");
            return this;
        }

        /**
         * The longest random delay before retrying after a split vote; default the node timeout. The delay after a
         * first split vote is bounded by twice that round's duration (at least 1 ms), doubling with each further
         * one in a row up to this.
         */
        public Builder retryDelay(Duration retryDelay) {
            this.retryDelay = Objects.requireNonNull(retryDelay, "retryDelay");
            return this;
        }

        /**
         * How messages name the nodes, in the order of the clients, such as {@code redis://10.0.0.5:6379/0};
         * without credentials. Default: {@code node-1 … node-N}.
         */
        public Builder nodeAddresses(List<String> addresses) {
            this.addresses = List.copyOf(Objects.requireNonNull(addresses, "addresses"));
            return this;
        }

        /**
         * Loads the lock scripts into every node that answers and returns the provider.
         *
         * @throws IllegalArgumentException if there are fewer than 3 clients, or a setting is inconsistent
         * @throws LockBackendException if fewer than a quorum of the nodes answer
         */
        public LockProvider build() {
            Duration delay = retryDelay != null ? retryDelay : nodeTimeout;
            check(clients.size(), nodeTimeout, delay, options);
            if (addresses != null && addresses.size() != clients.size()) {
                throw new IllegalArgumentException(addresses.size() + " node addresses for " + clients.size()
                        + " clients");
            }
            LockOptions nodeOptions = nodeOptions(options, nodeTimeout);
            List<Node> nodes = new ArrayList<>();
            List<String> shown = new ArrayList<>();
            for (int i = 0; i < clients.size(); i++) {
                String address = addresses != null ? addresses.get(i) : "node-" + (i + 1);
                shown.add(address);
                UnifiedJedis client = clients.get(i);
                nodes.add(new Node(address, RedisNodeStore.open(client, address, nodeOptions, () -> { }), client));
            }
            return newProvider(nodes, "redlock(" + String.join(", ", shown) + ")", nodeTimeout, delay, options, null);
        }
    }
}
