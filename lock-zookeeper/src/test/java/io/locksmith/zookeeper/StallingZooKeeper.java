package io.locksmith.zookeeper;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.curator.utils.ZookeeperFactory;
import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;

/**
 * A ZooKeeper client handle whose answers can be held back: the requests reach the server and are applied, and
 * only their answers wait, as far as the caller can tell lost on the way. Covers the asynchronous create,
 * getChildren and delete that Curator's background operations send.
 */
final class StallingZooKeeper extends ZooKeeper {

    private final Stall stall;

    private StallingZooKeeper(String connectString, int sessionTimeout, Watcher watcher, boolean canBeReadOnly,
            ZKClientConfig config, Stall stall) throws IOException {
        super(connectString, sessionTimeout, watcher, canBeReadOnly, config);
        this.stall = stall;
    }

    /** A factory for Curator whose handles hold back the answers {@code stall} is told to. */
    static ZookeeperFactory factory(Stall stall) {
        return new ZookeeperFactory() {
            @Override
            public ZooKeeper newZooKeeper(String connectString, int sessionTimeout, Watcher watcher,
                    boolean canBeReadOnly) throws Exception {
                return newZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly, new ZKClientConfig());
            }

            @Override
            public ZooKeeper newZooKeeper(String connectString, int sessionTimeout, Watcher watcher,
                    boolean canBeReadOnly, ZKClientConfig config) throws Exception {
                return new StallingZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly,
                        config == null ? new ZKClientConfig() : config, stall);
            }
        };
    }

    /** Which answers to hold back, and the answers held. */
    static final class Stall {
        private Set<String> operations = Set.of();
        private final List<Runnable> held = new ArrayList<>();

        /** From now on, holds back the answers of {@code operations} ("create", "getChildren", "delete"). */
        synchronized void hold(String... operations) {
            this.operations = Set.of(operations);
        }

        /** Stops holding answers back and delivers the held ones, in order, on this thread. */
        void deliver() {
            List<Runnable> answers;
            synchronized (this) {
                operations = Set.of();
                answers = List.copyOf(held);
                held.clear();
            }
            answers.forEach(Runnable::run);
        }

        /** Stops holding answers back and forgets the held ones: lost for good. */
        synchronized void drop() {
            operations = Set.of();
            held.clear();
        }

        /** How many answers are held back now. */
        synchronized int held() {
            return held.size();
        }

        /** Runs {@code answer} now, or keeps it if answers of {@code operation} are held back. */
        private void answer(String operation, Runnable answer) {
            synchronized (this) {
                if (operations.contains(operation)) {
                    held.add(answer);
                    return;
                }
            }
            answer.run();
        }
    }

    @Override
    public void create(String path, byte[] data, List<ACL> acl, CreateMode mode, AsyncCallback.Create2Callback cb,
            Object ctx, long ttl) {
        super.create(path, data, acl, mode, (rc, p, c, name, stat) -> stall.answer("create",
                () -> cb.processResult(rc, p, c, name, stat)), ctx, ttl);
    }

    @Override
    public void getChildren(String path, Watcher watcher, AsyncCallback.Children2Callback cb, Object ctx) {
        super.getChildren(path, watcher, (rc, p, c, children, stat) -> stall.answer("getChildren",
                () -> cb.processResult(rc, p, c, children, stat)), ctx);
    }

    @Override
    public void getChildren(String path, boolean watch, AsyncCallback.Children2Callback cb, Object ctx) {
        super.getChildren(path, watch, (rc, p, c, children, stat) -> stall.answer("getChildren",
                () -> cb.processResult(rc, p, c, children, stat)), ctx);
    }

    @Override
    public void delete(String path, int version, AsyncCallback.VoidCallback cb, Object ctx) {
        super.delete(path, version, (rc, p, c) -> stall.answer("delete", () -> cb.processResult(rc, p, c)), ctx);
    }
}
