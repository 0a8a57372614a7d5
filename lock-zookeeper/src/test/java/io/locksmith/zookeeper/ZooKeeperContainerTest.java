package io.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.servers.ZooKeeperServer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The parents are containers the server reaps, and tokens keep growing across a reaped parent. */
@DisplayName("ZooKeeper backend: container parents and tokens across reaping")
class ZooKeeperContainerTest {

    private static final String CHECK_INTERVAL = "znode.container.checkIntervalMs";

    private static ZooKeeperServer server;
    private static CuratorFramework admin;

    @BeforeAll
    static void startServer() {
        // Only a server started here reaps this often; the property is read when it starts.
        String previous = System.setProperty(CHECK_INTERVAL, "100");
        try {
            server = ZooKeeperServer.start();
        } finally {
            if (previous == null) {
                System.clearProperty(CHECK_INTERVAL);
            } else {
                System.setProperty(CHECK_INTERVAL, previous);
            }
        }
        admin = ZooKeeperFixture.client(server.connectString(), Duration.ofSeconds(5), null, null);
    }

    @AfterAll
    static void stopServer() {
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    @DisplayName("after release and close no lock node is left, the container parent is reaped, and the next "
            + "holder's token is still larger although the sequence started again")
    void tokensGrowAcrossReapedParents() throws Exception {
        String namespace = "zc" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        LockOptions options = LockOptions.builder().namespace(namespace).operationTimeout(Duration.ofSeconds(1))
                .build();
        LockPaths paths = new LockPaths(namespace);
        String parent = paths.parent("reaped");
        // Reaping takes a check interval here, up to a minute on a server the tests did not start.
        Duration reapBound = server.isControllable() ? Duration.ofSeconds(15) : Duration.ofSeconds(90);

        long firstToken;
        CuratorFramework client = ZooKeeperFixture.client(server.connectString(), Duration.ofSeconds(1), null, null);
        try (LockProvider provider = ZooKeeperLockProviders.builder(client).options(options).build()) {
            DistributedLock lock = provider.getLock("reaped");
            lock.lock();
            List<String> nodes = ZooKeeperFixture.lockNodes(admin, namespace, "reaped");
            assertThat(nodes).hasSize(1);
            assertThat(LockPaths.sequence(nodes.get(0))).isZero();
            assertThat(admin.checkExists().forPath(nodes.get(0)).getEphemeralOwner())
                    .as("owner of the ephemeral lock node").isEqualTo(client.getZookeeperClient().getZooKeeper()
                            .getSessionId());
            firstToken = lock.fencingToken();
            // Close while holding: close() releases the hold.
        } finally {
            client.close();
        }
        assertThat(ZooKeeperFixture.lockNodes(admin, namespace, "reaped")).as("lock nodes after close()").isEmpty();
        // Containers: the server deletes them once empty, the lock's parent first, then the namespace node.
        long deadline = System.nanoTime() + reapBound.toNanos();
        for (String container : List.of(parent, paths.root())) {
            while (admin.checkExists().forPath(container) != null) {
                assertThat(System.nanoTime() - deadline).as("the server reaps the empty container %s within %s",
                        container, reapBound).isNegative();
                Thread.sleep(20);
            }
        }

        try (LockProvider provider = LockProvider.open("zookeeper://" + server.connectString(), options)) {
            DistributedLock lock = provider.getLock("reaped");
            lock.lock();
            List<String> nodes = ZooKeeperFixture.lockNodes(admin, namespace, "reaped");
            assertThat(LockPaths.sequence(nodes.get(0))).as("sequence number in the recreated parent").isZero();
            assertThat(lock.fencingToken()).as("token after the parent was reaped and recreated")
                    .isGreaterThan(firstToken);
            lock.unlock();
        }
        assertThat(ZooKeeperFixture.heldNames(admin, namespace)).isEmpty();
    }
}
