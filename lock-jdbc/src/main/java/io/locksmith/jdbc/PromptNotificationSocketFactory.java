package io.locksmith.jdbc;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.concurrent.atomic.LongAdder;
import javax.net.SocketFactory;

/**
 * A {@code socketFactory} for the PostgreSQL JDBC driver under which {@code LISTEN}/{@code NOTIFY} wake-ups arrive
 * without the driver's millisecond: plain TCP sockets on which a read with a socket timeout of exactly 1 ms fails at
 * once when nothing has been received, instead of waiting out the millisecond.
 *
 * <p>pgjdbc (42.7) returns from {@code PGConnection.getNotifications(timeout)} only after it has asked whether another
 * message is pending, and it asks by reading with a socket timeout of 1 ms. So every notification reaches the
 * listening thread a millisecond, and the scheduling around it, after it arrived: from the notifying statement's
 * answer to the listener's, 1.1–1.2 ms on an idle machine with the driver's own sockets, 0.07 ms with these. In
 * lease mode on PostgreSQL that millisecond lies on the path of every hand-off from one process to another (see
 * docs/jdbc.md, "Wake-ups on PostgreSQL").
 *
 * <p>The pools of the {@code jdbc:postgresql:} URI form use it unless the URL names a {@code socketFactory} of its
 * own. With a pool of your own, add {@code socketFactory=io.locksmith.jdbc.PromptNotificationSocketFactory} to its
 * PostgreSQL URL (or data source properties). The 1 ms read is the driver's look whether a message is already there,
 * which a non-blocking look answers as well: a message that comes just after it is read by the listener's next,
 * blocking, read. Reads with any other timeout, those of every statement among them, are the plain socket's, and TLS
 * still works, since the driver layers it over this socket. The one difference an application could see: a network
 * timeout of exactly 1 ms ({@code Connection.setNetworkTimeout}) no longer lets an answer that comes within that
 * millisecond through; Locksmith itself never sets one below 2 ms.
 */
public final class PromptNotificationSocketFactory extends SocketFactory {

    /** The socket timeout, in milliseconds, with which pgjdbc looks whether a message is pending. */
    static final int PEEK_MILLIS = 1;
    /** The message of the timeout a look whether a message is pending fails with. */
    static final String NOTHING_RECEIVED = "nothing received yet (a look whether a message is pending)";
    /** Looks answered at once, by every socket of this class: tells a test that the driver still looks so. */
    static final LongAdder LOOKS_ANSWERED = new LongAdder();

    /** Created by the driver from its class name. */
    public PromptNotificationSocketFactory() {
    }

    @Override
    public Socket createSocket() {
        return new PromptSocket();
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        return connect(new InetSocketAddress(host, port), null);
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        return connect(new InetSocketAddress(host, port), new InetSocketAddress(localHost, localPort));
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        return connect(new InetSocketAddress(host, port), null);
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
            throws IOException {
        return connect(new InetSocketAddress(address, port), new InetSocketAddress(localAddress, localPort));
    }

    private static Socket connect(InetSocketAddress remote, InetSocketAddress local) throws IOException {
        Socket socket = new PromptSocket();
        try {
            if (local != null) {
                socket.bind(local);
            }
            socket.connect(remote);
            return socket;
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /** A plain socket whose input fails a read with a 1 ms timeout at once when nothing has been received. */
    private static final class PromptSocket extends Socket {
        /** The socket timeout last set, in milliseconds; read by the thread that reads. */
        private volatile int timeoutMillis;
        private InputStream input;

        @Override
        public void setSoTimeout(int timeout) throws SocketException {
            super.setSoTimeout(timeout);
            timeoutMillis = timeout;
        }

        @Override
        public synchronized InputStream getInputStream() throws IOException {
            if (input == null) {
                input = new PromptInput(super.getInputStream());
            }
            return input;
        }

        private final class PromptInput extends FilterInputStream {
            PromptInput(InputStream in) {
                super(in);
            }

            @Override
            public int read() throws IOException {
                lookOnly();
                return in.read();
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                lookOnly();
                return in.read(b, off, len);
            }

            /** Fails a read that is only a look whether a message is pending, when nothing has been received. */
            private void lookOnly() throws IOException {
                if (timeoutMillis == PEEK_MILLIS && in.available() == 0) {
                    LOOKS_ANSWERED.increment();
                    throw new SocketTimeoutException(NOTHING_RECEIVED);
                }
            }
        }
    }
}
