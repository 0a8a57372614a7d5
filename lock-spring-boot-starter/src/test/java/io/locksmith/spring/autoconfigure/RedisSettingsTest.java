package io.locksmith.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.springframework.mock.env.MockEnvironment;

/** spring.data.redis.* as lock-redis URIs. */
class RedisSettingsTest {

    private static String uri(MockEnvironment environment) {
        return RedisSettings.from(environment).uri();
    }

    @Test
    void hostPortDatabaseAndEncodedCredentials() {
        MockEnvironment environment = new MockEnvironment()
                .withProperty("spring.data.redis.host", "cache.internal")
                .withProperty("spring.data.redis.port", "6380")
                .withProperty("spring.data.redis.database", "3")
                .withProperty("spring.data.redis.username", "app")
                .withProperty("spring.data.redis.password", "p@ss:w/rd %");
        assertThat(uri(environment)).isEqualTo("redis://app:p%40ss%3Aw%2Frd%20%25@cache.internal:6380/3");
        assertThat(RedisSettings.isConfigured(environment)).isTrue();
    }

    @Test
    void sslAndIpv6AndThePasswordOnlyForm() {
        MockEnvironment environment = new MockEnvironment()
                .withProperty("spring.data.redis.host", "::1")
                .withProperty("spring.data.redis.password", "secret")
                .withProperty("spring.data.redis.ssl.enabled", "true");
        assertThat(uri(environment)).isEqualTo("rediss://:secret@[::1]:6379/0");
    }

    @Test
    void theUrlIsTakenAsItIsAndSslMakesItTls() {
        assertThat(uri(new MockEnvironment().withProperty("spring.data.redis.url", "redis://u:p@h:1/2")))
                .isEqualTo("redis://u:p@h:1/2");
        assertThat(uri(new MockEnvironment().withProperty("spring.data.redis.url", "redis://h:1")
                .withProperty("spring.data.redis.ssl.enabled", "true"))).isEqualTo("rediss://h:1");
        assertThatThrownBy(() -> uri(new MockEnvironment().withProperty("spring.data.redis.url", "http://h")))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("redis://");
        assertThatThrownBy(() -> uri(new MockEnvironment().withProperty("spring.data.redis.url",
                "redis://user:se cret@h"))).isInstanceOf(IllegalStateException.class)
                .hasMessageNotContaining("se cret");
    }

    @Test
    void defaultsAreBootsAndDoNotCountAsConfigured() {
        MockEnvironment environment = new MockEnvironment();
        assertThat(uri(environment)).isEqualTo("redis://localhost:6379/0");
        assertThat(RedisSettings.isConfigured(environment)).isFalse();
    }

    @Test
    void clusterAndSentinelAreRefusedSayingWhatToDo() {
        assertThatThrownBy(() -> uri(new MockEnvironment().withProperty("spring.data.redis.cluster.nodes",
                "a:1,b:2"))).isInstanceOf(IllegalStateException.class).hasMessageContaining("RedisClusterClient");
        assertThatThrownBy(() -> uri(new MockEnvironment().withProperty("spring.data.redis.sentinel.master",
                "main"))).isInstanceOf(IllegalStateException.class).hasMessageContaining("Sentinel");
    }
}
