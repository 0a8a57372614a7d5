package io.locksmith.zookeeper;

import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.TimeSource;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.StoreEvents;
import io.locksmith.zookeeper.ZooKeeperLockProviders.SuspendedPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ZooKeeper {@link LockStore}: one ephemeral-sequential node per provider and lock under the lock's
 * container parent; the node with the lowest sequence number holds the lock, every other node waits for its
 * predecessor.
 *
 * <p><b>Acquire.</b> The first attempt creates the provider's node (protected, so that a connection loss during the
 * create leaves no unknown node behind) and lists the parent's children: create + getChildren, the same two requests
 * as Curator's {@code InterProcessMutex}, but the listing is sent right behind the create, so the caller waits for
 * one round trip instead of two (see {@code createAndList}). The create answers with the node's {@link Stat}, whose
 * creation zxid is the fencing token: zxids grow with every write to the ensemble, so a later holder's node always
 * has a larger one, even after the container parent was reaped and recreated and sequence numbers started again from
 * zero. If the node is not the lowest, the store watches only its predecessor (no herd) and answers busy; the next
 * attempt lists the children again with the node it already has, so the provider keeps its place in the queue. An
 * attempt with a zero wait is the caller's last: a node that is not the lowest is deleted at once. A node's name
 * carries the owner id of the acquisition run that created it ({@code <clientId>.<number>}, see {@link LockPaths}),
 * so each run knows its own node, and a provider recognises and deletes its nodes that no run of it uses any more:
 * left over from a create whose answer never arrived, or from a release whose answer was lost.
 *
 * <p><b>State machine of a node</b> (transitions under the node's monitor): WAITING → HELD when it is the lowest;
 * WAITING → ABANDONED when its waiter gives up, through {@link #abandon} or when the machinery closes the name's
 * subscription, which it does once no thread of the provider waits for the name any more (the node is deleted
 * before the waiter's call returns); HELD → RELEASING → gone; HELD → DROPPED when a lease ends or the session is
 * given up (the node is deleted in the background). A node whose delete did not get an answer stays RELEASING
 * and is never held again: its delete may have been applied and the lock taken by another client since. The
 * machinery treats such a release as ended for the thread and retries {@code release} with the same owner id; the
 * store keeps deleting the node in the background meanwhile, and a retried release deletes it once more and
 * answers, or answers false at once once a delete has been confirmed. A node that is still there when the machinery
 * starts a new acquisition run for its name belongs to a run the machinery has ended: it is deleted, and the new
 * run creates a node of its own with a new token.
 *
 * <p><b>Leases.</b> ZooKeeper has none: a node lives until it is deleted or its session ends. So that a hold
 * still ends with its lease, as the contract wants for {@code tryLock(wait, lease)} and for renewals that keep
 * failing, the store deletes a held node once its lease has run out without a renewal, measured with the
 * provider's time source; this can only happen after the machinery itself stopped considering the hold valid.
 * Renewal checks that the nodes still exist, in one read-only multi request per batch (a transaction of check
 * ops on servers older than 3.6).
 *
 * <p><b>Session.</b> LOST (the session expired, or Curator gave up on it) means every node is gone or going: every
 * hold is reported lost. SUSPENDED follows the {@link SuspendedPolicy}, and so does READ_ONLY: a member that lost
 * the quorum answers reads but cannot vouch for the session, which the quorum may have expired meanwhile, so a
 * read-only connection counts as suspended until a member of the quorum takes the client back (it neither starts
 * a new suspension period nor ends one). Holds given up while the session may still be alive are deleted in the
 * background (Curator's guaranteed delete), so that they do not block others.
 *
 * <p>Every call waits for Curator in the background and at most the operation timeout, then fails with
 * {@link LockBackendException}; an interrupt ends the wait at once the same way, with the interrupt flag left set.
 */
final class ZooKeeperLockStore implements LockStore {

    private static final Logger log = LoggerFactory.getLogger(ZooKeeperLockStore.class);
    private static final byte[] NO_DATA = new byte[0];

    private final CuratorFramework client;
    private final boolean ownsClient;
    private final String address;
    private final LockPaths paths;
    private final List<ACL> acl;
    private final SuspendedPolicy suspendedPolicy;
    private final long timeoutNanos;
    private final TimeSource time;
    private final ConcurrentHashMap<String, Node> nodes = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Set<Runnable>> subscribers = new ConcurrentHashMap<>();
    /**
     * Nodes given up whose delete has not been confirmed yet: sent again whenever the client reconnects, and
     * every operation timeout while any is left (a sweep that runs only then).
     */
    private final Set<String> pendingDeletes = ConcurrentHashMap.newKeySet();
    /**
     * The node of each hold whose release got no answer, by name and owner id, until a delete of it is confirmed:
     * what a retried {@link #release} deletes again.
     */
    private final ConcurrentHashMap<HoldKey, String> unconfirmedReleases = new ConcurrentHashMap<>();
    private final AtomicBoolean sweepPlanned = new AtomicBoolean();
    private final ScheduledThreadPoolExecutor timers;
    private final ConnectionStateListener connectionListener = this::connectionChanged;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile StoreEvents events;
    /** Whether the server takes read-only multi requests; cleared on the first one it refuses. */
    private volatile boolean multiRead = true;
    private final Object expiryLock = new Object();
    /** The planned look at the held nodes' leases, guarded by {@link #expiryLock}; null if none is planned. */
    private ScheduledFuture<?> expiryCheck;
    /** When (time source nanos) {@link #expiryCheck} comes, guarded by {@link #expiryLock}. */
    private long nextExpiryCheck;
    /** Counts SUSPENDED periods, so that a timer knows whether the period it was set for has ended. */
    private long suspendedEpoch;
    /** Whether a SUSPENDED period is going on (entered by SUSPENDED or READ_ONLY), guarded by this. */
    private boolean suspendedNow;
    private ScheduledFuture<?> suspendedTimer;

    ZooKeeperLockStore(CuratorFramework client, boolean ownsClient, String address, String namespace, List<ACL> acl,
            SuspendedPolicy suspendedPolicy, Duration operationTimeout, TimeSource time) {
        this.client = client;
        this.ownsClient = ownsClient;
        this.address = address;
        this.paths = new LockPaths(namespace);
        this.acl = acl;
        this.suspendedPolicy = suspendedPolicy;
        this.timeoutNanos = operationTimeout.toNanos();
        this.time = time;
        this.timers = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "locksmith-zookeeper-timer");
            t.setDaemon(true);
            return t;
        });
        timers.setRemoveOnCancelPolicy(true);
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public void start(StoreEvents storeEvents) {
        this.events = storeEvents;
        client.getConnectionStateListenable().addListener(connectionListener);
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        String parent = paths.parent(name);
        Node node = nodes.get(name);
        if (node != null && LockPaths.isLaterRun(node.owner, owner)) {
            // A late call of a run the machinery has given up: it must not touch the newer run's node, nor leave one.
            return Acquisition.busy();
        }
        if (node != null && (!node.isWaiting() || !node.owner.equals(owner))) {
            // The node of an earlier acquisition run the machinery has ended (it starts a run for a name only once no
            // other run of it holds or attempts the name): that node must go, and a new hold needs a new node so that
            // its token is larger.
            node.drop();
            node.abandon();
            forget(node);
            deleteWithin(node, deadline, "delete the node of an ended hold");
            node = null;
        }
        try {
            checkNotInterrupted("acquire lock '" + name + "'");
            boolean fresh;
            while (true) {
                List<String> children;
                if (node == null) {
                    checkNotInterrupted("create a lock node under " + parent);
                    CreatedAndListed first = createAndList(name, owner, parent, deadline);
                    node = first.node();
                    fresh = true;
                    // A listing sent behind the create shows the node, unless Curator had to create the parent
                    // first (the listing then ran before the node existed): list again.
                    children = first.children() != null && first.children().contains(node.child)
                            ? first.children() : children(parent, deadline);
                } else {
                    fresh = false;
                    children = children(parent, deadline);
                }
                if (!children.contains(node.child)) {
                    // Gone with an expired session, deleted by an operator, or abandoned meanwhile.
                    forget(node);
                    if (fresh && node.abandon()) {
                        throw failure("the lock node " + node.path + " vanished right after it was created "
                                + "(session expired?)", null);
                    }
                    node = null;
                    continue;
                }
                List<String> queue = new ArrayList<>(children.size());
                for (String child : children) {
                    if (!child.equals(node.child) && LockPaths.isOfClient(child, owner)
                            && !LockPaths.isLaterRun(LockPaths.owner(child), owner)) {
                        // This provider's but not this run's node: a create whose answer never arrived, or the node
                        // of an ended run whose delete has not landed yet. No other run of this provider holds or
                        // waits for the name now, so it must not keep a place.
                        deleteWithin(parent + "/" + child, deadline, "delete a stray node of this provider");
                    } else {
                        queue.add(child);
                    }
                }
                queue.sort(LockPaths.BY_SEQUENCE);
                int index = queue.indexOf(node.child);
                if (index == 0) {
                    if (node.acquire(lease)) {
                        scheduleExpiry(node);
                        return Acquisition.acquired(node.czxid);
                    }
                    node = null; // abandoned meanwhile: start over with a new node
                    continue;
                }
                if (wait.isZero()) {
                    // One attempt only: nobody will wait on this node, so it must not keep a place in the queue.
                    forget(node);
                    if (node.abandon()) {
                        deleteWithin(node, deadline, "delete the node of a failed attempt");
                    }
                    return Acquisition.busy();
                }
                if (!subscribers.containsKey(name)) {
                    // The machinery subscribes after this answer and asks again at once; the watch is set then.
                    return Acquisition.busy();
                }
                if (watch(parent + "/" + queue.get(index - 1), node, deadline)) {
                    return Acquisition.busy();
                }
                // The predecessor went away between the listing and the watch: look again.
            }
        } catch (RuntimeException e) {
            if (node != null) {
                forget(node);
                if (node.abandon()) {
                    if (Thread.currentThread().isInterrupted() && client.getZookeeperClient().isConnected()) {
                        // Interrupted, the store is fine: undo the attempt before the caller hears of the interrupt,
                        // so that nothing of it keeps another client from the lock (the node may be the lowest).
                        deleteIgnoringInterrupt(node.path, "delete the node of an interrupted attempt");
                    } else {
                        // The store is failing: do not make the caller wait another timeout.
                        discard(node.path);
                    }
                }
            }
            throw e;
        }
    }

    /** A new node and, if its listing could be sent behind the create, the parent's children after it. */
    private record CreatedAndListed(Node node, List<String> children) {
    }

    /**
     * Creates a node and lists the parent's children without waiting for the create's answer in between: a
     * session's requests are answered in the order they were sent, so the listing sees the new node, and the
     * two requests cost one round trip of waiting instead of two. The listing's answer is null if it could not
     * be sent or did not succeed (the parent did not exist yet, for instance); the caller lists again then.
     */
    private CreatedAndListed createAndList(String name, String owner, String parent, long deadline) {
        CompletableFuture<CuratorEvent> created = startCreate(name, owner);
        CompletableFuture<CuratorEvent> listed;
        try {
            listed = launch(callback -> client.getChildren().inBackground(callback).forPath(parent), null);
        } catch (Exception e) {
            listed = null;
        }
        // A node whose create is unanswered may exist and be the lowest already: an interrupt does not end this
        // wait while the client is connected, so that the node is known and can be deleted before the caller returns.
        Node node = created(name, owner, awaitAnswer(created, "create a lock node under " + parent, deadline, true),
                deadline);
        if (listed == null) {
            return new CreatedAndListed(node, null);
        }
        try {
            CuratorEvent listing = awaitAnswer(listed, "list the lock nodes of " + parent, deadline);
            boolean ok = listing.getResultCode() == KeeperException.Code.OK.intValue();
            return new CreatedAndListed(node, ok ? listing.getChildren() : null);
        } catch (LockBackendException e) {
            // the node is known now: the caller's own listing fails the same way and gives the node up
            return new CreatedAndListed(node, null);
        }
    }

    private CompletableFuture<CuratorEvent> startCreate(String name, String owner) {
        String prefix = paths.nodePrefix(name, owner);
        try {
            return launch(callback -> {
                var builder = client.create().creatingParentContainersIfNeeded().withProtection()
                        .withMode(CreateMode.EPHEMERAL_SEQUENTIAL);
                if (acl != null) {
                    builder.withACL(acl, true).inBackground(callback).forPath(prefix, NO_DATA);
                } else {
                    builder.inBackground(callback).forPath(prefix, NO_DATA);
                }
            }, late -> {
                if (late.getResultCode() == KeeperException.Code.OK.intValue()) {
                    discard(late.getName());
                }
            });
        } catch (Exception e) {
            throw failure("could not create a lock node under " + paths.parent(name), e);
        }
    }

    private Node created(String name, String owner, CuratorEvent event, long deadline) {
        check(event, "create a lock node under " + paths.parent(name));
        Stat stat = event.getStat();
        if (stat == null) {
            stat = statOfFound(event.getName(), deadline);
        }
        Node node = new Node(name, owner, event.getName(), stat.getCzxid());
        nodes.put(name, node);
        return node;
    }

    /**
     * The Stat of a node that Curator's protected mode found instead of creating it: when a create loses its
     * connection (a member of the ensemble dies under it), Curator looks for the node by its protected prefix
     * and answers OK with the node's name only. Its creation zxid, the fencing token, is read here; a node that
     * cannot be read is given up, so it cannot stay in the queue unowned.
     */
    private Stat statOfFound(String path, long deadline) {
        CuratorEvent found;
        try {
            found = await("read the lock node " + path + " found after a connection loss", deadline,
                    callback -> client.checkExists().inBackground(callback).forPath(path), null);
        } catch (RuntimeException e) {
            discard(path);
            throw e;
        }
        if (found.getResultCode() != KeeperException.Code.OK.intValue() || found.getStat() == null) {
            discard(path);
            throw failure("the lock node " + path + ", found after a connection loss, could not be read: "
                    + KeeperException.Code.get(found.getResultCode()), null);
        }
        return found.getStat();
    }

    private List<String> children(String parent, long deadline) {
        CuratorEvent event = await("list the lock nodes of " + parent, deadline,
                callback -> client.getChildren().inBackground(callback).forPath(parent), null);
        if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
            return List.of();
        }
        check(event, "list the lock nodes of " + parent);
        return event.getChildren();
    }

    /** Watches {@code predecessor} for {@code node}'s waiters; false if it no longer exists. */
    private boolean watch(String predecessor, Node node, long deadline) {
        // getData() instead of exists(): exists() on a node that is already gone would leave a watch behind.
        CuratorEvent event = await("watch " + predecessor, deadline,
                callback -> client.getData().usingWatcher(node.watcher).inBackground(callback).forPath(predecessor),
                null);
        if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
            return false;
        }
        check(event, "watch " + predecessor);
        return true;
    }

    // ---------------------------------------------------------------- release, abandon

    @Override
    public boolean release(String name, String owner) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        Node node = nodes.get(name);
        if (node != null && node.owner.equals(owner) && node.abandon()) {
            // a waiting node of an attempt whose outcome the machinery did not learn: it held nothing
            forget(node);
            deleteWithin(node, deadline, "delete the node of a failed attempt");
            return false;
        }
        if (node == null || !node.owner.equals(owner) || !node.startRelease()) {
            return releaseAgain(name, owner, deadline);
        }
        // Guaranteed: should the answer get lost, Curator keeps deleting in the background until it succeeds.
        String what = "delete " + node.path;
        boolean answered = false;
        try {
            CuratorEvent event = await(what, deadline,
                    callback -> client.delete().guaranteed().inBackground(callback).forPath(node.path),
                    late -> deleteAnswered(node.path, late));
            boolean deleted = event.getResultCode() == KeeperException.Code.OK.intValue();
            if (!deleted && event.getResultCode() != KeeperException.Code.NONODE.intValue()) {
                check(event, what);
            }
            answered = true;
            forget(node);
            return deleted;
        } finally {
            if (!answered) {
                // The delete may have been applied and the lock taken by another client since: the node stays
                // RELEASING, never held again. The store keeps deleting it; a retried release deletes it again.
                forget(node);
                unconfirmedReleases.put(new HoldKey(name, owner), node.path);
                keepDeleting(node.path);
            }
        }
    }

    /**
     * A release of a hold this store no longer counts as held by {@code owner}: if an earlier release of it got no
     * answer and no delete of its node has been confirmed since, the node is deleted again, and the answer tells
     * whether this call deleted it; otherwise nothing is left to do (false).
     */
    private boolean releaseAgain(String name, String owner, long deadline) {
        String path = unconfirmedReleases.get(new HoldKey(name, owner));
        if (path == null) {
            return false;
        }
        String what = "delete " + path + " again (an earlier delete got no answer)";
        CuratorEvent event = await(what, deadline, callback -> client.delete().inBackground(callback).forPath(path),
                late -> deleteAnswered(path, late));
        int rc = event.getResultCode();
        if (rc != KeeperException.Code.OK.intValue() && rc != KeeperException.Code.NONODE.intValue()) {
            check(event, what);
        }
        deleted(path);
        return rc == KeeperException.Code.OK.intValue();
    }

    @Override
    public void abandon(String name, String owner) {
        Node node = nodes.get(name);
        // owner null: the machinery's subscription for the name was closed, whichever run's node waits
        if (node != null && (owner == null || node.owner.equals(owner)) && node.abandon()) {
            forget(node);
            if (closed.get() || !client.getZookeeperClient().isConnected()) {
                discard(node.path);
            } else {
                // Synchronously, so that the place is free by the time the caller's failure is seen.
                deleteWithin(node, System.nanoTime() + timeoutNanos, "delete the node of an abandoned wait");
            }
        }
    }

    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        checkOpen();
        // add inside compute: a concurrent last unsubscribe drops the set, and must not take this one with it
        subscribers.compute(name, (n, set) -> {
            Set<Runnable> listeners = set != null ? set : new CopyOnWriteArraySet<>();
            listeners.add(onRelease);
            return listeners;
        });
        return () -> {
            boolean last = removeSubscriber(name, onRelease);
            if (last) {
                // The machinery drops its subscription when no thread of the provider waits for the name any
                // more, having acquired or given up: a node still waiting then has nobody behind it.
                abandon(name, null);
            }
        };
    }

    private boolean removeSubscriber(String name, Runnable onRelease) {
        boolean[] last = {false};
        subscribers.computeIfPresent(name, (key, set) -> {
            set.remove(onRelease);
            last[0] = set.isEmpty();
            return set.isEmpty() ? null : set;
        });
        return last[0];
    }

    private void wake(String name) {
        Set<Runnable> waiting = subscribers.get(name);
        if (waiting != null) {
            waiting.forEach(Runnable::run);
        }
    }

    private void wakeAll() {
        subscribers.values().forEach(set -> set.forEach(Runnable::run));
    }

    // ---------------------------------------------------------------- renew, isLocked

    @Override
    public Set<String> renew(Map<String, String> holds, Duration lease) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        Set<String> gone = new HashSet<>();
        List<Node> pending = new ArrayList<>(holds.size());
        for (Map.Entry<String, String> hold : holds.entrySet()) {
            String name = hold.getKey();
            Node node = nodes.get(name);
            if (node == null || !node.owner.equals(hold.getValue()) || node.isWaiting()) {
                gone.add(name);
            } else {
                pending.add(node);
            }
        }
        long renewedAt = time.nanoTime();
        List<Node> missing = multiRead ? missingByMultiRead(pending, deadline) : missingByChecks(pending, deadline);
        for (Node node : missing) {
            pending.remove(node);
            if (node.isGoneFor(nodes)) {
                forget(node);
                gone.add(node.name);
            }
        }
        for (Node node : pending) {
            node.extendLease(renewedAt + lease.toNanos());
        }
        return gone;
    }

    /**
     * The nodes that no longer exist, in one read-only multi request (ZooKeeper 3.6+): answered by the member the
     * client is connected to, without a round through the quorum, each read failing or succeeding on its own.
     * Falls back to {@link #missingByChecks} on a server that does not know read-only multi requests.
     */
    private List<Node> missingByMultiRead(List<Node> nodes, long deadline) {
        List<Op> reads = new ArrayList<>(nodes.size());
        for (Node node : nodes) {
            reads.add(Op.getData(ZKPaths.fixForNamespace(client.getNamespace(), node.path)));
        }
        String what = "read " + nodes.size() + " held lock node(s)";
        CompletableFuture<Object[]> answer = new CompletableFuture<>();
        try {
            client.getZookeeperClient().getZooKeeper().multi(reads,
                    (rc, path, ctx, results) -> answer.complete(new Object[] {rc, results}), null);
        } catch (Exception e) {
            throw failure("could not " + what, e);
        }
        Object[] result = awaitAnswer(answer, what, deadline);
        int rc = (Integer) result[0];
        if (rc == KeeperException.Code.UNIMPLEMENTED.intValue()) {
            log.info("{} - the server does not support read-only multi requests; checking held locks with "
                    + "check transactions", address);
            multiRead = false;
            return missingByChecks(nodes, deadline);
        }
        @SuppressWarnings("unchecked")
        List<OpResult> results = (List<OpResult>) result[1];
        // The answer carries the first error as its code, but every read has its own result.
        if (results == null || results.size() != nodes.size()) {
            throw failure("could not " + what + ": " + describe(rc), null);
        }
        List<Node> missing = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            if (results.get(i) instanceof OpResult.ErrorResult error) {
                if (error.getErr() != KeeperException.Code.NONODE.intValue()) {
                    throw failure("could not " + what + ": " + describe(error.getErr()), null);
                }
                missing.add(nodes.get(i));
            }
        }
        return missing;
    }

    /** The nodes that no longer exist, by transactions of check ops: one round per missing node, plus one. */
    private List<Node> missingByChecks(List<Node> nodes, long deadline) {
        List<Node> pending = new ArrayList<>(nodes);
        List<Node> missing = new ArrayList<>();
        // A multi of check ops stops at its first missing node: note that one and check the rest again.
        while (!pending.isEmpty()) {
            List<CuratorOp> checks = new ArrayList<>(pending.size());
            for (Node node : pending) {
                checks.add(checkOp(node.path));
            }
            CuratorEvent event = await("check " + pending.size() + " held lock node(s)", deadline,
                    callback -> client.transaction().inBackground(callback).forOperations(checks), null);
            if (event.getResultCode() == KeeperException.Code.OK.intValue()) {
                break;
            }
            int index = firstMissing(event);
            if (index < 0) {
                check(event, "check " + pending.size() + " held lock node(s)");
                throw failure("checking held lock nodes failed: " + describe(event.getResultCode()), null);
            }
            missing.add(pending.remove(index));
        }
        return missing;
    }

    /** Makes renewals use check transactions, as with a server older than 3.6; for tests. */
    void useCheckTransactions() {
        multiRead = false;
    }

    private CuratorOp checkOp(String path) {
        try {
            return client.transactionOp().check().forPath(path);
        } catch (Exception e) {
            throw failure("could not prepare a check of " + path, e);
        }
    }

    private static int firstMissing(CuratorEvent event) {
        List<CuratorTransactionResult> results = event.getOpResults();
        if (results == null) {
            return -1;
        }
        for (int i = 0; i < results.size(); i++) {
            if (results.get(i).getError() == KeeperException.Code.NONODE.intValue()) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public boolean isLocked(String name) {
        checkOpen();
        String parent = paths.parent(name);
        CuratorEvent event = await("look at " + parent, System.nanoTime() + timeoutNanos,
                callback -> client.checkExists().inBackground(callback).forPath(parent), null);
        if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
            return false;
        }
        check(event, "look at " + parent);
        return event.getStat() != null && event.getStat().getNumChildren() > 0;
    }

    // ---------------------------------------------------------------- inspect, forceRelease

    /*
     * The holder is the lowest-sequence node under the lock's parent, as every provider's acquire decides. Its name
     * carries the client id of the provider that created it (see LockPaths), and its Stat the creation time and
     * the creation zxid, which is the holder's fencing token. A listing gives no Stat of the children, so inspect
     * costs two round trips: getChildren of the parent, then exists on the lowest node. The creation time is when
     * the holder joined the queue; if it waited behind others it began to hold later. ZooKeeper keeps nothing of a
     * lock once its last node is gone (the parent is a container that the server reaps), so a free lock has no last
     * token. A forced release deletes the lowest node only: the waiters keep their places, and the next one is
     * woken by its watch on that node like after a release; the holder's provider finds its node missing at its
     * next renewal or unlock and reports the hold lost.
     */

    @Override
    public LockInfo inspect(String name) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        String parent = paths.parent(name);
        while (true) {
            List<String> children = children(parent, deadline);
            if (children.isEmpty()) {
                return LockInfo.free(name, null);
            }
            String holder = Collections.min(children, LockPaths.BY_SEQUENCE);
            String path = parent + "/" + holder;
            CuratorEvent event = await("look at the holder's node " + path, deadline,
                    callback -> client.checkExists().inBackground(callback).forPath(path), null);
            if (event.getResultCode() == KeeperException.Code.NONODE.intValue() || event.getStat() == null) {
                continue; // released between the two reads: the next node holds it now, or nobody does
            }
            check(event, "look at the holder's node " + path);
            Stat stat = event.getStat();
            String owner = LockPaths.owner(holder);
            return LockInfo.held(name, owner == null ? holder : owner, Instant.ofEpochMilli(stat.getCtime()),
                    leaseRemaining(name, holder), stat.getCzxid());
        }
    }

    /** The lease left of this provider's hold on {@code name} if {@code holder} is its node; null otherwise. */
    private Duration leaseRemaining(String name, String holder) {
        Node node = nodes.get(name);
        if (node == null || !node.child.equals(holder) || !node.isHeld()) {
            return null;
        }
        return Duration.ofNanos(Math.max(0, node.leaseEnd() - time.nanoTime()));
    }

    @Override
    public boolean forceRelease(String name) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        String parent = paths.parent(name);
        List<String> children = children(parent, deadline);
        if (children.isEmpty()) {
            return false;
        }
        String path = parent + "/" + Collections.min(children, LockPaths.BY_SEQUENCE);
        String what = "delete the holder's node " + path;
        // Not guaranteed: an operator's delete that fails is reported to the operator, not retried behind their back.
        CuratorEvent event = await(what, deadline,
                callback -> client.delete().inBackground(callback).forPath(path), null);
        int rc = event.getResultCode();
        if (rc == KeeperException.Code.NONODE.intValue()) {
            // Released by its holder (or gone with its session) since the listing; the next node, if any, is a
            // holder that took the lock in the meantime and is left alone.
            return false;
        }
        if (rc == KeeperException.Code.NOAUTH.intValue()) {
            throw failure("could not " + what + ": NOAUTH - the lock's nodes are protected by a digest ACL and this "
                    + "provider is not authenticated with its credentials (open it with "
                    + "zookeeper://user:password@..., or build it on a client authorized with them)", null);
        }
        check(event, what);
        wake(name);
        return true;
    }

    // ---------------------------------------------------------------- leases

    /*
     * One timer task looks at the held nodes when the earliest lease may end, instead of a task per hold: a
     * task per acquisition would wake the timer thread at every acquisition (the new task is the earliest), a
     * thread handoff that costs an uncontended cycle more than a fast round trip on a small machine. A hold
     * makes sure that a check comes no later than its lease end; the check expires what has ended and plans
     * the next check for the earliest lease left, so renewed and released holds cost nothing until then.
     */

    private void scheduleExpiry(Node node) {
        planExpiryCheck(node.leaseEnd());
    }

    /** Makes sure that the held nodes are looked at no later than {@code at} (time source nanos). */
    private void planExpiryCheck(long at) {
        synchronized (expiryLock) {
            if (expiryCheck != null && nextExpiryCheck - at <= 0) {
                return;
            }
            if (expiryCheck != null) {
                expiryCheck.cancel(false);
            }
            try {
                expiryCheck = timers.schedule(this::checkExpiries, Math.max(0, at - time.nanoTime()),
                        TimeUnit.NANOSECONDS);
                nextExpiryCheck = at;
            } catch (RejectedExecutionException closing) {
                expiryCheck = null; // closing: every node goes with the store
            }
        }
    }

    /** Deletes the held nodes whose lease has ended, and plans the next check for the earliest lease left. */
    private void checkExpiries() {
        synchronized (expiryLock) {
            expiryCheck = null;
        }
        long now = time.nanoTime();
        boolean more = false;
        long next = 0;
        for (Node node : nodes.values()) {
            if (node.expire(now)) {
                log.debug("Lock '{}' on {}: lease ended without renewal, deleting {}", node.name, address,
                        node.path);
                forget(node);
                discard(node.path);
            } else if (node.isHeld()) {
                // renewed meanwhile, or a time source slower than the timer's clock
                long end = node.leaseEnd();
                next = more && next - end <= 0 ? next : end;
                more = true;
            }
        }
        if (more) {
            planExpiryCheck(next);
        }
    }

    // ---------------------------------------------------------------- session

    /** Curator's news of the connection; package-private so that tests can deliver states servers cannot produce. */
    void connectionChanged(CuratorFramework c, ConnectionState state) {
        switch (state) {
            // Waiters are not woken: a failover to another member must not disturb them. Once the session is
            // LOST they look again, and fail with LockBackendException if the ensemble is still away.
            // READ_ONLY: a member without the quorum cannot vouch for the session (see the class comment).
            case SUSPENDED, READ_ONLY -> suspended();
            case LOST -> lost();
            case RECONNECTED, CONNECTED -> {
                endSuspension();
                retryPendingDeletes();
                wakeAll();
            }
            default -> { }
        }
    }

    private void suspended() {
        synchronized (this) {
            if (suspendedNow) {
                return; // read-only after SUSPENDED, or SUSPENDED after read-only: the period goes on
            }
            suspendedNow = true;
        }
        if (suspendedPolicy == SuspendedPolicy.LOST) {
            dropHolds("the connection to ZooKeeper was suspended (suspended policy LOST)");
            return;
        }
        long sessionTimeout = client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
        if (sessionTimeout <= 0) {
            sessionTimeout = client.getZookeeperClient().getConnectionTimeoutMs();
        }
        long timeoutMs = sessionTimeout;
        synchronized (this) {
            long epoch = ++suspendedEpoch;
            if (suspendedTimer != null) {
                suspendedTimer.cancel(false);
            }
            try {
                suspendedTimer = timers.schedule(() -> {
                    synchronized (this) {
                        if (epoch != suspendedEpoch || suspendedTimer == null) {
                            return;
                        }
                        suspendedTimer = null;
                    }
                    dropHolds("the connection to ZooKeeper stayed suspended for the session timeout of "
                            + timeoutMs + " ms");
                }, timeoutMs, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException closing) {
                suspendedTimer = null;
            }
        }
    }

    private synchronized void endSuspension() {
        suspendedNow = false;
        suspendedEpoch++;
        if (suspendedTimer != null) {
            suspendedTimer.cancel(false);
            suspendedTimer = null;
        }
    }

    private void lost() {
        endSuspension();
        // Every node belonged to the lost session: forget the waiting ones too (their waiters create new nodes),
        // and delete what the server may still keep until it expires the old session.
        for (Node node : List.copyOf(nodes.values())) {
            forget(node);
            if (node.abandon() || node.drop()) {
                discard(node.path);
            }
        }
        reportAllLost("the ZooKeeper session was lost (expired, or unreachable for longer than its timeout)");
        wakeAll();
    }

    /** Gives up every hold, deleting their nodes in the background; waiting nodes keep their place. */
    private void dropHolds(String reason) {
        for (Node node : List.copyOf(nodes.values())) {
            if (node.drop()) {
                forget(node);
                discard(node.path);
            }
        }
        reportAllLost(reason);
    }

    private void reportAllLost(String reason) {
        StoreEvents sink = events;
        if (sink != null && !closed.get()) {
            sink.allHoldsLost(reason);
        }
    }

    // ---------------------------------------------------------------- close

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        client.getConnectionStateListenable().removeListener(connectionListener);
        endSuspension();
        timers.shutdownNow();
        List<Node> left = List.copyOf(nodes.values());
        nodes.clear();
        unconfirmedReleases.clear();
        if (ownsClient) {
            // Closing the session deletes every ephemeral node at once.
            client.close();
            return;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        for (Node node : left) {
            node.drop();
            node.abandon();
            if (client.getZookeeperClient().isConnected() && System.nanoTime() - deadline < 0) {
                deleteWithin(node.path, deadline, "delete a node left at close");
            } else {
                discard(node.path);
            }
        }
    }

    // ---------------------------------------------------------------- plumbing

    private void forget(Node node) {
        nodes.remove(node.name, node);
    }

    private void deleteWithin(Node node, long deadline, String why) {
        deleteWithin(node.path, deadline, why);
    }

    /**
     * Deletes {@code path} waiting until the deadline; if that fails, or the wait is interrupted (the flag stays
     * set), keeps trying in the background.
     */
    private void deleteWithin(String path, long deadline, String why) {
        try {
            CuratorEvent event = await(why + ": " + path, deadline,
                    callback -> client.delete().guaranteed().inBackground(callback).forPath(path),
                    late -> deleteAnswered(path, late));
            int rc = event.getResultCode();
            if (rc != KeeperException.Code.OK.intValue() && rc != KeeperException.Code.NONODE.intValue()) {
                log.warn("{} - could not {} ({}); retrying in the background", address, why + " " + path,
                        describe(rc));
                discard(path);
            } else {
                deleted(path);
            }
        } catch (LockBackendException e) {
            keepDeleting(path);
            if (!Thread.currentThread().isInterrupted()) {
                log.warn("{} - could not {} in time; the delete goes on in the background: {}", address, why,
                        e.getMessage());
            }
        }
    }

    /**
     * Deletes {@code path} in the background. Curator's guaranteed delete keeps trying while the client is
     * disconnected, but a node of a session that outlived an outage must not depend on that alone (it once
     * stayed for more than 30 s after the quorum was back, blocking the lock): until a delete is confirmed the
     * path stays pending, and every reconnection sends its delete again.
     */
    private void discard(String path) {
        if (ownsClient && closed.get()) {
            return; // the session ends with the client
        }
        pendingDeletes.add(path);
        sendDelete(path);
        planSweep();
    }

    /**
     * Keeps deleting {@code path} in the background, whose delete is on its way but unanswered: it is sent again
     * on every reconnection and sweep until one is confirmed.
     */
    private void keepDeleting(String path) {
        if (ownsClient && closed.get()) {
            return;
        }
        pendingDeletes.add(path);
        planSweep();
    }

    /** {@link #deleteWithin} for one operation timeout, the thread's interrupt flag hidden meanwhile. */
    private void deleteIgnoringInterrupt(String path, String why) {
        boolean interrupted = Thread.interrupted();
        try {
            deleteWithin(path, System.nanoTime() + timeoutNanos, why);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A delete of {@code path} whose answer came after its caller gave up. */
    private void deleteAnswered(String path, CuratorEvent late) {
        int rc = late.getResultCode();
        if (rc == KeeperException.Code.OK.intValue() || rc == KeeperException.Code.NONODE.intValue()) {
            deleted(path);
        }
    }

    /** A delete of {@code path} is confirmed: nothing is left to send or to do again. */
    private void deleted(String path) {
        pendingDeletes.remove(path);
        unconfirmedReleases.values().remove(path);
    }

    private void retryPendingDeletes() {
        for (String path : pendingDeletes) {
            sendDelete(path);
        }
    }

    private void planSweep() {
        if (sweepPlanned.compareAndSet(false, true)) {
            try {
                timers.schedule(this::sweep, timeoutNanos, TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException closing) {
                sweepPlanned.set(false);
            }
        }
    }

    private void sweep() {
        sweepPlanned.set(false);
        if (pendingDeletes.isEmpty() || (ownsClient && closed.get())) {
            return;
        }
        if (client.getZookeeperClient().isConnected()) {
            retryPendingDeletes();
        }
        planSweep();
    }

    private void sendDelete(String path) {
        try {
            client.delete().guaranteed().inBackground((c, event) -> {
                int rc = event.getResultCode();
                if (rc == KeeperException.Code.OK.intValue() || rc == KeeperException.Code.NONODE.intValue()) {
                    deleted(path);
                } else {
                    log.warn("{} - background delete of {} failed: {}; it is sent again", address, path,
                            describe(rc));
                }
            }).forPath(path);
        } catch (Exception e) {
            log.warn("{} - could not start the background delete of {}: {}", address, path, e.toString());
        }
    }

    @FunctionalInterface
    private interface Launch {
        void start(BackgroundCallback callback) throws Exception;
    }

    /**
     * Starts one background operation and waits for its answer until {@code deadline}. An answer that arrives
     * after the caller gave up goes to {@code late}, if given.
     *
     * <p>An interrupt ends the wait at once with {@link LockBackendException}, the interrupt flag left set, like a
     * timeout: the outcome is unknown, and the machinery ends the acquisition run, so {@code lockInterruptibly()}
     * throws {@link InterruptedException} while {@code lock()} tries again with a new run. What the attempt leaves
     * behind is undone before {@code tryAcquire} returns while the client is connected, so that another client can
     * take the lock as soon as the interrupted caller returns: the attempt's node is deleted (one round trip), and
     * the answer of a create on its way is waited for first (its node may exist and be the lowest already). While
     * the client is disconnected nothing can be undone in time: the node is deleted in the background, or when the
     * create's late answer comes. The machinery hides the flag from releases, so {@code unlock()} still waits for
     * its answer.
     */
    private CuratorEvent await(String what, long deadline, Launch launch, Consumer<CuratorEvent> late) {
        CompletableFuture<CuratorEvent> answer;
        try {
            answer = launch(launch, late);
        } catch (Exception e) {
            throw failure("could not " + what, e);
        }
        return awaitAnswer(answer, what, deadline);
    }

    /** Starts one background operation; an answer that arrives after its waiter gave up goes to {@code late}. */
    private static CompletableFuture<CuratorEvent> launch(Launch launch, Consumer<CuratorEvent> late)
            throws Exception {
        CompletableFuture<CuratorEvent> answer = new CompletableFuture<>();
        launch.start((c, event) -> {
            if (!answer.complete(event) && late != null) {
                late.accept(event);
            }
        });
        return answer;
    }

    /** Waits for {@code answer} until {@code deadline} or an interrupt; see {@link #await}. */
    private <T> T awaitAnswer(CompletableFuture<T> answer, String what, long deadline) {
        return awaitAnswer(answer, what, deadline, false);
    }

    /**
     * Waits for {@code answer} until {@code deadline} or an interrupt; with {@code finishIfConnected}, an interrupt
     * ends the wait only if the client is disconnected at that moment (and is kept for the caller otherwise).
     */
    private <T> T awaitAnswer(CompletableFuture<T> answer, String what, long deadline, boolean finishIfConnected) {
        long start = System.nanoTime();
        boolean deferred = false;
        try {
            while (true) {
                try {
                    return answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    if (finishIfConnected && client.getZookeeperClient().isConnected()) {
                        deferred = true;
                        continue;
                    }
                    Thread.currentThread().interrupt();
                    if (answer.completeExceptionally(new CancellationException("interrupted"))) {
                        throw failure("interrupted after " + millis(System.nanoTime() - start) + " ms waiting for "
                                + "the answer to '" + what + "'", e);
                    }
                    return answer.join();
                } catch (TimeoutException e) {
                    if (answer.completeExceptionally(new CancellationException("timed out"))) {
                        throw failure("no answer to '" + what + "' after " + millis(System.nanoTime() - start)
                                + " ms (operation timeout " + millis(timeoutNanos) + " ms)", null);
                    }
                    return answer.join();
                } catch (ExecutionException e) {
                    throw failure("could not " + what, e.getCause());
                }
            }
        } finally {
            if (deferred) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Throws, the flag left set, if the thread is interrupted: nothing is sent for a caller that gave up. */
    private void checkNotInterrupted(String what) {
        if (Thread.currentThread().isInterrupted()) {
            throw failure("interrupted before it could " + what, null);
        }
    }

    private void check(CuratorEvent event, String what) {
        int rc = event.getResultCode();
        if (rc != KeeperException.Code.OK.intValue()) {
            throw failure("could not " + what + ": " + describe(rc), null);
        }
    }

    private String describe(int rc) {
        KeeperException.Code code = KeeperException.Code.get(rc);
        if (code == KeeperException.Code.NOAUTH) {
            return "NOAUTH - the client is not authenticated for the lock nodes' ACL (give it the same digest "
                    + "credentials as the provider)";
        }
        if (code == KeeperException.Code.CONNECTIONLOSS) {
            return "CONNECTIONLOSS - ZooKeeper is not reachable";
        }
        if (code == KeeperException.Code.SESSIONEXPIRED) {
            return "SESSIONEXPIRED - the ZooKeeper session expired";
        }
        return code == null ? "error " + rc : code.name();
    }

    private LockBackendException failure(String message, Throwable cause) {
        return new LockBackendException(address + " - " + message, cause);
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(address + " - the lock store is closed");
        }
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    /** The store's key of one hold: a lock name and the owner id of the acquisition run that holds it. */
    private record HoldKey(String name, String owner) {
    }

    /** This provider's node for one lock: its acquisition run, where it is, its token, and where it stands. */
    private final class Node {
        final String name;
        final String owner;
        final String path;
        final String child;
        final long czxid;
        final Watcher watcher;
        private State state = State.WAITING;
        private long leaseEnd;

        Node(String name, String owner, String path, long czxid) {
            this.name = name;
            this.owner = owner;
            this.path = path;
            this.child = path.substring(path.lastIndexOf('/') + 1);
            this.czxid = czxid;
            // One watcher object per node: ZooKeeper keeps it once per path however often it is set again.
            this.watcher = (WatchedEvent event) -> {
                if (event.getType() != Watcher.Event.EventType.None) {
                    wake(name);
                }
            };
        }

        synchronized boolean isWaiting() {
            return state == State.WAITING;
        }

        /** WAITING → HELD with a lease; false if the node was abandoned meanwhile. */
        synchronized boolean acquire(Duration lease) {
            if (state != State.WAITING) {
                return false;
            }
            state = State.HELD;
            leaseEnd = time.nanoTime() + lease.toNanos();
            return true;
        }

        /** WAITING → ABANDONED; true if this call made the transition, so the caller deletes the node. */
        synchronized boolean abandon() {
            if (state != State.WAITING) {
                return false;
            }
            state = State.ABANDONED;
            return true;
        }

        /** HELD or RELEASING → DROPPED; true if this call made the transition. */
        synchronized boolean drop() {
            if (state != State.HELD && state != State.RELEASING) {
                return false;
            }
            state = State.DROPPED;
            return true;
        }

        synchronized boolean startRelease() {
            if (state != State.HELD) {
                return false;
            }
            state = State.RELEASING;
            return true;
        }

        /** Whether a missing node found by a renewal means a lost hold (and not one being released right now). */
        synchronized boolean isGoneFor(Map<String, Node> current) {
            return current.get(name) == this && state == State.HELD;
        }

        synchronized boolean isHeld() {
            return state == State.HELD;
        }

        /** HELD → DROPPED if the lease has ended by {@code now}; true if this call made the transition. */
        synchronized boolean expire(long now) {
            if (state != State.HELD || now - leaseEnd < 0) {
                return false;
            }
            state = State.DROPPED;
            return true;
        }

        synchronized void extendLease(long end) {
            if (state == State.HELD && end - leaseEnd > 0) {
                leaseEnd = end;
            }
        }

        synchronized long leaseEnd() {
            return leaseEnd;
        }

    }

    private enum State { WAITING, HELD, RELEASING, ABANDONED, DROPPED }
}
