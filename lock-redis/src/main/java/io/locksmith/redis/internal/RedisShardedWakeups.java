package io.locksmith.redis.internal;

import io.locksmith.spi.LockStore.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisClusterCRC16;
import redis.clients.jedis.util.SafeEncoder;

/**
 * The wake-ups of one provider on a Redis 7+ cluster, over sharded pub/sub: releases {@code SPUBLISH} on the
 * lock's channel, which stays on the node that owns the channel's slot (the lock's slot) instead of being
 * broadcast to every node, and waiters {@code SSUBSCRIBE} to it on that node. A sharded subscription must be
 * made on the node that owns the slot, so the provider keeps one subscriber connection ({@link RedisWakeups})
 * per node that owns a subscribed channel, shared by every lock of the provider waiting there.
 *
 * <p>Which node owns which slot comes from {@code CLUSTER SLOTS}, asked when a channel's owner is not known yet
 * and again whenever a node's subscriber connection fails or the node drops a channel (it does so when it gives
 * the slot away: resharding, failover). Channels whose owner changed then move, with their listeners, to the
 * subscriber of their new node, and their waiters are woken to look at the store at once, since a release may
 * have gone unheard meanwhile. The subscribers connect through the client's own connection pool of each node.
 */
final class RedisShardedWakeups implements RedisSubscriber {

    private static final Logger log = LoggerFactory.getLogger(RedisShardedWakeups.class);
    /** How many pooled connections to try before giving up on a node: the pool's default idle count. */
    private static final int STALE_TRIES = 8;

    private final Nodes cluster;
    private final String address;
    private final Duration operationTimeout;
    /**
     * Guards the maps below; held while a channel's listener is added to or removed from a node's subscriber
     * (which writes the (un)subscribe), never while the slots' owners are read from the cluster.
     */
    private final ReentrantLock lock = new ReentrantLock();
    /** The subscriber of each node, by {@code host:port}. */
    private final Map<String, RedisWakeups> subscribers = new HashMap<>();
    /** The subscriber each subscribed channel is on now. */
    private final Map<String, RedisWakeups> placed = new HashMap<>();
    /** The {@code host:port} of the master of each slot, as far as known; guarded by the lock. */
    private final String[] owners = new String[Protocol.CLUSTER_HASHSLOTS];
    private boolean closed;

    RedisShardedWakeups(Nodes cluster, String address, Duration operationTimeout) {
        this.cluster = cluster;
        this.address = address;
        this.operationTimeout = operationTimeout;
    }

    @Override
    public Subscription subscribe(String channel, Consumer<String> onMessage) {
        int slot = JedisClusterCRC16.getSlot(channel);
        RedisWakeups subscriber = null;
        long ticket = 0;
        boolean refreshed = false;
        while (subscriber == null) {
            lock.lock();
            try {
                if (closed) {
                    return () -> { };
                }
                subscriber = placed.get(channel);
                if (subscriber == null && (owners[slot] != null || refreshed)) {
                    // an owner still unknown after a refresh: a subscriber that connects by slot
                    subscriber = subscriberOf(owners[slot]);
                    placed.put(channel, subscriber);
                }
                if (subscriber != null) {
                    ticket = subscriber.add(channel, onMessage);
                }
            } finally {
                lock.unlock();
            }
            if (subscriber == null) {
                // The slot's owner is not known yet: ask the cluster, outside the lock (a round trip per node).
                refreshOwners();
                refreshed = true;
            }
        }
        // Outside the lock: the other nodes' subscribers may need it to move channels meanwhile.
        subscriber.awaitConfirmation(channel, ticket);
        return () -> unsubscribe(channel, onMessage);
    }

    private void unsubscribe(String channel, Consumer<String> onMessage) {
        lock.lock();
        try {
            RedisWakeups subscriber = placed.get(channel);
            if (subscriber != null && subscriber.remove(channel, onMessage)) {
                placed.remove(channel);
            }
        } finally {
            lock.unlock();
        }
    }

    /** After a subscriber's connection failed or lost a channel: moves channels whose slot changed hands. */
    private void reroute() {
        lock.lock();
        try {
            if (closed || placed.isEmpty()) {
                return;
            }
        } finally {
            lock.unlock();
        }
        if (!refreshOwners()) {
            return;
        }
        List<Consumer<String>> moved = new ArrayList<>();
        lock.lock();
        try {
            if (closed) {
                return;
            }
            for (Map.Entry<String, RedisWakeups> entry : placed.entrySet()) {
                String channel = entry.getKey();
                RedisWakeups target = subscriberOf(owners[JedisClusterCRC16.getSlot(channel)]);
                if (target != entry.getValue()) {
                    List<Consumer<String>> listeners = entry.getValue().removeAll(channel);
                    listeners.forEach(listener -> target.add(channel, listener));
                    entry.setValue(target);
                    moved.addAll(listeners);
                }
            }
        } finally {
            lock.unlock();
        }
        for (Consumer<String> listener : moved) {
            try {
                listener.accept(null);
            } catch (RuntimeException e) {
                log.warn("wake-up listener failed", e);
            }
        }
    }

