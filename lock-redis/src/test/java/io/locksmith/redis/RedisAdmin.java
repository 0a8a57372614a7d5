package io.locksmith.redis;

import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.tests.servers.RedisServer;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * Looks into a test Redis server directly, as an operator would: command counts, held locks, forced releases.
 * Every call opens its own connection without {@code CLIENT SETINFO}, so it survives server restarts and adds
 * no command of its own to the counts but the one it sends.
 */
final class RedisAdmin {

    private final String host;
    private final int port;
    private final String user;
    private final String password;
    /** AUTH commands this admin sent, one per connection when it has credentials. */
    private final java.util.concurrent.atomic.AtomicLong auths = new java.util.concurrent.atomic.AtomicLong();

    RedisAdmin(RedisServer server) {
        this(server.host(), server.port(), null, null);
    }

    /** An admin that authenticates as {@code user} (an ACL user allowed every command). */
    RedisAdmin(String host, int port, String user, String password) {
        this.host = host;
        this.port = port;
        this.user = user;
        this.password = password;
    }

    <T> T call(Function<Jedis, T> command) {
        DefaultJedisClientConfig config = DefaultJedisClientConfig.builder()
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
                .timeoutMillis(5_000)
                .user(user)
                .password(password)
                .build();
        if (user != null || password != null) {
            auths.incrementAndGet();
        }
        try (Jedis jedis = new Jedis(new HostAndPort(host, port), config)) {
            return command.apply(jedis);
        }
    }

    /** Calls per command since the server started, from {@code INFO commandstats} ({@code evalsha}, {@code script|load}, …). */
    Map<String, Long> commandCalls() {
        String info = call(jedis -> jedis.info("commandstats"));
        Map<String, Long> calls = new HashMap<>();
        for (String line : info.split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            int colon = line.indexOf(':');
            String command = line.substring("cmdstat_".length(), colon);
            for (String field : line.substring(colon + 1).split(",")) {
                if (field.startsWith("calls=")) {
                    calls.put(command, Long.parseLong(field.substring("calls=".length())));
                }
            }
        }
        return calls;
    }

    /** Every command the server has run, except the {@code INFO} and {@code AUTH} calls that measure it. */
    long commandsExceptInfo() {
        long all = commandCalls().entrySet().stream()
                .filter(e -> !e.getKey().equals("info"))
                .mapToLong(Map.Entry::getValue)
                .sum();
        return all - auths.get();
    }

    /** The names of the locks held in {@code namespace}, decoded from the lock hashes that exist now. */
    Set<String> heldNames(String namespace) {
        RedisKeys keys = new RedisKeys(namespace);
        return call(jedis -> {
            Set<String> names = new TreeSet<>();
            ScanParams params = new ScanParams().match(keys.lockPattern()).count(1_000);
            String cursor = ScanParams.SCAN_POINTER_START;
            do {
                ScanResult<String> page = jedis.scan(cursor, params);
                for (String key : page.getResult()) {
                    String name = keys.nameOfLock(key);
                    // SCAN may still list a key whose lease just ended; EXISTS does not
                    if (name != null && jedis.exists(key)) {
                        names.add(name);
                    }
                }
                cursor = page.getCursor();
            } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
            return names;
        });
    }

    /** Deletes the lock hash of {@code name}, as an operator would; its holder is not told. */
    void forceRelease(String namespace, String name) {
        RedisKeys keys = new RedisKeys(namespace);
        call(jedis -> jedis.del(keys.lock(name)));
    }

    /** How many clients subscribe to {@code channel}. */
    long subscribers(String channel) {
        return call(jedis -> jedis.pubsubNumSub(channel).getOrDefault(channel, 0L));
    }

    /**
     * How many clients subscribe to {@code channel} with sharded pub/sub ({@code PUBSUB SHARDNUMSUB}); on a
     * cluster node that does not own the channel's slot, 0.
     */
    long shardSubscribers(String channel) {
        try {
            return call(jedis -> jedis.pubsubShardNumSub(channel).getOrDefault(channel, 0L));
        } catch (redis.clients.jedis.exceptions.JedisRedirectionException elsewhere) {
            return 0;
        }
    }

    /** The channels somebody subscribes to whose names start with {@code prefix}. */
    java.util.List<String> channels(String prefix) {
        return call(jedis -> jedis.pubsubChannels(prefix + "*"));
    }

    /** How many connections are in subscriber mode. */
    long subscriberConnections() {
        return call(jedis -> jedis.clientList(redis.clients.jedis.args.ClientType.PUBSUB).lines()
                .filter(line -> !line.isBlank()).count());
    }

    /** Closes every subscriber connection. */
    void dropSubscribers() {
        call(jedis -> jedis.clientKill(new redis.clients.jedis.params.ClientKillParams()
                .type(redis.clients.jedis.args.ClientType.PUBSUB)));
    }

    /** Closes every client connection but this one, subscribers included. */
    void dropConnections() {
        call(jedis -> {
            jedis.clientKill(new redis.clients.jedis.params.ClientKillParams()
                    .type(redis.clients.jedis.args.ClientType.NORMAL).skipMe(
                            redis.clients.jedis.params.ClientKillParams.SkipMe.YES));
            jedis.clientKill(new redis.clients.jedis.params.ClientKillParams()
                    .type(redis.clients.jedis.args.ClientType.PUBSUB));
            return null;
        });
    }
}
