package io.locksmith.zookeeper;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.LockProviderContract;
import io.locksmith.tests.servers.ZooKeeperCluster;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;

/**
 * The contract on a three-member ensemble, through the builder over an application's own Curator client (one per
 * provider, closed with it).
 */
@DisplayName("ZooKeeper contract (3-member ensemble, builder over the application's CuratorFramework)")
class ZooKeeperClusterContractTest extends LockProviderContract {

    private static final AtomicLong REQUESTS = new AtomicLong();
    private static ZooKeeperCluster cluster;
    private static CuratorFramework admin;

    @BeforeAll
    static void startEnsemble() {
        cluster = ZooKeeperCluster.start();
        admin = ZooKeeperFixture.client(cluster.connectString(), Duration.ofSeconds(5), null, null);
    }

    @AfterAll
    static void stopEnsemble() {
        if (admin != null) {
            admin.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    /**
     * The kit's options with a 2 s operation timeout: a write needs a quorum of the ensemble's transaction logs,
     * and the kit's 1 s leaves too little room on a busy machine.
     */
    @Override
    protected LockOptions.Builder baseOptions() {
        return super.baseOptions().operationTimeout(Duration.ofSeconds(2));
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        CuratorFramework client = ZooKeeperFixture.client(cluster.connectString(), options.operationTimeout(),
                REQUESTS, null);
        return ZooKeeperFixture.closingClient(ZooKeeperLockProviders.builder(client).options(options).build(), client);
    }

    @Override
    protected long storeOperationCount() {
        return REQUESTS.get();
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        return ZooKeeperFixture.heldNames(admin, namespace);
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        ZooKeeperFixture.forceRelease(admin, namespace, name);
    }

    @Override
    protected boolean runsPrimitives() {
        return false; // the same backend as ZooKeeperContractTest, on an ensemble, which runs the primitives' groups
    }
}
