package io.locksmith.tests.servers;

import com.github.dockerjava.api.DockerClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.WaitStrategy;
import org.testcontainers.containers.wait.strategy.WaitStrategyTarget;
import org.testcontainers.utility.DockerImageName;

/**
 * A server in a Testcontainers container, published on a fixed free host port so that it keeps its address
 * across kill and restart.
 *
 * <p>Only loaded after {@link DockerEngine#reachable()} said yes: this is the one class that names
 * Testcontainers types. Readiness is left to the fixture's own probe (PING, srvr, {@code select 1}), the same
 * probe every other path uses.
 */
final class DockerServer implements Control {

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
    private final int hostPort;
    private boolean paused;

    private DockerServer(GenericContainer<?> container, int hostPort) {
        this.container = container;
        this.hostPort = hostPort;
    }

    /** Returns whether a Docker engine answers Testcontainers. */
    static boolean engineReachable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * Starts {@code image} with {@code containerPort} published on a free host port.
     *
     * @param command the container command, or empty for the image's default
     */
    static DockerServer start(String image, int containerPort, Map<String, String> env, List<String> command) {
        return start(image, containerPort, env, command, null, null);
    }

    /**
     * Starts {@code count} containers of {@code image} on one new network, member {@code i} reachable from the
     * others as {@code alias.apply(i)}.
     */
    static Group startGroup(String image, int containerPort, int count, IntFunction<String> alias,
                            IntFunction<Map<String, String>> env) {
        Network network = Network.newNetwork();
        List<DockerServer> members = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                members.add(start(image, containerPort, env.apply(i), List.of(), network, alias.apply(i)));
            }
            return new Group(members, network);
        } catch (RuntimeException e) {
            new Group(members, network).close();
            throw e;
        }
    }

    private static DockerServer start(String image, int containerPort, Map<String, String> env,
                                      List<String> command, Network network, String alias) {
        int hostPort = Tcp.freePort();
        GenericContainer<?> container = new GenericContainer<>(DockerImageName.parse(image));
        container.withExposedPorts(containerPort);
        container.setPortBindings(List.of(hostPort + ":" + containerPort));
        container.withEnv(env);
        container.waitingFor(NO_WAIT);
        if (!command.isEmpty()) {
            container.withCommand(command.toArray(String[]::new));
        }
        if (network != null) {
            container.withNetwork(network);
            container.withNetworkAliases(alias);
        }
        try {
            container.start();
        } catch (RuntimeException e) {
            container.stop();
            throw new ServerUnavailableException("Testcontainers could not start " + image + ": "
                    + Await.describe(e), e);
        }
        return new DockerServer(container, hostPort);
    }

    /** Returns the host name under which the published port is reachable. */
    String host() {
        return container.getHost();
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
        container.stop();
    }
}
