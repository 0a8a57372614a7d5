package io.locksmith.redlock;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.redlock.RedlockStore.Node;
import io.locksmith.spi.LockStores;
import io.locksmith.tests.servers.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The five independent redis-server processes every test class of this module shares (started once per JVM),
 * the faults injected into them, and direct looks into them as an operator would.
 */
final class TestNodes {

    static final int COUNT = 5;
    private static List<RedisServer> servers;
    private static final Set<Integer> killed = new HashSet<>();
    private static final Set<Integer> paused = new HashSet<>();

    private TestNodes() {
    }

    static synchronized List<RedisServer> servers() {
        if (servers == null) {
            servers = RedisServer.startIndependent(COUNT);
            List<RedisServer> started = servers;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> started.forEach(RedisServer::close)));
        }
        return servers;
    }

    static RedisServer server(int i) {
        return servers().get(i);
    }

    /** {@code redlock://} over the first {@code count} servers. */
    static String uri(int count, String query) {
        StringBuilder b = new StringBuilder("redlock://");
        for (int i = 0; i < count; i++) {
            b.append(i == 0 ? "" : ",").append(server(i).host()).append(':').append(server(i).port());
        }
        return b.append(query == null ? "" : "?" + query).toString();
    }

    static synchronized void kill(int i) {
        server(i).kill();
        killed.add(i);
    }

    static synchronized void restart(int i) {
        server(i).restart();
        killed.remove(i);
    }

    static synchronized void pause(int i) {
        server(i).pause();
        paused.add(i);
    }

    static synchronized void resume(int i) {
        server(i).resume();
        paused.remove(i);
    }

    /** Ends every fault a test left behind. */
    static synchronized void healAll() {
        for (int i : new ArrayList<>(paused)) {
            resume(i);
        }
        for (int i : new ArrayList<>(killed)) {
            restart(i);
        }
    }

    /**
     * A provider over the first {@code count} servers whose store the test can see, each node's store passed
     * through {@code wrap} (identity for none).
     */
    static Opened open(int count, LockOptions options, Duration nodeTimeout,
            Function<Integer, UnaryOperator<RedisNodeStore>> wrap) {
        List<Node> nodes = new ArrayList<>();
        List<RedisClient> clients = new ArrayList<>();
        LockOptions nodeOptions = options.toBuilder().operationTimeout(nodeTimeout).build();
        int timeout = (int) nodeTimeout.toMillis();
        for (int i = 0; i < count; i++) {
            RedisServer server = server(i);
            RedisClient client = RedisClient.builder()
                    .hostAndPort(new HostAndPort(server.host(), server.port()))
                    .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(timeout).build())
                    .build();
            clients.add(client);
            String address = "redis://" + server.host() + ":" + server.port();
            RedisNodeStore store = RedisNodeStore.open(client, address, nodeOptions, () -> { });
            store.loadScripts();
            nodes.add(new Node(address, wrap.apply(i).apply(store), client));
        }
        RedlockStore store = new RedlockStore(nodes, "redlock(test)", options.namespace(), nodeTimeout, nodeTimeout,
                options.timeSource(), () -> clients.forEach(RedisClient::close));
        return new Opened(LockStores.newProvider(store, options), store);
    }

    static Opened open(int count, LockOptions options, Duration nodeTimeout) {
        return open(count, options, nodeTimeout, i -> UnaryOperator.identity());
    }

    /** A provider and the Redlock store inside it. */
    record Opened(LockProvider provider, RedlockStore store) implements AutoCloseable {
        @Override
        public void close() {
            provider.close();
        }
    }

    /** Makes the first {@code count} masters hold {@code name} for another owner ("intruder") for a minute. */
    static void heldByIntruder(int count, RedisKeys keys, String name) {
        for (int i = 0; i < count; i++) {
            call(i, jedis -> {
                jedis.hset(keys.lock(name), "intruder", "1");
                return jedis.pexpire(keys.lock(name), 60_000);
            });
        }
    }

    static <T> T call(int i, Function<Jedis, T> command) {
        RedisServer server = server(i);
        DefaultJedisClientConfig config = DefaultJedisClientConfig.builder()
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
                .timeoutMillis(5_000)
                .build();
        try (Jedis jedis = new Jedis(new HostAndPort(server.host(), server.port()), config)) {
            return command.apply(jedis);
        }
    }

    /** The lock names held on server {@code i} in {@code namespace}. */
    static Set<String> heldNames(int i, String namespace) {
        return call(i, jedis -> {
            Set<String> names = new TreeSet<>();
            ScanParams params = new ScanParams().match(new RedisKeys(namespace).lockPattern()).count(1_000);
            String cursor = ScanParams.SCAN_POINTER_START;
            do {
                ScanResult<String> page = jedis.scan(cursor, params);
                for (String key : page.getResult()) {
                    String name = new RedisKeys(namespace).nameOfLock(key);
                    if (name != null && jedis.exists(key)) {
                        names.add(name);
                    }
                }
                cursor = page.getCursor();
            } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
            return names;
        });
    }

    /** The lock names held on any of the first {@code count} servers. */
    static Set<String> heldAnywhere(int count, String namespace) {
        Set<String> names = new TreeSet<>();
        for (int i = 0; i < count; i++) {
            names.addAll(heldNames(i, namespace));
        }
        return names;
    }

    /** Every key of {@code namespace} on server {@code i}, fencing counters included. */
    static Set<String> keys(int i, String namespace) {
        return call(i, jedis -> new TreeSet<>(jedis.keys(namespace + ":*")));
    }

    static long commandsExceptInfo(int i) {
        String info = call(i, jedis -> jedis.info("commandstats"));
        long all = 0;
        for (String line : info.split("\r?\n")) {
            if (!line.startsWith("cmdstat_") || line.startsWith("cmdstat_info:")) {
                continue;
            }
            for (String field : line.substring(line.indexOf(':') + 1).split(",")) {
                if (field.startsWith("calls=")) {
                    all += Long.parseLong(field.substring("calls=".length()));
                }
            }
        }
        return all;
    }

    static String namespace() {
        return "rl" + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }
}
