package io.locksmith.tests.servers;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A standalone ZooKeeper server ({@code ZooKeeperServerMain}) in a child JVM of its own, on this JVM's class path:
 * unlike a server inside the test JVM, it can be killed with SIGKILL and frozen with SIGSTOP.
 *
 * <p>Its temp directory holds {@code zoo.cfg}, the data directory and the log; a restart after a kill reads the same
 * configuration and data, so it comes back on the same port with every znode and session it had acknowledged.
 */
final class ZooKeeperProcess {

    /** The class the child JVM runs; its jar comes with curator-test. */
    static final String MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain";

    private static final String LOOPBACK = "127.0.0.1";
    /** The tick and least session timeout of curator-test's in-JVM servers, so that both grant the same sessions. */
    private static final int TICK_MILLIS = 1000;

    private ZooKeeperProcess() {
    }

    /** A started server: its {@code host:port}, its version, and its process. */
    record Started(String address, String version, LocalProcess process) {
    }

    /**
     * Starts the server on a free loopback port and waits until it serves requests, trying another port if the one
     * it got was taken meanwhile (see {@link LocalProcess#startOnFreePort}).
     *
     * @throws ServerUnavailableException if ZooKeeper is not on the class path or the server does not come up
     */
    static Started start() {
        if (!OptionalDependency.ZOOKEEPER_SERVER.present()) {
            throw new ServerUnavailableException("No ZooKeeper server classes for a ZooKeeper in its own process: add "
                    + OptionalDependency.ZOOKEEPER_SERVER.coordinates() + " (curator-test brings it) to the test"
                    + " classpath");
        }
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        try {
            return LocalProcess.startOnFreePort(port -> {
                Path directory = Files.createTempDirectory("locksmith-zookeeper-");
                Path config = directory.resolve("zoo.cfg");
                Files.writeString(config, String.join("\n",
                        "tickTime=" + TICK_MILLIS,
                        "minSessionTimeout=" + TICK_MILLIS,
                        "dataDir=" + directory.resolve("data"),
                        "clientPort=" + port,
                        "clientPortAddress=" + LOOPBACK,
                        "maxClientCnxns=0",
                        ""), StandardCharsets.UTF_8);
                return LocalProcess.start("zookeeper", List.of(java.toString(),
                        "-XX:+UseSerialGC", "-Xmx128m", "-XX:TieredStopAtLevel=1",
                        // the fixtures ask srvr and conf; the admin server would want port 8080
                        "-Dzookeeper.4lw.commands.whitelist=*", "-Dzookeeper.admin.enableServer=false",
                        // a kill -9 ends the process, not the page cache: acknowledged writes survive without fsync
                        "-Dzookeeper.forceSync=no",
                        "-cp", System.getProperty("java.class.path"),
                        MAIN_CLASS, config.toString()), directory);
            }, (port, process) -> {
                String address = LOOPBACK + ":" + port;
                String version = ZooKeeperServer.awaitServing(address, process, "ZooKeeper in its own JVM ("
                        + MAIN_CLASS + ", pid " + process.pid() + ") on " + address + " did not serve requests");
                return new Started(address, version, process);
            });
        } catch (IOException e) {
            throw new ServerUnavailableException("Could not start ZooKeeper in its own JVM (" + java + " "
                    + MAIN_CLASS + "): " + Await.describe(e), e);
        }
    }
}
