package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;

@DisplayName("redlock:// URIs and the builder's checks")
class RedlockUriTest {

    @Test
    @DisplayName("nodes with their own credentials, ports, database, TLS and node timeout")
    void parses() {
        RedlockUri uri = RedlockUri.parse(URI.create(
                "redlocks://app:s%40cret@h1:7000,:pw@h2,h3:7002/2?nodeTimeout=40ms"));
        assertThat(uri.nodes()).hasSize(3);
        assertThat(uri.nodes().get(0).user()).isEqualTo("app");
        assertThat(uri.nodes().get(0).password()).isEqualTo("s@cret");
        assertThat(uri.nodes().get(1).user()).isNull();
        assertThat(uri.nodes().get(1).password()).isEqualTo("pw");
        assertThat(uri.nodes().get(1).port()).isEqualTo(6379);
        assertThat(uri.nodes()).allMatch(n -> n.tls() && n.database() == 2);
        assertThat(uri.nodeTimeout()).isEqualTo(Duration.ofMillis(40));
        assertThat(uri.address()).isEqualTo("redlocks://h1:7000,h2:6379,h3:7002/2").doesNotContain("cret");
    }

    @Test
    @DisplayName("bad URIs are rejected naming the problem, credentials hidden")
    void rejects() {
        assertThatThrownBy(() -> RedlockUri.parse(URI.create("redlock://a:secret@h1:99999,h2,h3")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("node 1")
                .hasMessageContaining("port").hasMessageNotContaining("secret");
        assertThatThrownBy(() -> RedlockUri.parse(URI.create("redlock://h1,,h3")))
                .hasMessageContaining("empty node");
        assertThatThrownBy(() -> RedlockUri.parse(URI.create("redlock://h1,h2,h3?timeout=5")))
                .hasMessageContaining("unknown parameter 'timeout'");
        assertThatThrownBy(() -> RedlockUri.parse(URI.create("redlock://h1,h2,h3?nodeTimeout=fast")))
                .hasMessageContaining("nodeTimeout");
        // an unencoded '/' in a password ends the node list early; no part of it may show
        assertThatThrownBy(() -> RedlockUri.parse(URI.create("redlock://a:sec/ret@h1,a:sec/ret@h2,h3")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("percent-encode")
                .hasMessageNotContaining("sec").hasMessageNotContaining("ret@");
    }

    @Test
    @DisplayName("fewer than 3 masters, or a node timeout not smaller than the lease, are rejected at build time")
    void builderChecks() {
        try (RedisClient one = RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", 1)).build();
                RedisClient two = RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", 2)).build();
                RedisClient three = RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", 3)).build()) {
            assertThatThrownBy(() -> RedlockProviders.builder(one, two).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 3")
                    .hasMessageContaining("got 2");
            assertThatThrownBy(() -> RedlockProviders.builder(one, two, three)
                    .options(LockOptions.builder().leaseTime(Duration.ofMillis(100)).build())
                    .nodeTimeout(Duration.ofMillis(100)).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("much smaller than the lease");
        }
        assertThatThrownBy(() -> LockProvider.open("redlock://h1:6379,h2:6379"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 3");
    }
}
