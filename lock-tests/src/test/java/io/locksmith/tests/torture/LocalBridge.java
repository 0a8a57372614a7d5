package io.locksmith.tests.torture;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.local.LocalLockServer;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockProviderFactory;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import io.locksmith.spi.RenewResult;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * Serves a {@link LocalLockServer} of this JVM to other processes over a loopback socket, so that the torture runner's
 * separate worker JVMs can share the reference backend: every lock decision is still the local server's, the bridge
 * only carries the {@link LockStore} calls and the release wake-ups. Test-only; workers open it with
 * {@code TortureRun.Builder.providerFactory(LocalBridge.Factory.class)} and the URI {@link #uri()}.
 *
 * <p>A decorator may wrap the server's store before the bridge serves it, to torture a deliberately broken backend.
 */
final class LocalBridge implements AutoCloseable {

    private static final byte REQUESTS = 'R';
    private static final byte EVENTS = 'E';
    private static final byte ACQUIRE = 1;
    private static final byte RELEASE = 2;
    private static final byte RENEW = 3;
    private static final byte IS_LOCKED = 4;
    private static final byte FORCE_RELEASE = 5;
    private static final byte SUBSCRIBE = 6;
    private static final byte UNSUBSCRIBE = 7;
    private static final byte ACQUIRE_SHARED = 8;
    private static final byte OK = 0;
    private static final byte BACKEND_ERROR = 1;
    private static final byte OTHER_ERROR = 2;

    private final LocalLockServer server;
    private final UnaryOperator<LockStore<?>> decorator;
    private final ServerSocket socket;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();

    private LocalBridge(LocalLockServer server, UnaryOperator<LockStore<?>> decorator) throws IOException {
        this.server = server;
        this.decorator = decorator;
        this.socket = new ServerSocket(0, 100, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "local-bridge-accept-" + socket.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** Serves {@code server} as it is. */
    static LocalBridge serve(LocalLockServer server) {
        return serve(server, UnaryOperator.identity());
    }

    /** Serves {@code server} through stores wrapped by {@code decorator}. */
    static LocalBridge serve(LocalLockServer server, UnaryOperator<LockStore<?>> decorator) {
        try {
            return new LocalBridge(server, decorator);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the local bridge", e);
        }
    }

    /** The URI workers open with {@link Factory}. */
    String uri() {
        return "localbridge://127.0.0.1:" + socket.getLocalPort();
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // closing anyway
        }
        for (Socket s : connections) {
            closeQuietly(s);
        }
    }

    private void accept() {
        while (!socket.isClosed()) {
            Socket s;
            try {
                s = socket.accept();
            } catch (IOException e) {
                return;
            }
            connections.add(s);
            Thread t = new Thread(() -> serve(s), "local-bridge-conn");
            t.setDaemon(true);
            t.start();
        }
    }

    private void serve(Socket s) {
        List<LockStore.Subscription> subscriptions = new ArrayList<>();
        try (s) {
            s.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            byte kind = in.readByte();
            String namespace = in.readUTF();
            Duration timeout = Duration.ofMillis(in.readLong());
            LockStore<?> store = decorator.apply(server.newStore(LockOptions.builder().namespace(namespace)
                    .operationTimeout(timeout).build()));
            if (kind == REQUESTS) {
                while (true) {
                    answer(in.readByte(), in, out, store);
                    out.flush();
                }
            } else if (kind == EVENTS) {
                events(in, out, store, subscriptions);
            }
        } catch (IOException e) {
            // the client went away (closed, killed): its subscriptions go with it
        } finally {
            subscriptions.forEach(LockStore.Subscription::close);
            connections.remove(s);
        }
    }

    private static <H> void answer(byte op, DataInputStream in, DataOutputStream out, LockStore<H> store)
            throws IOException {
        try {
            switch (op) {
                case ACQUIRE, ACQUIRE_SHARED -> {
                    String name = in.readUTF();
                    String owner = in.readUTF();
                    H hold;
                    if (op == ACQUIRE_SHARED) {
                        String ownWrite = in.readUTF();
                        hold = store.newSharedHold(name, owner, ownWrite.isEmpty() ? null
                                : store.newHold(name, ownWrite));
                    } else {
                        hold = store.newHold(name, owner);
                    }
                    Acquisition a = store.tryAcquire(hold, Duration.ofNanos(in.readLong()),
                            Duration.ofNanos(in.readLong()), null);
                    out.writeByte(OK);
                    out.writeBoolean(a.isAcquired());
                    out.writeLong(a.fencingToken());
                    out.writeLong(a.retryAfter().map(Duration::toNanos).orElse(-1L));
                }
                case RELEASE -> {
                    boolean released = store.release(store.newHold(in.readUTF(), in.readUTF()));
                    out.writeByte(OK);
                    out.writeBoolean(released);
                }
                case RENEW -> {
                    int count = in.readInt();
                    List<H> holds = new ArrayList<>(count);
                    for (int i = 0; i < count; i++) {
                        holds.add(store.newHold(in.readUTF(), in.readUTF()));
                    }
                    Set<H> gone = store.renew(holds, Duration.ofNanos(in.readLong())).gone();
                    out.writeByte(OK);
                    out.writeInt(gone.size());
                    for (int i = 0; i < count; i++) {
                        if (gone.contains(holds.get(i))) {
                            out.writeInt(i);
                        }
                    }
                }
                case IS_LOCKED -> {
                    boolean locked = store.isLocked(in.readUTF());
                    out.writeByte(OK);
                    out.writeBoolean(locked);
                }
                case FORCE_RELEASE -> {
                    boolean released = store.forceRelease(in.readUTF());
                    out.writeByte(OK);
                    out.writeBoolean(released);
                }
                default -> throw new IOException("unknown bridge operation " + op);
            }
        } catch (LockBackendException e) {
            out.writeByte(BACKEND_ERROR);
            out.writeUTF(String.valueOf(e.getMessage()));
        } catch (RuntimeException e) {
            out.writeByte(OTHER_ERROR);
            out.writeUTF(e.toString());
        }
    }

    private static void events(DataInputStream in, DataOutputStream out, LockStore<?> store,
                               List<LockStore.Subscription> subscriptions) throws IOException {
        LinkedBlockingQueue<Long> wakeUps = new LinkedBlockingQueue<>();
        Map<Long, LockStore.Subscription> byId = new ConcurrentHashMap<>();
        Thread writer = new Thread(() -> {
            try {
                while (true) {
                    out.writeLong(wakeUps.take());
                    if (wakeUps.isEmpty()) {
                        out.flush();
                    }
                }
            } catch (IOException | InterruptedException e) {
                // connection gone
            }
        }, "local-bridge-events");
        writer.setDaemon(true);
        writer.start();
        try {
            while (true) {
                byte op = in.readByte();
                long id = in.readLong();
                if (op == SUBSCRIBE) {
                    LockStore.Subscription sub = store.subscribe(in.readUTF(), () -> wakeUps.offer(id));
                    if (sub != null) {
                        byId.put(id, sub);
                        subscriptions.add(sub);
                    }
                } else if (op == UNSUBSCRIBE) {
                    LockStore.Subscription sub = byId.remove(id);
                    if (sub != null) {
                        sub.close();
                        subscriptions.remove(sub);
                    }
                }
            }
        } finally {
            writer.interrupt();
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    /** Opens {@code localbridge://host:port} in a worker: a provider over a {@link Client} store. */
    public static final class Factory implements LockProviderFactory {

        /** A factory; workers instantiate it by name. */
        public Factory() {
        }

        @Override
        public Set<String> schemes() {
            return Set.of("localbridge");
        }

        @Override
        public LockProvider create(URI uri, LockOptions options) {
            return LockStores.newProvider(new Client(uri.getHost(), uri.getPort(), options), options);
        }
    }

    /** The worker side: a {@link LockStore} whose every call is a round trip to the bridge. */
    static final class Client implements LockStore<Client.BridgeHold> {

        /**
         * One acquisition run, as the bridge's server side makes it again from the name and owner id (and, for a read
         * run, the owner id of the caller's own write hold, or empty): the local server tells holds by owner id.
         */
        record BridgeHold(String name, String owner, boolean shared, String ownWrite) {
        }

        private final String host;
        private final int port;
        private final LockOptions options;
        private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();
        private final Map<Long, Runnable> listeners = new ConcurrentHashMap<>();
        private final AtomicLong ids = new AtomicLong();
        private Connection events;
        private volatile boolean closed;

        Client(String host, int port, LockOptions options) {
            this.host = host;
            this.port = port;
            this.options = options;
        }

        @Override
        public String address() {
            return "localbridge://" + host + ":" + port;
        }

        @Override
        public BridgeHold newHold(String name, String owner) {
            return new BridgeHold(name, owner, false, "");
        }

        @Override
        public boolean supportsSharedHolds() {
            return true;
        }

        @Override
        public BridgeHold newSharedHold(String name, String owner, BridgeHold ownWrite) {
            return new BridgeHold(name, owner, true, ownWrite == null ? "" : ownWrite.owner());
        }

        @Override
        public Acquisition tryAcquire(BridgeHold hold, Duration lease, Duration wait, Runnable wakeUp) {
            return call(c -> {
                c.out.writeByte(hold.shared() ? ACQUIRE_SHARED : ACQUIRE);
                c.out.writeUTF(hold.name());
                c.out.writeUTF(hold.owner());
                if (hold.shared()) {
                    c.out.writeUTF(hold.ownWrite());
                }
                c.out.writeLong(lease.toNanos());
                c.out.writeLong(wait.toNanos());
            }, c -> {
                boolean acquired = c.in.readBoolean();
                long token = c.in.readLong();
                long retry = c.in.readLong();
                return acquired ? Acquisition.acquired(token)
                        : retry < 0 ? Acquisition.busy() : Acquisition.busy(Duration.ofNanos(retry));
            });
        }

        @Override
        public boolean release(BridgeHold hold) {
            return call(c -> {
                c.out.writeByte(RELEASE);
                c.out.writeUTF(hold.name());
                c.out.writeUTF(hold.owner());
            }, c -> c.in.readBoolean());
        }

        @Override
        public RenewResult<BridgeHold> renew(List<BridgeHold> holds, Duration lease) {
            return call(c -> {
                c.out.writeByte(RENEW);
                c.out.writeInt(holds.size());
                for (BridgeHold hold : holds) {
                    c.out.writeUTF(hold.name());
                    c.out.writeUTF(hold.owner());
                }
                c.out.writeLong(lease.toNanos());
            }, c -> {
                int count = c.in.readInt();
                Set<BridgeHold> gone = new HashSet<>();
                for (int i = 0; i < count; i++) {
                    gone.add(holds.get(c.in.readInt()));
                }
                return RenewResult.gone(gone);
            });
        }

        @Override
        public boolean isLocked(String name) {
            return call(c -> {
                c.out.writeByte(IS_LOCKED);
                c.out.writeUTF(name);
            }, c -> c.in.readBoolean());
        }

        @Override
        public boolean forceRelease(String name) {
            return call(c -> {
                c.out.writeByte(FORCE_RELEASE);
                c.out.writeUTF(name);
            }, c -> c.in.readBoolean());
        }

        @Override
        public synchronized Subscription subscribe(String name, Runnable onRelease) {
            long id = ids.incrementAndGet();
            try {
                if (events == null) {
                    events = connect(EVENTS);
                    Connection c = events;
                    Thread reader = new Thread(() -> readEvents(c), "local-bridge-client-events");
                    reader.setDaemon(true);
                    reader.start();
                }
                listeners.put(id, onRelease);
                events.out.writeByte(SUBSCRIBE);
                events.out.writeLong(id);
                events.out.writeUTF(name);
                events.out.flush();
            } catch (IOException e) {
                dropEvents();
                return null; // the machinery falls back to timed re-checks
            }
            return () -> unsubscribe(id);
        }

        private synchronized void unsubscribe(long id) {
            listeners.remove(id);
            if (events == null) {
                return;
            }
            try {
                events.out.writeByte(UNSUBSCRIBE);
                events.out.writeLong(id);
                events.out.flush();
            } catch (IOException e) {
                dropEvents();
            }
        }

        private void readEvents(Connection c) {
            try {
                while (true) {
                    Runnable listener = listeners.get(c.in.readLong());
                    if (listener != null) {
                        listener.run();
                    }
                }
            } catch (IOException e) {
                synchronized (this) {
                    if (events == c) {
                        dropEvents();
                    }
                }
            }
        }

        private synchronized void dropEvents() {
            if (events != null) {
                events.close();
                events = null;
            }
        }

        @Override
        public void close() {
            closed = true;
            for (Connection c = idle.poll(); c != null; c = idle.poll()) {
                c.close();
            }
            dropEvents();
        }

        private <T> T call(Request request, Response<T> response) {
            if (closed) {
                throw new IllegalStateException(address() + " is closed");
            }
            Connection c = idle.poll();
            try {
                if (c == null) {
                    c = connect(REQUESTS);
                }
                request.write(c);
                c.out.flush();
                byte status = c.in.readByte();
                if (status == BACKEND_ERROR) {
                    String message = c.in.readUTF();
                    idle.push(c);
                    throw new LockBackendException(message);
                }
                if (status == OTHER_ERROR) {
                    String message = c.in.readUTF();
                    idle.push(c);
                    throw new IllegalStateException(address() + " failed: " + message);
                }
                T result = response.read(c);
                idle.push(c);
                return result;
            } catch (IOException e) {
                if (c != null) {
                    c.close();
                }
                throw new LockBackendException(address() + " - " + e, e);
            }
        }

        private Connection connect(byte kind) throws IOException {
            Socket s = new Socket();
            int timeout = (int) options.operationTimeout().toMillis();
            s.connect(new InetSocketAddress(host, port), timeout);
            s.setTcpNoDelay(true);
            Connection c = new Connection(s);
            if (kind == REQUESTS) {
                // the server bounds each call by the operation timeout; the margin covers the trip
                s.setSoTimeout(timeout + 2000);
            }
            c.out.writeByte(kind);
            c.out.writeUTF(options.namespace());
            c.out.writeLong(options.operationTimeout().toMillis());
            c.out.flush();
            return c;
        }

        @FunctionalInterface
        private interface Request {
            void write(Connection c) throws IOException;
        }

        @FunctionalInterface
        private interface Response<T> {
            T read(Connection c) throws IOException;
        }
    }

    /** One socket with its streams. */
    private static final class Connection {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;

        Connection(Socket socket) throws IOException {
            this.socket = socket;
            this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        }

        void close() {
            closeQuietly(socket);
        }
    }
}
