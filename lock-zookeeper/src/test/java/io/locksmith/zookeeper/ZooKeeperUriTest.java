package io.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.zookeeper.ZooKeeperLockProviders.SuspendedPolicy;
import java.net.URI;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("zookeeper:// URIs")
class ZooKeeperUriTest {

    private static ZooKeeperUri parse(String text) {
        return ZooKeeperUri.parse(URI.create(text));
    }

    @Test
    @DisplayName("hosts with default ports, chroot, credentials and parameters")
    void parsesEverything() {
        ZooKeeperUri uri = parse("zookeeper://app:s%40cret@zk1,zk2:2182,10.0.0.3:2183/apps/orders"
                + "?sessionTimeoutMs=9000&connectionTimeoutMs=3000&suspendedPolicy=lost");
        assertThat(uri.hosts()).isEqualTo("zk1:2181,zk2:2182,10.0.0.3:2183");
        assertThat(uri.chroot()).isEqualTo("apps/orders");
        assertThat(uri.user()).isEqualTo("app");
        assertThat(uri.password()).isEqualTo("s@cret");
        assertThat(uri.sessionTimeoutMs()).hasValue(9000);
        assertThat(uri.connectionTimeoutMs()).hasValue(3000);
        assertThat(uri.suspendedPolicy()).isEqualTo(SuspendedPolicy.LOST);
        assertThat(uri.address()).isEqualTo("zookeeper://zk1:2181,zk2:2182,10.0.0.3:2183/apps/orders")
                .doesNotContain("cret");
        assertThat(uri.toString()).doesNotContain("cret");
    }

    @Test
    @DisplayName("the minimal form: one host, no chroot")
    void minimal() {
        ZooKeeperUri uri = parse("zookeeper://localhost");
        assertThat(uri.hosts()).isEqualTo("localhost:2181");
        assertThat(uri.chroot()).isNull();
        assertThat(uri.user()).isNull();
        assertThat(uri.sessionTimeoutMs()).isEmpty();
        assertThat(uri.suspendedPolicy()).isNull();
        assertThat(parse("zookeeper://localhost:2181/").chroot()).isNull();
        assertThat(parse("zookeeper://[::1]:2183").hosts()).isEqualTo("[::1]:2183");
        assertThat(parse("zookeeper://[::1]").hosts()).isEqualTo("[::1]:2181");
    }

    @Test
    @DisplayName("bad URIs are rejected with the problem and without the password")
    void rejectsBadUris() {
        assertThatThrownBy(() -> parse("zookeeper://u:hunter2@h:99999")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("99999").hasMessageNotContaining("hunter2");
        assertThatThrownBy(() -> parse("zookeeper://h1,,h2")).hasMessageContaining("host is missing");
        assertThatThrownBy(() -> parse("zookeeper://h/a//b")).hasMessageContaining("chroot");
        assertThatThrownBy(() -> parse("zookeeper://h/zookeeper/x")).hasMessageContaining("/zookeeper");
        assertThatThrownBy(() -> parse("zookeeper://h?sessionTimeoutMs=0")).hasMessageContaining("sessionTimeoutMs");
        assertThatThrownBy(() -> parse("zookeeper://h?suspendedPolicy=never")).hasMessageContaining("never");
        assertThatThrownBy(() -> parse("zookeeper://h?retries=3")).hasMessageContaining("unknown parameter 'retries'");
        assertThatThrownBy(() -> parse("zookeeper://:pw@h")).hasMessageContaining("user:password@");
        assertThatThrownBy(() -> parse("redis://h")).hasMessageContaining("scheme");
        // an unencoded '/' or '?' in the password ends the authority early; no part of it may show as host or port
        for (String uri : java.util.List.of("zookeeper://u:hun/ter2@h:2181/x", "zookeeper://u:hun?ter2@h")) {
            assertThatThrownBy(() -> parse(uri)).as(uri).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("percent-encode").hasMessageNotContaining("hun")
                    .hasMessageNotContaining("ter2");
        }
    }
}
