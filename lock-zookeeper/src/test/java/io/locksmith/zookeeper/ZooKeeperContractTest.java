package io.locksmith.zookeeper;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.LockProviderContract;
import io.locksmith.tests.StoreControl;
import io.locksmith.tests.servers.ZooKeeperServer;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;

/**
 * The contract on one ZooKeeper server, through the URI form (each provider owns its Curator client), with the
 * server killed and restarted for the failure tests.
 */
@DisplayName("ZooKeeper contract (standalone server, zookeeper:// providers)")
class ZooKeeperContractTest extends LockProviderContract {

    private static final AtomicLong REQUESTS = new AtomicLong();
    private static final Set<ZooKeeper> HANDLES = ConcurrentHashMap.newKeySet();
    private static ZooKeeperServer server;
    private static CuratorFramework admin;

    @BeforeAll
    static void startServer() {
        server = ZooKeeperServer.start();
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

    /**
     * The kit's options with a 2 s operation timeout: ZooKeeper writes go through the server's transaction log,
     * and the kit's 1 s leaves too little room on a busy machine.
     */
    @Override
    protected LockOptions.Builder baseOptions() {
        return super.baseOptions().operationTimeout(Duration.ofSeconds(2));
    }

    /**
     * A provider that owns its client, as {@code zookeeper://} makes it, with a 4 s session: holds that close()
     * could not release while the server was down must go with the session within the kit's lease + slack.
     */
    @Override
    protected LockProvider newProvider(LockOptions options) {
        return ZooKeeperLockProviders.open(ZooKeeperFixture.uri(server.connectString() + "?sessionTimeoutMs=4000"),
                options, CountingZooKeeper.factory(REQUESTS, HANDLES));
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
    protected Optional<StoreControl> storeControl() {
        if (!server.isControllable()) {
            return Optional.empty();
        }
        return Optional.of(new StoreControl() {
            @Override
            public Set<Fault> faults() {
                return Set.of(Fault.KILL);
            }

            @Override
            public void kill() {
                server.kill();
            }

            /**
             * Restarts the server and waits until the providers' clients have reconnected: a ZooKeeper client
             * reconnects in the background, after a random pause of up to a second, and only then is the fault
             * over for it.
             */
            @Override
            public void restart() {
                server.restart();
                try {
                    CountingZooKeeper.awaitConnected(HANDLES, Duration.ofSeconds(15));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
        });
    }
}
