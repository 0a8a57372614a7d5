package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.KeyStore;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The sockets under which PostgreSQL notifications arrive without the driver's millisecond: a read with a 1 ms
 * timeout is a look that fails at once when nothing was received and reads what was; every other read is the plain
 * socket's. The last test checks against the real driver and server that pgjdbc still looks with 1 ms after a
 * notification, which is what the factory is for. Nothing here measures time.
 */
@DisplayName("PromptNotificationSocketFactory")
class PromptNotificationSocketFactoryTest {

    private final PromptNotificationSocketFactory factory = new PromptNotificationSocketFactory();
    private ServerSocket server;
    private Socket client;
    private Socket accepted;

    @BeforeEach
    void connect() throws IOException {
        server = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        client = factory.createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        accepted = server.accept();
    }

    @AfterEach
    void close() throws IOException {
        for (AutoCloseable closeable : new AutoCloseable[] {client, accepted, server}) {
            try {
                closeable.close();
            } catch (Exception e) {
                // already closed by the test
            }
        }
    }

    @Test
    @DisplayName("a read with a 1 ms timeout and nothing received fails as a look, at once")
    void lookWithNothingReceivedFails() throws IOException {
        client.setSoTimeout(PromptNotificationSocketFactory.PEEK_MILLIS);
        long looks = PromptNotificationSocketFactory.LOOKS_ANSWERED.sum();
        InputStream input = client.getInputStream();

        assertThatThrownBy(input::read).isInstanceOf(SocketTimeoutException.class)
                .hasMessage(PromptNotificationSocketFactory.NOTHING_RECEIVED);
        assertThatThrownBy(() -> input.read(new byte[8], 0, 8)).isInstanceOf(SocketTimeoutException.class)
                .hasMessage(PromptNotificationSocketFactory.NOTHING_RECEIVED);
        assertThat(PromptNotificationSocketFactory.LOOKS_ANSWERED.sum() - looks).isGreaterThanOrEqualTo(2);

        // the socket stays usable: what comes afterwards is read
        client.setSoTimeout(10_000);
        accepted.getOutputStream().write(7);
        assertThat(input.read()).isEqualTo(7);
    }

    @Test
    @DisplayName("a read with a 1 ms timeout reads what was received")
    void lookReadsWhatArrived() throws IOException {
        OutputStream output = accepted.getOutputStream();
        output.write(new byte[] {1, 2, 3}); // one write: the three bytes arrive together
        output.flush();
        InputStream input = client.getInputStream();
        client.setSoTimeout(10_000);
        assertThat(input.read()).isEqualTo(1); // waits for the bytes

        client.setSoTimeout(PromptNotificationSocketFactory.PEEK_MILLIS);
        assertThat(input.read()).isEqualTo(2);
        byte[] rest = new byte[4];
        assertThat(input.read(rest, 0, 4)).isEqualTo(1);
        assertThat(rest[0]).isEqualTo((byte) 3);
    }

    @Test
    @DisplayName("a read with any other timeout is the plain socket's")
    void otherTimeoutsWaitAsThePlainSocket() throws IOException {
        client.setSoTimeout(20);
        assertThatThrownBy(client.getInputStream()::read).isInstanceOf(SocketTimeoutException.class)
                .extracting(Throwable::getMessage).isNotEqualTo(PromptNotificationSocketFactory.NOTHING_RECEIVED);
    }

    @Test
    @DisplayName("every way of creating a socket connects it (the driver creates it unconnected)")
    void everyCreateConnects() throws IOException {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        int port = server.getLocalPort();
        try (Socket byName = factory.createSocket(loopback.getHostAddress(), port);
             Socket byNameFromLocal = factory.createSocket(loopback.getHostAddress(), port, loopback, 0);
             Socket byAddressFromLocal = factory.createSocket(loopback, port, loopback, 0);
             Socket unconnected = factory.createSocket()) {
            assertThat(byName.isConnected()).isTrue();
            assertThat(byNameFromLocal.isConnected()).isTrue();
            assertThat(byAddressFromLocal.isConnected()).isTrue();
            assertThat(unconnected.isConnected()).isFalse();
        }
    }

