package io.locksmith.tests.servers;

import com.github.dockerjava.api.DockerClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.IntFunction;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.WaitStrategy;
import org.testcontainers.containers.wait.strategy.WaitStrategyTarget;
import org.testcontainers.utility.DockerImageName;

/**
 * A server in a Testcontainers container on a fixed free host port, so that it keeps its address across kill and
 * restart.
 *
 * <p>The container joins Docker's default bridge network with its port published, or, when
 * {@code LOCKSMITH_DOCKER_NETWORK=host} (or {@code -Dlocksmith.docker.network=host}), the host's own network, where
 * the server itself listens on the free loopback port: that is how an engine started with
 * {@code dockerd --bridge=none} runs containers, with every byte staying on 127.0.0.1.
 *
 * <p>Only loaded after {@link DockerEngine#reachable()} said yes: this is the one class that names
 * Testcontainers types. Readiness is left to the fixture's own probe (PING, srvr, {@code select 1}), the same
 * probe every other path uses.
 */
final class DockerServer implements Control {

    private static final String LOOPBACK = "127.0.0.1";
    private static final String ALL_INTERFACES = "0.0.0.0";

    /** Where the server in the container must listen: the address and port its command names. */
    record Listen(String address, int port) {
    }

    /** Containers started together on one private network, such as a ZooKeeper ensemble. */
    static final class Group implements AutoCloseable {

        private final List<DockerServer> members;
        private final Network network;

        private Group(List<DockerServer> members, Network network) {
            this.members = List.copyOf(members);
            this.network = network;
        }

        /** Returns the members in start order. */
        List<DockerServer> members() {
            return members;
        }

        @Override
        public void close() {
            try {
                members.forEach(DockerServer::close);
            } finally {
                network.close();
            }
        }
    }

    /** Waits for nothing: the fixture probes the server itself once the container runs. */
    private static final WaitStrategy NO_WAIT = new WaitStrategy() {
        @Override
        public void waitUntilReady(WaitStrategyTarget target) {
        }

        @Override
        public WaitStrategy withStartupTimeout(Duration startupTimeout) {
            return this;
        }
    };

    private final GenericContainer<?> container;
    private final String image;
    private final boolean hostNetwork;
    private final int hostPort;
    private boolean paused;

    private DockerServer(GenericContainer<?> container, String image, boolean hostNetwork, int hostPort) {
        this.container = container;
        this.image = image;
        this.hostNetwork = hostNetwork;
        this.hostPort = hostPort;
    }

