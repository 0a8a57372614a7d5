package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.tests.servers.RedisServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The ACL rule docs/redis.md gives an application's Redis user, taken from the page itself and applied to a
 * server that speaks TLS with a certificate of a throw-away CA the test makes: the library works with exactly
 * that rule (lock, wake-ups, renewal, fencing, inspect, forced release), and another ACL user of the same server,
 * allowed every command but on other keys, can neither read, change nor delete the lock's keys, nor fake or
 * overhear its wake-ups, while the holder keeps its lock throughout.
 */
@DisplayName("Redis ACL: the documented rule is enough, and other users cannot touch the locks")
class RedisAclTest {

    /** The namespace the documented rule is written for. */
    private static final String NAMESPACE = "orders";
    private static final String PASSWORD = "app-" + TestRedis.freshNamespace();
    private static final String INTRUDER_PASSWORD = "intruder-" + TestRedis.freshNamespace();
    /** With a 60 s lease renewed by its holder, a waiter that gets the lock within this bound was woken. */
    private static final Duration LEASE = Duration.ofSeconds(60);
    private static final Duration BOUND = Duration.ofSeconds(20);

    private static RedisServer server;
    private static RedisAdmin admin;
    private static SslOptions ssl;
    private static int tlsPort;
    private static List<String> documentedRule;

    private final List<AutoCloseable> opened = new CopyOnWriteArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final RedisKeys keys = new RedisKeys(NAMESPACE);

