package io.locksmith.tests.servers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RedisServer fixture (own redis-server processes)")
class RedisServerTest {

    @Test
    @DisplayName("starts its own redis-server that answers PING")
    void startsOwnServer() throws IOException {
        try (RedisServer server = RedisServer.start()) {
            assertThat(server.isControllable()).isTrue();
            assertThat(server.uri()).isEqualTo("redis://127.0.0.1:" + server.port());
            assertThat(server.host()).isEqualTo("127.0.0.1");
            assertThat(server.toString()).startsWith("local redis-server ").contains("own process, pid ");
            assertThat(command(server, "PING")).isEqualTo("+PONG");
        }
    }

    @Test
    @DisplayName("kill refuses connections; restart answers again on the same port")
    void killAndRestart() throws IOException {
        try (RedisServer server = RedisServer.start()) {
            int port = server.port();
            assertThat(command(server, "SET", "k", "v")).isEqualTo("+OK");

            server.kill();
            assertThatThrownBy(() -> command(server, "PING")).isInstanceOf(ConnectException.class);

            server.restart();
            assertThat(server.port()).isEqualTo(port);
            assertThat(command(server, "PING")).isEqualTo("+PONG");
            assertThat(command(server, "EXISTS", "k")).as("no persistence: restarted empty").isEqualTo(":0");
        }
    }

    @Test
    @DisplayName("pause (SIGSTOP) leaves a read unanswered; resume answers again")
    void pauseAndResume() throws IOException {
        try (RedisServer server = RedisServer.start()) {
            server.pause();
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(server.host(), server.port()), 2000);
                socket.setSoTimeout(300);
                socket.getOutputStream().write(resp("PING"));
                assertThatThrownBy(() -> socket.getInputStream().read())
                        .isInstanceOf(SocketTimeoutException.class);
            }

            server.resume();
            assertThat(command(server, "PING")).isEqualTo("+PONG");
        }
    }

    @Test
    @DisplayName("restart after pause brings the server back")
    void restartWhilePaused() throws IOException {
        try (RedisServer server = RedisServer.start()) {
            server.pause();
            server.restart();
            assertThat(command(server, "PING")).isEqualTo("+PONG");
        }
    }

    @Test
    @DisplayName("starts five independent servers, as Redlock needs")
    void startsIndependentServers() throws IOException {
        List<RedisServer> servers = RedisServer.startIndependent(5);
        try {
            assertThat(servers).hasSize(5);
            assertThat(servers.stream().map(RedisServer::port).collect(Collectors.toSet())).hasSize(5);
            assertThat(command(servers.get(0), "SET", "only-here", "1")).isEqualTo("+OK");
            for (RedisServer server : servers.subList(1, 5)) {
                assertThat(command(server, "EXISTS", "only-here")).isEqualTo(":0");
            }
            servers.get(2).kill();
            assertThat(command(servers.get(3), "PING")).as("killing one leaves the others").isEqualTo("+PONG");
        } finally {
            servers.forEach(RedisServer::close);
        }
    }

    @Test
    @DisplayName("passes extra arguments to redis-server")
    void passesExtraArgs() throws IOException {
        try (RedisServer server = RedisServer.start("--requirepass", "s3cret")) {
            assertThat(command(server, "PING")).startsWith("-NOAUTH");
            assertThat(command(server, "AUTH", "s3cret")).isEqualTo("+OK");
        }
    }

    @Test
    @DisplayName("close stops the server")
    void closeStops() throws IOException {
        RedisServer server = RedisServer.start();
        assertThat(command(server, "PING")).isEqualTo("+PONG");
        server.close();
        assertThatThrownBy(() -> command(server, "PING")).isInstanceOf(ConnectException.class);
        server.close();
    }

    @Test
    @DisplayName("uses a given address, and refuses to kill, pause or restart it")
    void usesGivenAddress() throws IOException {
        try (RedisServer own = RedisServer.start()) {
            Settings settings = Settings.of(Map.of("locksmith.redis.uri", own.uri()));
            RedisServer given = RedisServer.start(settings, 1, List.of()).get(0);

            assertThat(given.isControllable()).isFalse();
            assertThat(given.uri()).isEqualTo(own.uri());
            assertThat(given.toString()).contains("from -Dlocksmith.redis.uri");
            assertThat(command(given, "PING")).isEqualTo("+PONG");
            assertThatThrownBy(given::kill)
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("-Dlocksmith.redis.uri")
                    .hasMessageContaining("isControllable()");
            assertThatThrownBy(given::pause).isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(given::restart).isInstanceOf(UnsupportedOperationException.class);

            given.close();
            assertThat(command(own, "PING")).as("closing a given server leaves it running").isEqualTo("+PONG");
        }
    }

    @Test
    @DisplayName("explains in one line what is wrong with given settings")
    void explainsBadSettings() {
        assertOneLineFailure(Map.of("locksmith.redis.uri", "http://example.org"), 1, List.of(),
                "-Dlocksmith.redis.uri holds http://example.org, which is not of the form redis://");
        assertOneLineFailure(Map.of("locksmith.redis.uri", "redis://127.0.0.1:6390"), 5, List.of(),
                "The tests need 5 independent Redis servers but -Dlocksmith.redis.uri names 1");
        assertOneLineFailure(Map.of("locksmith.redis.uri", "redis://127.0.0.1:6390"), 1, List.of("--port", "0"),
                "Cannot start Redis with [--port, 0]");
        assertOneLineFailure(Map.of("locksmith.redis.server", "/nonexistent/redis-server"), 1, List.of(),
                "-Dlocksmith.redis.server=/nonexistent/redis-server is not an executable file");
        int closedPort = Tcp.freePort();
        assertOneLineFailure(Map.of("locksmith.redis.uri", "redis://user:pw@127.0.0.1:" + closedPort), 1, List.of(),
                "-Dlocksmith.redis.uri names redis://***@127.0.0.1:" + closedPort + " but it does not answer PING");
    }

    private static void assertOneLineFailure(Map<String, String> properties, int count, List<String> extraArgs,
                                             String expected) {
        assertThatThrownBy(() -> RedisServer.start(Settings.of(properties), count, extraArgs))
                .isInstanceOf(ServerUnavailableException.class)
                .hasMessageContaining(expected)
                .hasMessageNotContaining("\n")
                .hasMessageNotContaining("pw@");
    }

    /** Sends one command over a raw socket and returns the first reply line, e.g. {@code +PONG}. */
    private static String command(RedisServer server, String... args) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(server.host(), server.port()), 2000);
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(resp(args));
            BufferedReader reader = new BufferedReader(
                    new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            return reader.readLine();
        }
    }

    private static byte[] resp(String... args) {
        StringBuilder out = new StringBuilder("*").append(args.length).append("\r\n");
        for (String arg : args) {
            byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
            out.append('$').append(bytes.length).append("\r\n").append(arg).append("\r\n");
        }
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }
}
