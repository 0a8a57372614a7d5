package io.locksmith.zookeeper;

import java.io.IOException;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.utils.ZookeeperFactory;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Stat;

/**
 * A ZooKeeper client handle that counts every request it sends to the server (pings and session set-up aside):
 * each public request method counts once, however it delegates internally.
 */
final class CountingZooKeeper extends ZooKeeper {

    private final AtomicLong requests;
    private final ThreadLocal<int[]> depth = ThreadLocal.withInitial(() -> new int[1]);

    private CountingZooKeeper(String connectString, int sessionTimeout, Watcher watcher, boolean canBeReadOnly,
            ZKClientConfig config, AtomicLong requests) throws IOException {
        super(connectString, sessionTimeout, watcher, canBeReadOnly, config);
        this.requests = requests;
    }

    /** A factory for Curator whose handles all add to {@code requests}. */
    static ZookeeperFactory factory(AtomicLong requests) {
        return factory(requests, null);
    }

    /** A factory for Curator whose handles all add to {@code requests} and join {@code handles}, if given. */
    static ZookeeperFactory factory(AtomicLong requests, Set<ZooKeeper> handles) {
        return new ZookeeperFactory() {
            @Override
            public ZooKeeper newZooKeeper(String connectString, int sessionTimeout, Watcher watcher,
                    boolean canBeReadOnly) throws Exception {
                return newZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly, new ZKClientConfig());
            }

            @Override
            public ZooKeeper newZooKeeper(String connectString, int sessionTimeout, Watcher watcher,
                    boolean canBeReadOnly, ZKClientConfig config) throws Exception {
                ZooKeeper handle = new CountingZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly,
                        config == null ? new ZKClientConfig() : config, requests);
                if (handles != null) {
                    handles.add(handle);
                }
                return handle;
            }
        };
    }

    /**
     * Waits until every handle in {@code handles} that is still alive is connected, forgetting closed ones.
     *
     * @throws IllegalStateException if some handle is still not connected after {@code limit}
     */
    static void awaitConnected(Set<ZooKeeper> handles, Duration limit) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (true) {
            handles.removeIf(handle -> !handle.getState().isAlive());
            long pending = handles.stream().filter(handle -> !handle.getState().isConnected()).count();
            if (pending == 0) {
                return;
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new IllegalStateException(pending + " ZooKeeper client(s) did not reconnect within "
                        + limit.toMillis() + " ms");
            }
            Thread.sleep(10);
        }
    }

    /** The server this handle is connected to now, or null. */
    SocketAddress remoteAddress() {
        return testableRemoteSocketAddress();
    }

    private void enter() {
        if (depth.get()[0]++ == 0) {
            requests.incrementAndGet();
        }
    }

    private void exit() {
        depth.get()[0]--;
    }

    @Override
    public String create(String a0, byte[] a1, List<ACL> a2, CreateMode a3) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.create(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public String create(String a0, byte[] a1, List<ACL> a2, CreateMode a3, Stat a4) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.create(a0, a1, a2, a3, a4);
        } finally {
            exit();
        }
    }

    @Override
    public String create(String a0, byte[] a1, List<ACL> a2, CreateMode a3, Stat a4, long a5) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.create(a0, a1, a2, a3, a4, a5);
        } finally {
            exit();
        }
    }

    @Override
    public void create(String a0, byte[] a1, List<ACL> a2, CreateMode a3, AsyncCallback.StringCallback a4, Object a5) {
        enter();
        try {
            super.create(a0, a1, a2, a3, a4, a5);
        } finally {
            exit();
        }
    }

    @Override
    public void create(String a0, byte[] a1, List<ACL> a2, CreateMode a3, AsyncCallback.Create2Callback a4, Object a5) {
        enter();
        try {
            super.create(a0, a1, a2, a3, a4, a5);
        } finally {
            exit();
        }
    }

    @Override
    public void create(String a0, byte[] a1, List<ACL> a2, CreateMode a3, AsyncCallback.Create2Callback a4, Object a5, long a6) {
        enter();
        try {
            super.create(a0, a1, a2, a3, a4, a5, a6);
        } finally {
            exit();
        }
    }

    @Override
    public void delete(String a0, int a1) throws InterruptedException, KeeperException {
        enter();
        try {
            super.delete(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public List<OpResult> multi(Iterable<Op> a0) throws InterruptedException, KeeperException {
        enter();
        try {
            return super.multi(a0);
        } finally {
            exit();
        }
    }

    @Override
    public void multi(Iterable<Op> a0, AsyncCallback.MultiCallback a1, Object a2) {
        enter();
        try {
            super.multi(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void delete(String a0, int a1, AsyncCallback.VoidCallback a2, Object a3) {
        enter();
        try {
            super.delete(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public Stat exists(String a0, Watcher a1) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.exists(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public Stat exists(String a0, boolean a1) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.exists(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public void exists(String a0, Watcher a1, AsyncCallback.StatCallback a2, Object a3) {
        enter();
        try {
            super.exists(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public void exists(String a0, boolean a1, AsyncCallback.StatCallback a2, Object a3) {
        enter();
        try {
            super.exists(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public byte[] getData(String a0, Watcher a1, Stat a2) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getData(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public byte[] getData(String a0, boolean a1, Stat a2) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getData(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void getData(String a0, Watcher a1, AsyncCallback.DataCallback a2, Object a3) {
        enter();
        try {
            super.getData(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public void getData(String a0, boolean a1, AsyncCallback.DataCallback a2, Object a3) {
        enter();
        try {
            super.getData(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public byte[] getConfig(Watcher a0, Stat a1) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getConfig(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public void getConfig(Watcher a0, AsyncCallback.DataCallback a1, Object a2) {
        enter();
        try {
            super.getConfig(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public byte[] getConfig(boolean a0, Stat a1) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getConfig(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public void getConfig(boolean a0, AsyncCallback.DataCallback a1, Object a2) {
        enter();
        try {
            super.getConfig(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public Stat setData(String a0, byte[] a1, int a2) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.setData(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void setData(String a0, byte[] a1, int a2, AsyncCallback.StatCallback a3, Object a4) {
        enter();
        try {
            super.setData(a0, a1, a2, a3, a4);
        } finally {
            exit();
        }
    }

    @Override
    public List<ACL> getACL(String a0, Stat a1) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getACL(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public void getACL(String a0, Stat a1, AsyncCallback.ACLCallback a2, Object a3) {
        enter();
        try {
            super.getACL(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public Stat setACL(String a0, List<ACL> a1, int a2) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.setACL(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void setACL(String a0, List<ACL> a1, int a2, AsyncCallback.StatCallback a3, Object a4) {
        enter();
        try {
            super.setACL(a0, a1, a2, a3, a4);
        } finally {
            exit();
        }
    }

    @Override
    public List<String> getChildren(String a0, Watcher a1) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getChildren(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public List<String> getChildren(String a0, boolean a1) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getChildren(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public void getChildren(String a0, Watcher a1, AsyncCallback.ChildrenCallback a2, Object a3) {
        enter();
        try {
            super.getChildren(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public void getChildren(String a0, boolean a1, AsyncCallback.ChildrenCallback a2, Object a3) {
        enter();
        try {
            super.getChildren(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public List<String> getChildren(String a0, Watcher a1, Stat a2) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getChildren(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public List<String> getChildren(String a0, boolean a1, Stat a2) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getChildren(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void getChildren(String a0, Watcher a1, AsyncCallback.Children2Callback a2, Object a3) {
        enter();
        try {
            super.getChildren(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public void getChildren(String a0, boolean a1, AsyncCallback.Children2Callback a2, Object a3) {
        enter();
        try {
            super.getChildren(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public int getAllChildrenNumber(String a0) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getAllChildrenNumber(a0);
        } finally {
            exit();
        }
    }

    @Override
    public void getAllChildrenNumber(String a0, AsyncCallback.AllChildrenNumberCallback a1, Object a2) {
        enter();
        try {
            super.getAllChildrenNumber(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public List<String> getEphemerals() throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getEphemerals();
        } finally {
            exit();
        }
    }

    @Override
    public List<String> getEphemerals(String a0) throws KeeperException, InterruptedException {
        enter();
        try {
            return super.getEphemerals(a0);
        } finally {
            exit();
        }
    }

    @Override
    public void getEphemerals(String a0, AsyncCallback.EphemeralsCallback a1, Object a2) {
        enter();
        try {
            super.getEphemerals(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void getEphemerals(AsyncCallback.EphemeralsCallback a0, Object a1) {
        enter();
        try {
            super.getEphemerals(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public void sync(String a0) throws KeeperException, InterruptedException {
        enter();
        try {
            super.sync(a0);
        } finally {
            exit();
        }
    }

    @Override
    public void sync(String a0, AsyncCallback.VoidCallback a1, Object a2) {
        enter();
        try {
            super.sync(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void removeWatches(String a0, Watcher a1, Watcher.WatcherType a2, boolean a3) throws InterruptedException, KeeperException {
        enter();
        try {
            super.removeWatches(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public void removeWatches(String a0, Watcher a1, Watcher.WatcherType a2, boolean a3, AsyncCallback.VoidCallback a4, Object a5) {
        enter();
        try {
            super.removeWatches(a0, a1, a2, a3, a4, a5);
        } finally {
            exit();
        }
    }

    @Override
    public void removeAllWatches(String a0, Watcher.WatcherType a1, boolean a2) throws InterruptedException, KeeperException {
        enter();
        try {
            super.removeAllWatches(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void removeAllWatches(String a0, Watcher.WatcherType a1, boolean a2, AsyncCallback.VoidCallback a3, Object a4) {
        enter();
        try {
            super.removeAllWatches(a0, a1, a2, a3, a4);
        } finally {
            exit();
        }
    }

    @Override
    public void addWatch(String a0, Watcher a1, AddWatchMode a2) throws KeeperException, InterruptedException {
        enter();
        try {
            super.addWatch(a0, a1, a2);
        } finally {
            exit();
        }
    }

    @Override
    public void addWatch(String a0, AddWatchMode a1) throws KeeperException, InterruptedException {
        enter();
        try {
            super.addWatch(a0, a1);
        } finally {
            exit();
        }
    }

    @Override
    public void addWatch(String a0, Watcher a1, AddWatchMode a2, AsyncCallback.VoidCallback a3, Object a4) {
        enter();
        try {
            super.addWatch(a0, a1, a2, a3, a4);
        } finally {
            exit();
        }
    }

    @Override
    public void addWatch(String a0, AddWatchMode a1, AsyncCallback.VoidCallback a2, Object a3) {
        enter();
        try {
            super.addWatch(a0, a1, a2, a3);
        } finally {
            exit();
        }
    }

    @Override
    public List<ClientInfo> whoAmI() throws InterruptedException {
        enter();
        try {
            return super.whoAmI();
        } finally {
            exit();
        }
    }
}
