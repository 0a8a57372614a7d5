package io.locksmith.tests.servers;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A standalone ZooKeeper server for tests, found or started per run, that the tests can kill and restart when they
 * own it, and also freeze when it runs in a process of its own ({@link #startProcess()}).
 *
 * <p>The server comes from the first of these that applies:
 * <ol>
 *   <li>{@code LOCKSMITH_ZOOKEEPER} (or {@code -Dlocksmith.zookeeper}): a connect string
 *       {@code host:port[,host:port...][/chroot]}. The tests do not own it: {@link #isControllable()} is false.</li>
 *   <li>An in-JVM server through curator-test ({@code TestingServer}) on a free port, when curator-test is on the
 *       classpath.</li>
 *   <li>A {@code zookeeper:3.9} container through Testcontainers, when it is on the classpath and a Docker engine
 *       answers.</li>
 * </ol>
 * Otherwise {@link #start()} throws {@link ServerUnavailableException} saying what to add or set. The log says which
 * path the server took. For an ensemble see {@link ZooKeeperCluster}.
 *
 * <p>{@link #startProcess()} always starts a server of its own in a child JVM, which a fault can kill with SIGKILL
 * (the in-JVM server can only be stopped) or freeze with SIGSTOP.
 */
public final class ZooKeeperServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperServer.class);

    static final Settings.Key CONNECT_SETTING = new Settings.Key("locksmith.zookeeper", "LOCKSMITH_ZOOKEEPER");
    static final String IMAGE = "zookeeper:3.9";
    static final int CLIENT_PORT = 2181;

    private static final Duration READY_LIMIT = Duration.ofSeconds(60);
    private static final Duration GIVEN_READY_LIMIT = Duration.ofSeconds(10);
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

    private final String connectString;
    private final String origin;
    private final Control control;

    private ZooKeeperServer(String connectString, String origin, Control control) {
        this.connectString = connectString;
        this.origin = origin;
        this.control = control;
    }

    /**
     * Returns a ZooKeeper server that serves requests.
     *
     * @throws ServerUnavailableException if none can be had, saying what to add or set
     */
    public static ZooKeeperServer start() {
        return start(Settings.system());
    }

    /**
     * Returns a standalone ZooKeeper server in a child JVM of its own ({@code ZooKeeperServerMain} on this JVM's class
     * path, on a free loopback port, with the tick and least session timeout of the in-JVM server): {@link #kill()}
     * sends it SIGKILL, {@link #pause()} SIGSTOP. It needs nothing installed, so {@code LOCKSMITH_ZOOKEEPER} does not
     * apply: the point of this server is that the tests own its process.
     *
     * @throws ServerUnavailableException if ZooKeeper's classes are not on the class path or the server does not
     *     come up, saying why
     */
    public static ZooKeeperServer startProcess() {
        ZooKeeperProcess.Started started = ZooKeeperProcess.start();
        ZooKeeperServer server = new ZooKeeperServer(started.address(), "ZooKeeper " + started.version()
                + " in its own JVM on " + started.address(), started.process());
        LOG.info("ZooKeeper for tests: {}", server);
        return server;
    }

    static ZooKeeperServer start(Settings settings) {
        ZooKeeperServer server = resolve(settings);
        LOG.info("ZooKeeper for tests: {}", server);
        return server;
    }

    private static ZooKeeperServer resolve(Settings settings) {
        Optional<Settings.Value> given = settings.get(CONNECT_SETTING);
        if (given.isPresent()) {
            Settings.Value value = given.get();
            requireReachable(value);
            return new ZooKeeperServer(value.text(), value.text() + " from " + value.source(),
                    Control.none(value.text(), value.source()));
        }
        if (OptionalDependency.CURATOR_TEST.present()) {
            InJvmZooKeeper.Member member = InJvmZooKeeper.startServer();
            return started(member.address(), "in-JVM ZooKeeper", member.control());
        }
        if (DockerEngine.reachable()) {
            DockerServer container = DockerServer.start(IMAGE, CLIENT_PORT, Map.of(), listen -> {
                if (listen.port() != CLIENT_PORT) {
                    // the image's client port is fixed in its generated configuration
                    throw new ServerUnavailableException("A " + IMAGE + " container cannot listen on another port"
                            + " than " + CLIENT_PORT + ", which the host network needs: run ZooKeeper in-JVM"
                            + " (curator-test on the test classpath) or set " + CONNECT_SETTING.describe());
                }
                return List.of();
            });
            return started(container.host() + ":" + container.port(), "Testcontainers " + IMAGE, container);
        }
        throw unavailable("ZooKeeper");
    }

    private static ZooKeeperServer started(String address, String kind, Control control) {
        try {
            String version = awaitServing(address, control, kind + " on " + address + " did not serve requests");
            return new ZooKeeperServer(address, kind + " " + version + " on " + address, control);
        } catch (RuntimeException e) {
            control.close();
            throw e;
        }
    }

    /** Returns the "nothing found" failure for {@code what} ("ZooKeeper", "ZooKeeper ensemble"). */
    static ServerUnavailableException unavailable(String what) {
        return new ServerUnavailableException("No " + what + " for the tests: add "
                + OptionalDependency.CURATOR_TEST.coordinates() + " to the test classpath for in-JVM servers, or set "
                + CONNECT_SETTING.describe("host:port[,host:port...]") + ", " + DockerEngine.howToGet());
    }

    /** Returns the {@code host:port} members of a connect string, without its chroot. */
    static List<String> members(String connectString) {
        int chroot = connectString.indexOf('/');
        String hosts = chroot < 0 ? connectString : connectString.substring(0, chroot);
        return Arrays.stream(hosts.split(","))
                .map(String::strip)
                .filter(member -> !member.isEmpty())
                .toList();
    }

    /** Fails unless some member of a given connect string accepts connections. */
    static void requireReachable(Settings.Value given) {
        List<String> members = members(given.text());
        if (members.isEmpty()) {
            throw new ServerUnavailableException(given.source() + " holds \"" + given.text()
                    + "\", which is not a connect string host:port[,host:port...][/chroot]");
        }
        Await.until(given.source() + " names " + given.text() + " but no member accepts connections",
                GIVEN_READY_LIMIT, () -> {
                    IOException last = null;
                    for (String member : members) {
                        try {
                            Tcp.connect(host(member), port(member), PROBE_TIMEOUT);
                            return true;
                        } catch (IOException e) {
                            last = e;
                        }
                    }
                    throw last;
                });
    }

    /**
     * Waits until the server at {@code address} serves requests, that is its {@code srvr} answer names a mode
     * (standalone, leader or follower); an ensemble member without quorum answers without one.
     *
     * @return the version it reports, such as "3.9.3"
     */
    static String awaitServing(String address, Control control, String failure) {
        String[] answer = new String[1];
        Await.until(failure, READY_LIMIT, () -> {
            control.checkRunning();
            answer[0] = Tcp.exchange(host(address), port(address), "srvr", PROBE_TIMEOUT);
            return answer[0].contains("Mode: ");
        });
        return answer[0].lines()
                .filter(line -> line.startsWith("Zookeeper version: "))
                .map(line -> line.substring("Zookeeper version: ".length()).split("[-, ]", 2)[0])
                .findFirst()
                .orElse("(version unknown)");
    }

    private static String host(String member) {
        int colon = member.lastIndexOf(':');
        return colon < 0 ? member : member.substring(0, colon);
    }

    private static int port(String member) {
        int colon = member.lastIndexOf(':');
        return colon < 0 ? CLIENT_PORT : Integer.parseInt(member.substring(colon + 1));
    }

    /** Returns the connect string clients use, {@code host:port}. */
    public String connectString() {
        return connectString;
    }

    /**
     * Returns whether {@link #kill()} and {@link #restart()} work: true for servers the tests started, false for one
     * given by {@code LOCKSMITH_ZOOKEEPER}.
     */
    public boolean isControllable() {
        return control.isControllable();
    }

    /**
     * Stops the server, keeping its data ({@code TestingServer.stop()}, SIGKILL for {@link #startProcess()}, or
     * {@code docker kill}); sessions can then only reconnect after {@link #restart()}.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void kill() {
        control.kill();
    }

    /**
     * Starts the server again on the same port with its data, and waits until it serves requests.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void restart() {
        control.restart();
        awaitServing(connectString, control, origin + " did not serve requests after restart");
        LOG.info("ZooKeeper for tests restarted: {}", this);
    }

    /**
     * Freezes the server (SIGSTOP for {@link #startProcess()}, or {@code docker pause}): it accepts connections but
     * answers nothing, sends no pings and expires no sessions until {@link #resume()}.
     *
     * @throws UnsupportedOperationException for an in-JVM server, or if not {@link #isControllable()}
     */
    public void pause() {
        control.pause();
    }

    /**
     * Unfreezes a paused server (SIGCONT, or {@code docker unpause}) and waits until it serves requests.
     *
     * @throws UnsupportedOperationException for an in-JVM server, or if not {@link #isControllable()}
     */
    public void resume() {
        control.resume();
        awaitServing(connectString, control, origin + " did not serve requests after resume");
    }

    /** Stops a server the tests started and deletes its data; a given server is left alone. */
    @Override
    public void close() {
        control.close();
    }

    /** Returns which path the server took, e.g. "in-JVM ZooKeeper 3.9.3 on 127.0.0.1:40123 (...)". */
    @Override
    public String toString() {
        return origin + " (" + control.describe() + ")";
    }
}
