package io.locksmith.tests.servers;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Just enough of the Redis protocol (RESP2) to ask a server one question over a fresh socket.
 *
 * <p>The fixtures use it to see whether a server answers, without a Redis client library.
 */
final class Resp {

    /** An error reply from the server, such as {@code NOAUTH Authentication required.} or {@code LOADING ...}. */
    static final class ErrorReply extends IOException {

        private static final long serialVersionUID = 1L;

        ErrorReply(String message) {
            super(message);
        }
    }

    /** Credentials to send with {@code AUTH} before the command; {@code user} may be null for the default user. */
    record Credentials(String user, String password) {
    }

    private Resp() {
    }

    /**
     * Sends one command and returns its reply: a simple or bulk string, an integer as text, or null for a null reply.
     *
     * @param credentials null to send no {@code AUTH}
     * @throws ErrorReply when the server answers with an error
     */
    static String call(String host, int port, Duration timeout, Credentials credentials, String... command)
            throws IOException {
        int millis = Math.toIntExact(timeout.toMillis());
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), millis);
            socket.setSoTimeout(millis);
            OutputStream out = socket.getOutputStream();
            InputStream in = new BufferedInputStream(socket.getInputStream());
            if (credentials != null) {
                write(out, credentials.user() == null
                        ? new String[] {"AUTH", credentials.password()}
                        : new String[] {"AUTH", credentials.user(), credentials.password()});
                read(in);
            }
            write(out, command);
            return read(in);
        }
    }

    private static void write(OutputStream out, String... command) throws IOException {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        buffer.write(("*" + command.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (String argument : command) {
            byte[] bytes = argument.getBytes(StandardCharsets.UTF_8);
            buffer.write(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            buffer.write(bytes);
            buffer.write("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        out.write(buffer.toByteArray());
        out.flush();
    }

    private static String read(InputStream in) throws IOException {
        String line = readLine(in);
        if (line.isEmpty()) {
            throw new IOException("Empty reply line");
        }
        String rest = line.substring(1);
        switch (line.charAt(0)) {
            case '+':
            case ':':
                return rest;
            case '-':
                throw new ErrorReply(rest);
            case '$':
                int length = Integer.parseInt(rest);
                if (length < 0) {
                    return null;
                }
                byte[] data = in.readNBytes(length + 2);
                if (data.length != length + 2) {
                    throw new IOException("Connection closed inside a bulk reply");
                }
                return new String(data, 0, length, StandardCharsets.UTF_8);
            default:
                throw new IOException("Unsupported reply type: " + line);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int previous = -1;
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("Connection closed before a full reply");
            }
            if (previous == '\r' && b == '\n') {
                byte[] bytes = line.toByteArray();
                return new String(bytes, 0, bytes.length - 1, StandardCharsets.UTF_8);
            }
            line.write(b);
            previous = b;
        }
    }
}
