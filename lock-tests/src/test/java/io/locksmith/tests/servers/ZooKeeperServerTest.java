package io.locksmith.tests.servers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("ZooKeeperServer fixture (in-JVM TestingServer, or in its own process)")
class ZooKeeperServerTest {

    @Test
    @DisplayName("starts an in-JVM server that stores a znode")
    void startsInJvmServer() throws Exception {
        try (ZooKeeperServer server = ZooKeeperServer.start();
             CuratorFramework client = connect(server.connectString())) {
            assertThat(server.isControllable()).isTrue();
            assertThat(server.toString()).startsWith("in-JVM ZooKeeper 3.");

            client.create().forPath("/fixture", "hello".getBytes(StandardCharsets.UTF_8));
            assertThat(new String(client.getData().forPath("/fixture"), StandardCharsets.UTF_8)).isEqualTo("hello");
        }
    }

    @Test
    @DisplayName("kill refuses connections; restart serves the same data on the same port")
    void killAndRestart() throws Exception {
        try (ZooKeeperServer server = ZooKeeperServer.start()) {
            String connectString = server.connectString();
            try (CuratorFramework client = connect(connectString)) {
                client.create().forPath("/before-kill");
            }

            server.kill();
            assertThatThrownBy(() -> openSocket(connectString)).isInstanceOf(ConnectException.class);

            server.restart();
            assertThat(server.connectString()).isEqualTo(connectString);
            try (CuratorFramework client = connect(connectString)) {
                assertThat(client.checkExists().forPath("/before-kill")).isNotNull();
            }
        }
    }

    @Test
    @DisplayName("own process: kill -9 refuses connections; restart serves the same data on the same port")
    void processKillAndRestart() throws Exception {
        try (ZooKeeperServer server = ZooKeeperServer.startProcess()) {
            assertThat(server.isControllable()).isTrue();
            assertThat(server.toString()).startsWith("ZooKeeper 3.").contains("in its own JVM", "own process, pid ");
            String connectString = server.connectString();
            try (CuratorFramework client = connect(connectString)) {
                client.create().forPath("/before-kill", "kept".getBytes(StandardCharsets.UTF_8));
            }

            server.kill();
            assertThatThrownBy(() -> openSocket(connectString)).isInstanceOf(ConnectException.class);

            server.restart();
            assertThat(server.connectString()).isEqualTo(connectString);
            try (CuratorFramework client = connect(connectString)) {
                assertThat(new String(client.getData().forPath("/before-kill"), StandardCharsets.UTF_8))
                        .isEqualTo("kept");
            }
        }
    }

    @Test
    @DisplayName("own process: pause (SIGSTOP) leaves a request unanswered; resume serves again")
    void processPauseAndResume() throws Exception {
        try (ZooKeeperServer server = ZooKeeperServer.startProcess()) {
            String connectString = server.connectString();
            int colon = connectString.lastIndexOf(':');
            server.pause();
            try {
                assertThatThrownBy(() -> Tcp.exchange(connectString.substring(0, colon),
                        Integer.parseInt(connectString.substring(colon + 1)), "ruok", Duration.ofMillis(300)))
                        .isInstanceOf(SocketTimeoutException.class);
            } finally {
                server.resume();
            }
            try (CuratorFramework client = connect(connectString)) {
                client.create().forPath("/after-resume");
            }
        }
    }

    @Test
    @DisplayName("in-JVM server: pause is refused, saying why")
    void inJvmServerCannotPause() {
        try (ZooKeeperServer server = ZooKeeperServer.start()) {
            assertThatThrownBy(server::pause).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("cannot be paused");
        }
    }

    @Test
    @DisplayName("uses a given connect string, and refuses to kill or restart it")
    void usesGivenConnectString() throws Exception {
        try (ZooKeeperServer own = ZooKeeperServer.start()) {
            ZooKeeperServer given = ZooKeeperServer.start(
                    Settings.of(Map.of("locksmith.zookeeper", own.connectString())));

            assertThat(given.isControllable()).isFalse();
            assertThat(given.connectString()).isEqualTo(own.connectString());
            assertThat(given.toString()).contains("from -Dlocksmith.zookeeper");
            assertThatThrownBy(given::kill)
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("-Dlocksmith.zookeeper");
            assertThatThrownBy(given::restart).isInstanceOf(UnsupportedOperationException.class);

            given.close();
            try (CuratorFramework client = connect(given.connectString())) {
                client.create().forPath("/given");
            }
        }
    }

    @Test
    @DisplayName("explains in one line that a given connect string does not answer")
    void explainsUnreachableConnectString() {
        String address = "127.0.0.1:" + Tcp.freePort();
        assertThatThrownBy(() -> ZooKeeperServer.start(Settings.of(Map.of("locksmith.zookeeper", address))))
                .isInstanceOf(ServerUnavailableException.class)
                .hasMessageContaining("-Dlocksmith.zookeeper names " + address + " but no member accepts connections")
                .hasMessageNotContaining("\n");
    }

    /** Returns a started client that is connected, retrying operations across short outages. */
    static CuratorFramework connect(String connectString) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(connectString, 15_000, 5_000,
                new RetryNTimes(100, 200));
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            client.close();
            throw new AssertionError("Could not connect to ZooKeeper at " + connectString + " within 60 s");
        }
        return client;
    }

    /** Opens and closes a plain TCP connection to a {@code host:port} member. */
    static void openSocket(String member) throws Exception {
        int colon = member.lastIndexOf(':');
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(member.substring(0, colon),
                    Integer.parseInt(member.substring(colon + 1))), 2000);
        }
    }
}