    @Test
    @DisplayName("with TLS layered over the socket, as the driver layers it, looks are answered at once and the "
            + "connection stays usable")
    void tlsLayeredOverTheSocket() throws Exception {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        char[] password = "prompt-tls".toCharArray();
        try (InputStream file = getClass().getResourceAsStream("/prompt-tls.p12")) {
            keys.load(file, password); // a self-signed certificate for localhost, valid until 2126
        }
        KeyManagerFactory keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keyManagers.init(keys, password);
        TrustManagerFactory trustManagers = TrustManagerFactory.getInstance(
                TrustManagerFactory.getDefaultAlgorithm());
        trustManagers.init(keys);
        // TLS 1.2: no session tickets after the handshake, so that nothing arrives before the server writes
        SSLContext tls = SSLContext.getInstance("TLSv1.2");
        tls.init(keyManagers.getKeyManagers(), trustManagers.getTrustManagers(), null);
        try (SSLServerSocket tlsServer = (SSLServerSocket) tls.getServerSocketFactory().createServerSocket(0, 4,
                InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> serving = CompletableFuture.runAsync(() -> {
                try (Socket peer = tlsServer.accept()) {
                    InputStream in = peer.getInputStream();
                    OutputStream out = peer.getOutputStream();
                    in.read(); // the client's first byte: only then is anything sent
                    out.write(new byte[] {42, 43}); // one record
                    out.flush();
                    in.read();
                    out.write(44);
                    out.flush();
                    try {
                        in.read(); // until the client closes
                    } catch (IOException e) {
                        // the client went
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            Socket plain = factory.createSocket();
            plain.connect(tlsServer.getLocalSocketAddress(), 10_000);
            try (SSLSocket layered = (SSLSocket) tls.getSocketFactory().createSocket(plain, "localhost",
                    tlsServer.getLocalPort(), true)) {
                layered.setSoTimeout(10_000);
                layered.startHandshake();
                InputStream input = layered.getInputStream();
                OutputStream output = layered.getOutputStream();

                layered.setSoTimeout(PromptNotificationSocketFactory.PEEK_MILLIS);
                assertThatThrownBy(input::read).isInstanceOf(SocketTimeoutException.class)
                        .hasMessage(PromptNotificationSocketFactory.NOTHING_RECEIVED);

                output.write(1);
                output.flush();
                layered.setSoTimeout(10_000);
                assertThat(input.read()).isEqualTo(42);
                layered.setSoTimeout(PromptNotificationSocketFactory.PEEK_MILLIS);
                assertThat(input.read()).as("what the record brought, read by a look").isEqualTo(43);
                assertThatThrownBy(input::read).isInstanceOf(SocketTimeoutException.class)
                        .hasMessage(PromptNotificationSocketFactory.NOTHING_RECEIVED);

                output.write(2);
                output.flush();
                layered.setSoTimeout(10_000);
                assertThat(input.read()).as("a read after the looks").isEqualTo(44);
            }
            serving.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    @DisplayName("pgjdbc looks with a 1 ms read after a notification, and the notification arrives whole")
    void theDriverLooksAfterANotification() throws SQLException {
        JdbcTarget target = JdbcTarget.POSTGRES;
        Properties properties = new Properties();
        properties.setProperty("user", target.user());
        properties.setProperty("password", target.password());
        properties.setProperty("socketFactory", PromptNotificationSocketFactory.class.getName());
        String channel = "prompt_" + Long.toHexString(System.nanoTime());
        try (Connection listening = DriverManager.getConnection(target.jdbcUrl(), properties);
             Connection notifying = target.admin().getConnection();
             Statement listen = listening.createStatement();
             Statement notify = notifying.createStatement()) {
            listen.execute("LISTEN " + channel);
            notify.execute("SELECT pg_notify('" + channel + "', 'payload')");
            long looks = PromptNotificationSocketFactory.LOOKS_ANSWERED.sum();

            PGNotification[] received = listening.unwrap(PGConnection.class).getNotifications(30_000);

            assertThat(received).hasSize(1);
            assertThat(received[0].getName()).isEqualTo(channel);
            assertThat(received[0].getParameter()).isEqualTo("payload");
            assertThat(PromptNotificationSocketFactory.LOOKS_ANSWERED.sum() - looks)
                    .as("the driver's looks this factory answered at once").isPositive();
            // the connection still runs statements as usual
            assertThat(listen.execute("SELECT 1")).isTrue();
        }
    }
}