    /** Returns why no Docker engine answers Testcontainers, or empty if one does. */
    static Optional<String> engineUnreachable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable()
                    ? Optional.empty()
                    : Optional.of("Testcontainers found no Docker engine");
        } catch (RuntimeException e) {
            return Optional.of("Testcontainers found no Docker engine: " + Await.describe(e));
        }
    }

    /** Returns the image named by {@code key}, else {@code official}. */
    static String image(Settings settings, Settings.Key key, String official) {
        return settings.get(key).map(Settings.Value::text).orElse(official);
    }

    /**
     * Starts {@code image} on a free host port: published from {@code containerPort} on the bridge network, or
     * listened on directly on the host network.
     *
     * @param command the container's arguments for where the server must listen
     */
    static DockerServer start(String image, int containerPort, Map<String, String> env,
                              Function<Listen, List<String>> command) {
        boolean hostNetwork = hostNetwork(Settings.system());
        int hostPort = Tcp.freePort();
        GenericContainer<?> container = new GenericContainer<>(DockerImageName.parse(image));
        container.withEnv(env);
        container.waitingFor(NO_WAIT);
        List<String> arguments;
        if (hostNetwork) {
            container.withNetworkMode("host");
            arguments = command.apply(new Listen(LOOPBACK, hostPort));
        } else {
            container.withExposedPorts(containerPort);
            container.setPortBindings(List.of(hostPort + ":" + containerPort));
            arguments = command.apply(new Listen(ALL_INTERFACES, containerPort));
        }
        if (!arguments.isEmpty()) {
            container.withCommand(arguments.toArray(String[]::new));
        }
        return started(container, image, hostNetwork, hostPort);
    }

    private static boolean hostNetwork(Settings settings) {
        Optional<Settings.Value> network = settings.get(DockerEngine.NETWORK_SETTING);
        if (network.isEmpty() || network.get().text().equals("bridge")) {
            return false;
        }
        if (network.get().text().equals("host")) {
            return true;
        }
        throw new ServerUnavailableException(network.get().source() + " is '" + network.get().text()
                + "': set it to host or bridge");
    }

    /**
     * Starts {@code count} containers of {@code image} on one new network, member {@code i} reachable from the
     * others as {@code alias.apply(i)}.
     */
    static Group startGroup(String image, int containerPort, int count, IntFunction<String> alias,
                            IntFunction<Map<String, String>> env) {
        if (hostNetwork(Settings.system())) {
            throw new ServerUnavailableException("A group of " + image + " containers needs a network of its own,"
                    + " which " + DockerEngine.NETWORK_SETTING.describe("host") + " rules out");
        }
        Network network = Network.newNetwork();
        List<DockerServer> members = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                members.add(member(image, containerPort, env.apply(i), network, alias.apply(i)));
            }
            return new Group(members, network);
        } catch (RuntimeException e) {
            new Group(members, network).close();
            throw e;
        }
    }

    private static DockerServer member(String image, int containerPort, Map<String, String> env, Network network,
                                       String alias) {
        int hostPort = Tcp.freePort();
        GenericContainer<?> container = new GenericContainer<>(DockerImageName.parse(image));
        container.withExposedPorts(containerPort);
        container.setPortBindings(List.of(hostPort + ":" + containerPort));
        container.withEnv(env);
        container.waitingFor(NO_WAIT);
        container.withNetwork(network);
        container.withNetworkAliases(alias);
        return started(container, image, false, hostPort);
    }

    private static DockerServer started(GenericContainer<?> container, String image, boolean hostNetwork,
                                        int hostPort) {
        try {
            container.start();
        } catch (RuntimeException e) {
            container.stop();
            throw new ServerUnavailableException("Testcontainers could not start " + image + ": "
                    + Await.describe(e), e);
        }
        DockerServer server = new DockerServer(container, image, hostNetwork, hostPort);
        // without Ryuk (no registry to pull it from, or disabled) nothing else removes a container the JVM left
        ExitCleanup.register(server);
        return server;
    }

    /** Returns the host name under which the server is reachable. */
    String host() {
        return hostNetwork ? LOOPBACK : container.getHost();
    }

    /** Returns how the server was had, for fixtures' origin lines: "Testcontainers redis:7 (host network)". */
    String path() {
        return "Testcontainers " + image + (hostNetwork ? " (host network)" : " (bridge network, published port)");
    }

    /** Returns the published host port; it stays the same across restarts. */
    int port() {
        return hostPort;
    }

    private DockerClient client() {
        return DockerClientFactory.instance().client();
    }

    @Override
    public synchronized void kill() {
        if (paused) {
            resume();
        }
        client().killContainerCmd(container.getContainerId()).exec();
    }

    @Override
    public synchronized void restart() {
        Boolean running = client().inspectContainerCmd(container.getContainerId()).exec().getState().getRunning();
        if (Boolean.TRUE.equals(running)) {
            kill();
        }
        client().startContainerCmd(container.getContainerId()).exec();
    }

    @Override
    public synchronized void pause() {
        client().pauseContainerCmd(container.getContainerId()).exec();
        paused = true;
    }

    @Override
    public synchronized void resume() {
        client().unpauseContainerCmd(container.getContainerId()).exec();
        paused = false;
    }

    @Override
    public String describe() {
        String id = container.getContainerId();
        return "container " + (id == null ? "?" : id.substring(0, Math.min(12, id.length())));
    }

    @Override
    public void close() {
        ExitCleanup.unregister(this);
        container.stop();
    }
}