    /** Under the lock: the subscriber of {@code node}; for an unknown node, one that connects by slot. */
    private RedisWakeups subscriberOf(String node) {
        String key = node == null ? "" : node;
        return subscribers.computeIfAbsent(key, k -> new RedisWakeups(channel -> connect(node, channel),
                address + (node == null ? "" : " node " + node), operationTimeout, this::reroute));
    }

    /** A connection to {@code node} from the client's pool, or to the node the client routes the slot to. */
    private Connection connect(String node, String channel) {
        ConnectionPool pool = node == null ? null : cluster.pools().get(node);
        int slot = JedisClusterCRC16.getSlot(channel);
        return live(pool != null ? pool::getResource : () -> cluster.bySlot().apply(slot));
    }

    /**
     * A connection from {@code source} that answers {@code PING}: pooled connections the node closed meanwhile
     * (restart, dropped clients) are discarded rather than subscribed on.
     */
    private static Connection live(Supplier<Connection> source) {
        for (int tries = 1; ; tries++) {
            Connection connection = source.get();
            try {
                connection.ping();
                return connection;
            } catch (JedisConnectionException e) {
                connection.setBroken();
                connection.close();
                if (tries >= STALE_TRIES) {
                    throw e;
                }
            }
        }
    }

    /**
     * Reads the slots' masters from the first node that answers, without the lock, and then takes them as the
     * known owners; false if no node answered.
     */
    private boolean refreshOwners() {
        String[] read = readOwners();
        if (read == null) {
            return false;
        }
        lock.lock();
        try {
            System.arraycopy(read, 0, owners, 0, owners.length);
        } finally {
            lock.unlock();
        }
        return true;
    }

    /** The master of each slot, by {@code CLUSTER SLOTS} of the first node that answers; null if none did. */
    private String[] readOwners() {
        JedisException failure = null;
        for (Map.Entry<String, ConnectionPool> node : cluster.pools().entrySet()) {
            try (Connection connection = live(node.getValue()::getResource)) {
                connection.sendCommand(Protocol.Command.CLUSTER, Protocol.ClusterKeyword.SLOTS);
                List<Object> ranges = connection.getObjectMultiBulkReply();
                String askedHost = node.getKey().substring(0, node.getKey().lastIndexOf(':'));
                String[] owners = new String[Protocol.CLUSTER_HASHSLOTS];
                for (Object range : ranges) {
                    List<?> parts = (List<?>) range;
                    List<?> master = (List<?>) parts.get(2);
                    String host = SafeEncoder.encode((byte[]) master.get(0));
                    // an empty host means "the address you reached me at"
                    String owner = (host.isEmpty() ? askedHost : host) + ':' + master.get(1);
                    for (long slot = (Long) parts.get(0); slot <= (Long) parts.get(1); slot++) {
                        owners[(int) slot] = owner;
                    }
                }
                return owners;
            } catch (JedisException e) {
                failure = e;
            }
        }
        log.debug("{}: could not read the cluster's slots for sharded wake-ups: {}", address,
                failure == null ? "no node known" : failure.getMessage());
        return null;
    }

    @Override
    public boolean idle() {
        lock.lock();
        try {
            return placed.isEmpty() && subscribers.values().stream().allMatch(RedisWakeups::idle);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        List<RedisWakeups> all;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            placed.clear();
            all = new ArrayList<>(subscribers.values());
        } finally {
            lock.unlock();
        }
        all.forEach(RedisWakeups::close);
    }

    /**
     * Whether every node of the cluster runs Redis 7 or later and so has sharded pub/sub; nodes that do not
     * answer are not counted.
     */
    static boolean supported(Nodes cluster) {
        boolean answered = false;
        for (ConnectionPool pool : cluster.pools().values()) {
            try (Connection connection = live(pool::getResource)) {
                connection.sendCommand(Protocol.Command.INFO, "server");
                String info = connection.getBulkReply();
                answered = true;
                if (majorVersion(info) < 7) {
                    return false;
                }
            } catch (JedisException e) {
                log.debug("a cluster node did not tell its version: {}", e.getMessage());
            }
        }
        return answered;
    }

    /** The major version in {@code INFO server}'s {@code redis_version}, or 0 if there is none. */
    static int majorVersion(String info) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                String version = line.substring("redis_version:".length()).trim();
                int dot = version.indexOf('.');
                try {
                    return Integer.parseInt(dot < 0 ? version : version.substring(0, dot));
                } catch (NumberFormatException e) {
                    return 0;
                }
            }
        }
        return 0;
    }

    /** A cluster client's connection pools by {@code host:port}, and its connection for a slot. */
    record Nodes(Supplier<Map<String, ConnectionPool>> nodePools, IntFunction<Connection> bySlot) {

        Map<String, ConnectionPool> pools() {
            return nodePools.get();
        }

        /** The nodes of {@code jedis}, or null if it is not a cluster client. */
        @SuppressWarnings("deprecation") // JedisCluster is deprecated but still what many applications hand us
        static Nodes of(UnifiedJedis jedis) {
            if (jedis instanceof RedisClusterClient client) {
                return new Nodes(client::getClusterNodes, client::getConnectionFromSlot);
            }
            if (jedis instanceof JedisCluster client) {
                return new Nodes(client::getClusterNodes, client::getConnectionFromSlot);
            }
            return null;
        }
    }
}