    @BeforeAll
    static void startServer() throws Exception {
        documentedRule = documentedRule();
        TestTls tls = TestTls.create();
        ssl = tls.sslOptions();
        try (ServerSocket probe = new ServerSocket(0)) {
            tlsPort = probe.getLocalPort();
        }
        List<String> args = new ArrayList<>(tls.serverArgs(tlsPort));
        args.add("--user");
        for (String token : documentedRule.subList(1, documentedRule.size())) {
            args.add(token.equals(">password") ? ">" + PASSWORD : token);
        }
        args.addAll(List.of("--user", "intruder", "on", ">" + INTRUDER_PASSWORD, "~other:*", "&other:*", "+@all",
                "-@dangerous",
                "--user", "admin", "on", ">admin-pw", "~*", "&*", "+@all",
                "--user", "default", "off"));
        server = RedisServer.start(args.toArray(String[]::new));
        admin = new RedisAdmin(server.host(), server.port(), "admin", "admin-pw");
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @AfterEach
    void closeEverything() throws Exception {
        threads.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    /** The {@code user …} line of docs/redis.md's least-privilege section, split into its words. */
    private static List<String> documentedRule() throws IOException {
        String docs = Files.readString(Path.of("..", "docs", "redis.md"));
        int section = docs.indexOf("## Least privilege (ACL)");
        assertThat(section).as("docs/redis.md has its least-privilege section").isPositive();
        int open = docs.indexOf("```", section);
        int close = docs.indexOf("```", open + 3);
        String block = docs.substring(docs.indexOf('\n', open) + 1, close).strip();
        List<String> words = Arrays.asList(block.split("\\s+"));
        assertThat(words).as("the documented rule").startsWith("user", "locksmith", "on", ">password")
                .contains("~" + NAMESPACE + ":*", "&" + NAMESPACE + ":*", "-@all");
        return words;
    }

    private RedisClient client(String user, String password) {
        RedisClient client = RedisClient.builder()
                .hostAndPort(new HostAndPort("localhost", tlsPort))
                .clientConfig(DefaultJedisClientConfig.builder().sslOptions(ssl).user(user).password(password)
                        .timeoutMillis(5_000).build())
                .build();
        opened.add(client);
        return client;
    }

    private LockProvider provider(String user, String password, LockOptions options) {
        LockProvider provider = RedisLockProviders.builder(client(user, password)).options(options)
                .address("rediss://localhost:" + tlsPort + "/0").build();
        opened.add(provider);
        return provider;
    }

    private LockProvider app(Duration lease) {
        return provider("locksmith", PASSWORD, LockOptions.builder().namespace(NAMESPACE).leaseTime(lease).build());
    }

    private Jedis connection(String user, String password) {
        Jedis jedis = new Jedis(new HostAndPort("localhost", tlsPort), DefaultJedisClientConfig.builder()
                .sslOptions(ssl).user(user).password(password).timeoutMillis(5_000).build());
        opened.add(jedis);
        return jedis;
    }

    @Test
    @DisplayName("with exactly the documented rule: lock, a waiter woken by pub/sub, renewal, fencing, inspect and"
            + " forced release")
    void theDocumentedRuleIsEnough() throws Exception {
        LockProvider holder = app(LEASE);
        LockProvider waiting = app(LEASE);
        DistributedLock held = holder.getLock("wake-up");
        held.lock();
        long first = held.fencingToken();
        DistributedLock wanted = waiting.getLock("wake-up");
        Future<Long> waiter = threads.submit(() -> {
            wanted.lock();
            try {
                return wanted.fencingToken();
            } finally {
                wanted.unlock();
            }
        });
        Await.until("the waiter subscribed to the lock's channel", BOUND,
                () -> admin.subscribers(keys.channel("wake-up")) == 1);
        held.unlock();
        assertThat(waiter.get(BOUND.toSeconds(), TimeUnit.SECONDS)).as("the woken waiter's token")
                .isGreaterThan(first);

        // renewal: a 1 s lease held for three and a half
        LockProvider renewing = app(Duration.ofSeconds(1));
        LockProvider rival = app(Duration.ofSeconds(1));
        DistributedLock renewed = renewing.getLock("renewed");
        renewed.lock();
        Thread.sleep(3_500);
        assertThat(renewed.isHeldByCurrentThread()).isTrue();
        assertThat(rival.getLock("renewed").tryLock()).as("tryLock() of a renewed hold").isFalse();
        long token = renewed.fencingToken();
        assertThat(rival.inspect("renewed").fencingToken()).as("inspect() by another client").hasValue(token);
        renewed.unlock();
        DistributedLock next = rival.getLock("renewed");
        assertThat(next.tryLock()).isTrue();
        assertThat(next.fencingToken()).as("the next holder's token").isGreaterThan(token);

        assertThat(renewing.forceRelease("renewed")).as("forceRelease() of a held lock").isTrue();
        assertThat(rival.inspect("renewed").isLocked()).isFalse();
    }

    @Test
    @DisplayName("another ACL user gets NOPERM reading, changing or deleting the lock's keys, and the holder keeps"
            + " its lock")
    void anotherUserCannotTouchTheLock() throws Exception {
        LockProvider holder = app(Duration.ofSeconds(3));
        DistributedLock lock = holder.getLock("guarded");
        lock.lock();
        long token = lock.fencingToken();
        String hash = keys.lock("guarded");
        String fence = keys.fence("guarded");
        String channel = keys.channel("guarded");
        // the hash's one field is the hold's owner id: the client id, a dot and the acquisition's number
        String owner = admin.<Set<String>>call(jedis -> jedis.hkeys(hash)).iterator().next();
        assertThat(owner).startsWith(holder.clientId() + ".");

        Jedis intruder = connection("intruder", INTRUDER_PASSWORD);
        Map<String, Object[]> attempts = new java.util.LinkedHashMap<>();
        attempts.put("GET fence", new Object[] {Protocol.Command.GET, fence});
        attempts.put("HGETALL lock", new Object[] {Protocol.Command.HGETALL, hash});
        attempts.put("HKEYS lock", new Object[] {Protocol.Command.HKEYS, hash});
        attempts.put("PTTL lock", new Object[] {Protocol.Command.PTTL, hash});
        attempts.put("TYPE lock", new Object[] {Protocol.Command.TYPE, hash});
        attempts.put("DUMP lock", new Object[] {Protocol.Command.DUMP, hash});
        attempts.put("DEL lock", new Object[] {Protocol.Command.DEL, hash});
        attempts.put("UNLINK lock", new Object[] {Protocol.Command.UNLINK, hash});
        attempts.put("PEXPIRE lock", new Object[] {Protocol.Command.PEXPIRE, hash, "1"});
        attempts.put("PERSIST lock", new Object[] {Protocol.Command.PERSIST, hash});
        attempts.put("HSET lock", new Object[] {Protocol.Command.HSET, hash, "intruder", "1"});
        attempts.put("HDEL lock", new Object[] {Protocol.Command.HDEL, hash, owner});
        attempts.put("RENAME lock", new Object[] {Protocol.Command.RENAME, hash, "other:{stolen}"});
        attempts.put("COPY lock", new Object[] {Protocol.Command.COPY, hash, "other:{copy}"});
        attempts.put("SET fence", new Object[] {Protocol.Command.SET, fence, "0"});
        attempts.put("INCR fence", new Object[] {Protocol.Command.INCR, fence});
        attempts.put("EVAL deleting the lock", new Object[] {Protocol.Command.EVAL,
                "return redis.call('DEL', KEYS[1])", "1", hash});
        attempts.put("EVAL deleting it without declaring it", new Object[] {Protocol.Command.EVAL,
                "return redis.call('DEL', ARGV[1])", "0", hash});
        attempts.put("PUBLISH a fake wake-up", new Object[] {Protocol.Command.PUBLISH, channel, "released"});
        attempts.put("SUBSCRIBE to the wake-ups", new Object[] {Protocol.Command.SUBSCRIBE, channel});
        for (Map.Entry<String, Object[]> attempt : attempts.entrySet()) {
            Object[] command = attempt.getValue();
            String[] args = Arrays.stream(command, 1, command.length).map(String::valueOf).toArray(String[]::new);
            assertThatThrownBy(() -> intruder.sendCommand((ProtocolCommand) command[0], args))
                    .as("%s as another ACL user", attempt.getKey())
                    .isInstanceOf(JedisDataException.class)
                    // a key a script touches without declaring it is refused as a script error
                    .hasMessageMatching("(?s).*(NOPERM|user executing the script can't access).*");
        }

        // the same user through Locksmith: its calls fail, the lock stays
        LockProvider intruding = provider("intruder", INTRUDER_PASSWORD,
                LockOptions.builder().namespace(NAMESPACE).build());
        for (String call : List.of("tryLock", "inspect", "forceRelease")) {
            assertThatThrownBy(() -> {
                switch (call) {
                    case "tryLock" -> intruding.getLock("guarded").tryLock();
                    case "inspect" -> intruding.inspect("guarded");
                    default -> intruding.forceRelease("guarded");
                }
            }).as("%s() as another ACL user", call).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("NOPERM");
        }

        // ACL key patterns do not hide key names from SCAN (nor KEYS, in @dangerous here): lock names are
        // visible to a user allowed those, as docs/security.md says
        List<String> listed = new ArrayList<>();
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = intruder.scan(cursor, new ScanParams().match(NAMESPACE + ":*").count(1_000));
            listed.addAll(page.getResult());
            cursor = page.getCursor();
        } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
        assertThat(listed).as("SCAN as another user with +@all -@dangerous").contains(hash);

        // the application's own user may not step outside its rule either
        Jedis app = connection("locksmith", PASSWORD);
        for (ProtocolCommand command : List.of(Protocol.Command.FLUSHALL, Protocol.Command.KEYS,
                Protocol.Command.CONFIG)) {
            assertThatThrownBy(() -> app.sendCommand(command, command == Protocol.Command.CONFIG
                    ? new String[] {"GET", "requirepass"} : command == Protocol.Command.KEYS
                    ? new String[] {"*"} : new String[0]))
                    .as("%s as the application's user", command).isInstanceOf(JedisDataException.class)
                    .hasMessageContaining("NOPERM");
        }

        // two lease periods on, with renewals through the attempts: the holder never lost it
        Thread.sleep(3_000);
        assertThat(lock.isHeldByCurrentThread()).as("the holder's view").isTrue();
        assertThat(admin.<Map<String, String>>call(jedis -> jedis.hgetAll(hash)))
                .as("the lock hash as an administrator sees it").containsOnlyKeys(owner);
        assertThat(admin.<String>call(jedis -> jedis.get(fence))).as("the fencing counter")
                .isEqualTo(Long.toString(token));
        assertThat(lock.fencingToken()).isEqualTo(token);
        assertThat(app(LEASE).getLock("guarded").tryLock()).as("another application client's tryLock()").isFalse();
        lock.unlock();
        assertThat(admin.<Boolean>call(jedis -> jedis.exists(hash))).as("the lock hash after unlock()").isFalse();
    }
}
