package io.locksmith.tests.servers;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingServer;

/**
 * ZooKeeper servers inside this JVM, through curator-test.
 *
 * <p>Only loaded after {@link OptionalDependency#CURATOR_TEST} was found: this is the one class that names
 * curator-test types.
 */
final class InJvmZooKeeper {

    /** One server: its {@code host:port} and its control. */
    record Member(String address, Control control) {
    }

    /** An ensemble: its members in server-id order, and the whole to close. */
    record Ensemble(List<Member> members, AutoCloseable whole) {
    }

    private InJvmZooKeeper() {
    }

    /** Starts a standalone {@link TestingServer} on a free port with its own temp directory. */
    static Member startServer() {
        TestingServer server;
        try {
            server = new TestingServer(true);
        } catch (Exception e) {
            throw new ServerUnavailableException("in-JVM ZooKeeper (curator-test TestingServer) did not start: "
                    + Await.describe(e), e);
        }
        Control control = new Control() {
            @Override
            public void kill() {
                try {
                    server.stop();
                } catch (IOException e) {
                    throw new IllegalStateException("Could not stop " + describe() + ": " + Await.describe(e), e);
                }
            }

            @Override
            public void restart() {
                try {
                    server.restart();
                } catch (Exception e) {
                    throw new ServerUnavailableException("Could not restart " + describe() + ": "
                            + Await.describe(e), e);
                }
            }

            @Override
            public String describe() {
                return "in-JVM curator-test TestingServer, data in " + server.getTempDirectory();
            }

            @Override
            public void close() {
                try {
                    server.close();
                } catch (IOException e) {
                    // the temp directory may stay behind; nothing else to do
                } finally {
                    ExitCleanup.unregister(this);
                }
            }
        };
        ExitCleanup.register(control);
        return new Member(server.getConnectString(), control);
    }

    /** Starts a {@link TestingCluster} of {@code size} servers, each on free ports with its own temp directory. */
    static Ensemble startCluster(int size) {
        TestingCluster cluster = new TestingCluster(size);
        AutoCloseable whole = new AutoCloseable() {
            @Override
            public void close() {
                try {
                    cluster.close();
                } catch (IOException e) {
                    // temp directories may stay behind; nothing else to do
                } finally {
                    ExitCleanup.unregister(this);
                }
            }
        };
        ExitCleanup.register(whole);
        try {
            cluster.start();
        } catch (Exception e) {
            try {
                whole.close();
            } catch (Exception ignored) {
                // reported through the start failure
            }
            throw new ServerUnavailableException("in-JVM ZooKeeper ensemble (curator-test TestingCluster of "
                    + size + ") did not start: " + Await.describe(e), e);
        }
        List<InstanceSpec> specs = new ArrayList<>(cluster.getInstances());
        specs.sort(Comparator.comparingInt(InstanceSpec::getServerId));
        List<Member> members = new ArrayList<>();
        for (InstanceSpec spec : specs) {
            members.add(new Member(spec.getHostname() + ":" + spec.getPort(), memberControl(cluster, spec)));
        }
        return new Ensemble(List.copyOf(members), whole);
    }

    private static Control memberControl(TestingCluster cluster, InstanceSpec spec) {
        return new Control() {
            @Override
            public void kill() {
                boolean killed;
                try {
                    killed = cluster.killServer(spec);
                } catch (Exception e) {
                    throw new IllegalStateException("Could not kill " + describe() + ": " + Await.describe(e), e);
                }
                if (!killed) {
                    throw new IllegalStateException("Could not kill " + describe() + ": not part of the ensemble");
                }
            }

            @Override
            public void restart() {
                boolean restarted;
                try {
                    restarted = cluster.restartServer(spec);
                } catch (Exception e) {
                    throw new ServerUnavailableException("Could not restart " + describe() + ": "
                            + Await.describe(e), e);
                }
                if (!restarted) {
                    throw new IllegalStateException("Could not restart " + describe() + ": not part of the ensemble");
                }
            }

            @Override
            public String describe() {
                return "in-JVM curator-test TestingCluster server id " + spec.getServerId() + ", data in "
                        + spec.getDataDirectory();
            }

            @Override
            public void close() {
                // the ensemble closes as a whole
            }
        };
    }
}
