package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.LockProviderContract;
import io.locksmith.tests.StoreControl;
import io.locksmith.tests.servers.RedisServer;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.SslOptions;

/**
 * The contract over TLS with an ACL user that may run only what Locksmith needs, on keys and channels of the
 * test namespaces only, through the builder form: each provider gets the application's own {@link RedisClient}.
 */
@DisplayName("Redis backend contract over TLS with an ACL user (builder form)")
class RedisSecureContractTest extends LockProviderContract {

    private static final String USER = "locksmith";
    private static final String PASSWORD = "s3cret-pw";
    /**
     * What a Locksmith user needs: the scripts, the commands they run, pub/sub for wake-ups, and EXISTS, with what
     * read-write locks add (docs/redis.md). The contract's namespaces all start with "lt"; a real deployment grants
     * its own namespace the same way.
     */
    private static final List<String> ACL = List.of("--user", "default", "off",
            "--user", USER, "on", ">" + PASSWORD, "~lt*", "&lt*", "-@all",
            "+evalsha", "+script|load", "+exists", "+subscribe", "+unsubscribe", "+ping",
            "+hget", "+hset", "+incr", "+pexpire", "+pttl", "+del", "+publish", "+sismember", "+sadd",
            "+hkeys", "+get", "+time", "+hgetall", "+hdel", "+hlen",
            "--user", "admin", "on", ">admin-pw", "~*", "&*", "+@all");

    private static TestTls tls;
    private static RedisServer server;
    private static RedisAdmin admin;
    private static int tlsPort;
    private static SslOptions ssl;
    private static final List<RedisClient> clients = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startServer() throws Exception {
        tls = TestTls.create();
        ssl = tls.sslOptions();
        try (ServerSocket probe = new ServerSocket(0)) {
            tlsPort = probe.getLocalPort();
        }
        List<String> args = new ArrayList<>(tls.serverArgs(tlsPort));
        args.addAll(ACL);
        server = RedisServer.start(args.toArray(String[]::new));
        admin = new RedisAdmin(server.host(), server.port(), "admin", "admin-pw");
    }

    @AfterAll
    static void stopServer() {
        clients.forEach(RedisClient::close);
        if (server != null) {
            server.close();
        }
    }

    private static RedisClient client(String user, String password, int timeoutMillis) {
        RedisClient client = RedisClient.builder()
                .hostAndPort(new HostAndPort("localhost", tlsPort))
                .clientConfig(DefaultJedisClientConfig.builder()
                        .sslOptions(ssl)
                        .user(user)
                        .password(password)
                        .timeoutMillis(timeoutMillis)
                        .build())
                .build();
        clients.add(client);
        return client;
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        int timeout = (int) options.operationTimeout().toMillis();
        return RedisLockProviders.builder(client(USER, PASSWORD, timeout))
                .options(options)
                .address("rediss://localhost:" + tlsPort + "/0")
                .build();
    }

    @Override
    protected long storeOperationCount() {
        return admin.commandsExceptInfo();
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        return admin.heldNames(namespace);
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        admin.forceRelease(namespace, name);
    }

    @Override
    protected Optional<StoreControl> storeControl() {
        return server.isControllable() ? Optional.of(new RedisServerContract.ServerControl(server, admin))
                : Optional.empty();
    }

    /** What the secured server refuses. */
    @Nested
    @DisplayName("security")
    class Security {

        @Test
        @DisplayName("a wrong password is a LockBackendException that does not show the password")
        void wrongPassword() {
            assertThatThrownBy(() -> RedisLockProviders.builder(client(USER, "not-the-password", 2_000))
                    .address("rediss://localhost:" + tlsPort + "/0").build())
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("rediss://localhost:" + tlsPort + "/0")
                    .hasMessageNotContaining("not-the-password");
        }

        @Test
        @DisplayName("the ACL user cannot reach keys outside its namespaces")
        void aclKeepsTheUserInItsNamespace() {
            LockOptions outside = LockOptions.builder().namespace("other").build();
            try (LockProvider provider = RedisLockProviders.builder(client(USER, PASSWORD, 2_000))
                    .options(outside).build()) {
                assertThatThrownBy(() -> provider.getLock("x").tryLock())
                        .isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("NOPERM");
            }
        }

        @Test
        @DisplayName("the ACL user can inspect and force the release of a lock of its namespace")
        void aclAllowsInspectAndForceRelease() {
            LockOptions options = LockOptions.builder().namespace("lt" + TestRedis.freshNamespace()).build();
            try (LockProvider app = newProvider(options); LockProvider operator = newProvider(options)) {
                io.locksmith.DistributedLock lock = app.getLock("x");
                lock.lock();
                assertThat(operator.inspect("x").fencingToken()).hasValue(lock.fencingToken());
                assertThat(operator.forceRelease("x")).isTrue();
                assertThat(operator.inspect("x").isLocked()).isFalse();
                assertThatThrownBy(lock::unlock).isInstanceOf(io.locksmith.LockLostException.class);
            }
        }

        @Test
        @DisplayName("rediss:// refuses a server whose certificate the JVM does not trust")
        void untrustedCertificate() {
            assertThatThrownBy(() -> LockProvider.open("rediss://" + USER + ":" + PASSWORD + "@localhost:" + tlsPort,
                    LockOptions.builder().operationTimeout(java.time.Duration.ofSeconds(2)).build()))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("rediss://localhost:" + tlsPort + "/0")
                    .hasMessageNotContaining(PASSWORD);
        }

        @Test
        @DisplayName("plain connections to the TLS port are refused")
        void tlsOnly() {
            assertThatThrownBy(() -> LockProvider.open("redis://" + USER + ":" + PASSWORD + "@localhost:" + tlsPort,
                    LockOptions.builder().operationTimeout(java.time.Duration.ofSeconds(2)).build()))
                    .isInstanceOf(LockBackendException.class);
            assertThat(tlsPort).isNotEqualTo(server.port());
        }
    }

    @Override
    protected boolean runsPrimitives() {
        return false; // the same server as RedisContractTest, over TLS, which runs the primitives' groups
    }
}
