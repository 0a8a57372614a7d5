package io.locksmith.tests.servers;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** Plain TCP probes: free ports, "does it accept", and one-shot text exchanges. */
final class Tcp {

    private Tcp() {
    }

    /**
     * Returns a loopback port that was free a moment ago.
     *
     * <p>Another process may take it before the caller binds it; callers that start a server on it retry on a
     * new port when the bind fails.
     */
    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find a free loopback port", e);
        }
    }

    /** Connects to {@code host:port} within {@code timeout}, or throws why it could not. */
    static void connect(String host, int port, Duration timeout) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), Math.toIntExact(timeout.toMillis()));
        }
    }

    /** Sends {@code request} and returns everything the server writes until it closes the connection. */
    static String exchange(String host, int port, String request, Duration timeout) throws IOException {
        int millis = Math.toIntExact(timeout.toMillis());
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), millis);
            socket.setSoTimeout(millis);
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            InputStream in = socket.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
