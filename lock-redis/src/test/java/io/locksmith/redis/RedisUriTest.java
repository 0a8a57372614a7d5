package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisUri;
import io.locksmith.tests.servers.RedisServer;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("redis:// URIs")
class RedisUriTest {

    private static RedisUri parse(String uri) {
        return RedisUri.parse(URI.create(uri));
    }

    @Test
    @DisplayName("host, port, database, credentials and TLS are read; defaults are port 6379 and database 0")
    void parses() {
        assertThat(parse("redis://10.0.0.5")).isEqualTo(new RedisUri(false, "10.0.0.5", 6379, 0, null, null));
        assertThat(parse("redis://cache.internal:6380/3"))
                .isEqualTo(new RedisUri(false, "cache.internal", 6380, 3, null, null));
        assertThat(parse("rediss://app:s3cr%3At%40@h:7000/"))
                .isEqualTo(new RedisUri(true, "h", 7000, 0, "app", "s3cr:t@"));
        assertThat(parse("redis://:only-password@h")).isEqualTo(new RedisUri(false, "h", 6379, 0, null, "only-password"));
        assertThat(parse("redis://[::1]:6390/1")).isEqualTo(new RedisUri(false, "::1", 6390, 1, null, null));
        assertThat(parse("REDIS://h:1").port()).isEqualTo(1);
    }

    @Test
    @DisplayName("the address shown in messages never carries credentials")
    void addressHidesCredentials() {
        assertThat(parse("rediss://app:topsecret@h:7000/2").address()).isEqualTo("rediss://h:7000/2");
        assertThat(parse("redis://[::1]").address()).isEqualTo("redis://[::1]:6379/0");
    }

    @Test
    @DisplayName("bad port, missing host, bad database and other mistakes are one-line IllegalArgumentExceptions")
    void rejects() {
        assertRejected("redis://h:abc", "the port must be a number from 1 to 65535, got 'abc'");
        assertRejected("redis://h:0", "the port must be a number from 1 to 65535, got '0'");
        assertRejected("redis://h:65536", "got '65536'");
        assertRejected("redis://:6379", "the host is missing");
        assertRejected("redis:///0", "the host is missing");
        assertRejected("redis://user:pw@:6379", "the host is missing");
        assertRejected("redis://h:6379/db1", "the path must be a database number, as in redis://host:6379/0, got '/db1'");
        assertRejected("redis://h:6379/-1", "got '/-1'");
        assertRejected("redis://h:6379/0/1", "got '/0/1'");
        assertRejected("redis://h?timeout=5", "unknown query parameter 'timeout'");
        assertRejected("redis://h?fairness=lottery", "fairness must be bounded or fifo, got 'lottery'");
        assertRejected("redis://justuser@h", "credentials must be written user:password@ or :password@");
        assertRejected("redis://[::1:6379", null);
    }

    @Test
    @DisplayName("messages about a bad URI hide its password")
    void rejectionHidesPassword() {
        assertThatThrownBy(() -> parse("redis://app:topsecret@h:nope"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageNotContaining("topsecret")
                .hasMessageContaining("redis://***@h:nope");
        // a '/', '?' or '#' the password should have percent-encoded ends the authority early: the rest of the
        // password must not be shown as a port, a path or a query
        for (String uri : java.util.List.of("redis://app:top/secret@h:6379", "redis://app:top?secret@h",
                "redis://:top#secret@h", "rediss://app:to:p/se@cret@h/0")) {
            assertThatThrownBy(() -> parse(uri)).as(uri)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("percent-encode")
                    .hasMessageNotContaining("top").hasMessageNotContaining("secret").hasMessageNotContaining("cret");
        }
    }

    private static void assertRejected(String uri, String problem) {
        Throwable thrown;
        try {
            thrown = catchRejection(uri);
        } catch (IllegalArgumentException e) {
            thrown = e; // java.net.URI itself refuses it, as LockProvider.open does
        }
        assertThat(thrown).as(uri).isInstanceOf(IllegalArgumentException.class);
        assertThat(thrown.getMessage()).as("message for %s", uri).doesNotContain("\n");
        if (problem != null) {
            assertThat(thrown.getMessage()).as("message for %s", uri).contains(problem);
        }
    }

    private static Throwable catchRejection(String uri) {
        try {
            LockProvider.open(uri).close();
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }

    @Test
    @DisplayName("a database the server does not have is an IllegalArgumentException naming it")
    void unknownDatabase() {
        try (RedisServer server = RedisServer.start()) {
            assertThatThrownBy(() -> LockProvider.open("redis://" + server.host() + ":" + server.port() + "/99"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("database 99 does not exist")
                    .hasMessageNotContaining("\n");
            try (LockProvider provider = LockProvider.open("redis://" + server.host() + ":" + server.port() + "/15")) {
                assertThat(provider.backend()).isEqualTo("redis://" + server.host() + ":" + server.port() + "/15");
                assertThat(provider.getLock("in-db-15").tryLock()).isTrue();
                assertThat(new RedisAdmin(server).<Boolean>call(jedis -> {
                    jedis.select(15);
                    return jedis.exists("locksmith:{in-db-15}");
                })).as("the lock lives in database 15").isTrue();
            }
        }
    }

    @Test
    @DisplayName("a server that cannot be reached is a LockBackendException naming its address, within the timeout")
    void unreachable() throws Exception {
        int port;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        LockOptions options = LockOptions.builder().operationTimeout(Duration.ofMillis(500)).build();
        assertThatThrownBy(() -> LockProvider.open("redis://u:pw@127.0.0.1:" + port, options))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("redis://127.0.0.1:" + port + "/0")
                .hasMessageNotContaining("pw");
    }
}
