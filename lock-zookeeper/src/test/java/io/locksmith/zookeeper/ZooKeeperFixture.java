package io.locksmith.zookeeper;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedReadWriteLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.utils.ZookeeperFactory;
import org.apache.zookeeper.KeeperException;

/** What the ZooKeeper tests share: clients on a test server, and looking into the server directly. */
final class ZooKeeperFixture {

    private ZooKeeperFixture() {
    }

    /** The URI of a connect string ({@code host:port,...}), for {@link ZooKeeperLockProviders#open}. */
    static ZooKeeperUri uri(String connectString) {
        return ZooKeeperUri.parse(URI.create("zookeeper://" + connectString));
    }

    /** A started client with a session of three operation timeouts, as the URI form makes. */
    static CuratorFramework client(String connectString, Duration operationTimeout, AtomicLong requests,
            String digestCredentials) {
        return client(connectString, operationTimeout, operationTimeout.multipliedBy(3), requests, digestCredentials);
    }

    /** A started client with the given session timeout. */
    static CuratorFramework client(String connectString, Duration operationTimeout, Duration sessionTimeout,
            AtomicLong requests, String digestCredentials) {
        return client(builder(connectString, operationTimeout, sessionTimeout,
                requests == null ? null : CountingZooKeeper.factory(requests), digestCredentials));
    }

    /** A started client with a session of three operation timeouts whose handles {@code factory} makes. */
    static CuratorFramework client(String connectString, Duration operationTimeout, ZookeeperFactory factory) {
        return client(builder(connectString, operationTimeout, operationTimeout.multipliedBy(3), factory, null));
    }

    /** What the test clients are built from; {@code factory} and {@code digestCredentials} may be null. */
    static CuratorFrameworkFactory.Builder builder(String connectString, Duration operationTimeout,
            Duration sessionTimeout, ZookeeperFactory factory, String digestCredentials) {
        int opMs = (int) operationTimeout.toMillis();
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs(opMs)
                .retryPolicy(ZooKeeperLockProviders.retryPolicy(opMs));
        if (factory != null) {
            builder.zookeeperFactory(factory);
        }
        if (digestCredentials != null) {
            builder.authorization("digest", digestCredentials.getBytes(StandardCharsets.UTF_8));
        }
        return builder;
    }

    /** Builds and starts a client, and waits until it is connected. */
    static CuratorFramework client(CuratorFrameworkFactory.Builder builder) {
        CuratorFramework client = builder.build();
        String connectString = builder.getEnsembleProvider().getConnectionString();
        client.start();
        try {
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                client.close();
                throw new IllegalStateException("test client did not connect to " + connectString);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new IllegalStateException(e);
        }
        return client;
    }

    /**
     * Brings the admin client's server up to date with the leader before a read. ZooKeeper reads are served by the
     * member the client is connected to, which may lag behind writes other clients made through other members; a
     * {@code sync} first makes the following reads see every write that completed before it.
     */
    static void sync(CuratorFramework admin, String path) {
        // The admin client may be connected to a member a test just killed: wait until it has moved to another
        // member and sync again (bounded by the deadline; the session survives the move). A fault that kept the
        // server away longer than the admin's session timeout (a stopped server on a loaded machine) expires the
        // admin's session itself: Curator then opens a new one on the next connect, and the sync is made again.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            KeeperException.Code code = syncOnce(admin, path);
            if (code == KeeperException.Code.OK || code == KeeperException.Code.NONODE) {
                return;
            }
            boolean retryable = code == KeeperException.Code.CONNECTIONLOSS
                    || code == KeeperException.Code.SESSIONEXPIRED;
            if (!retryable || System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("sync of " + path + " failed: " + code);
            }
            try {
                admin.getZookeeperClient().blockUntilConnectedOrTimedOut();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    private static KeeperException.Code syncOnce(CuratorFramework admin, String path) {
        CountDownLatch synced = new CountDownLatch(1);
        int[] rc = {Integer.MIN_VALUE};
        try {
            admin.getZookeeperClient().getZooKeeper().sync(path, (code, p, ctx) -> {
                rc[0] = code;
                synced.countDown();
            }, null);
            if (!synced.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("sync of " + path + " did not answer within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (Exception e) {
            throw new IllegalStateException("could not sync " + path, e);
        }
        return KeeperException.Code.get(rc[0]);
    }

    /** The lock nodes of {@code name} in {@code namespace}, in queue order. */
    static List<String> lockNodes(CuratorFramework admin, String namespace, String name) throws Exception {
        String parent = new LockPaths(namespace).parent(name);
        sync(admin, "/");
        try {
            List<String> children = new ArrayList<>(admin.getChildren().forPath(parent));
            children.sort(LockPaths.BY_SEQUENCE);
            List<String> paths = new ArrayList<>();
            for (String child : children) {
                paths.add(parent + "/" + child);
            }
            return paths;
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        }
    }

    /** The names with at least one lock node in {@code namespace}. */
    static Set<String> heldNames(CuratorFramework admin, String namespace) {
        String root = new LockPaths(namespace).root();
        Set<String> names = new TreeSet<>();
        sync(admin, "/");
        try {
            for (String segment : admin.getChildren().forPath(root)) {
                try {
                    if (!admin.getChildren().forPath(root + "/" + segment).isEmpty()) {
                        names.add(LockPaths.decode(segment));
                    }
                } catch (KeeperException.NoNodeException reaped) {
                    // a container the server just deleted
                }
            }
        } catch (KeeperException.NoNodeException e) {
            return names;
        } catch (Exception e) {
            throw new IllegalStateException("could not list the locks of namespace " + namespace, e);
        }
        return names;
    }

    /** Deletes the holder's node (the lowest) of {@code name}, as an operator would. */
    static void forceRelease(CuratorFramework admin, String namespace, String name) {
        try {
            List<String> nodes = lockNodes(admin, namespace, name);
            if (!nodes.isEmpty()) {
                admin.delete().forPath(nodes.get(0));
            }
        } catch (Exception e) {
            throw new IllegalStateException("could not force the release of " + name, e);
        }
    }

    /** A provider that closes the client it was built on once it is closed itself. */
    static LockProvider closingClient(LockProvider provider, CuratorFramework client) {
        return new LockProvider() {
            @Override
            public DistributedLock getLock(String name) {
                return provider.getLock(name);
            }

            @Override
            public DistributedReadWriteLock getReadWriteLock(String name) {
                return provider.getReadWriteLock(name);
            }

            @Override
            public LockInfo inspect(String name) {
                return provider.inspect(name);
            }

            @Override
            public boolean forceRelease(String name) {
                return provider.forceRelease(name);
            }

            @Override
            public String clientId() {
                return provider.clientId();
            }

            @Override
            public String backend() {
                return provider.backend();
            }

            @Override
            public LockOptions options() {
                return provider.options();
            }

            @Override
            public void close() {
                try {
                    provider.close();
                } finally {
                    client.close();
                }
            }

            @Override
            public String toString() {
                return provider.toString();
            }
        };
    }

    /**
     * One try to end a hold after an outage: true once {@code unlock()} returned or found the hold lost (its
     * session may have ended in the outage: the hold is gone either way), false while the store still fails.
     */
    static boolean unlockSettled(DistributedLock holder) {
        try {
            holder.unlock();
            return true;
        } catch (LockBackendException e) {
            return false;
        } catch (LockLostException e) {
            return true;
        }
    }
}
