package io.locksmith.zookeeper;

import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import io.locksmith.spi.StoreEvents;
import io.locksmith.zookeeper.ZooKeeperHold.Node;
import io.locksmith.zookeeper.ZooKeeperLockProviders.SuspendedPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
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
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ZooKeeper {@link LockStore}: one ephemeral-sequential node per acquisition run under the lock's container
 * parent; the node with the lowest sequence number holds the lock, every other node waits for its predecessor.
 * A run's node travels with its {@link ZooKeeperHold}, so nothing is looked up by name.
 *
 * <p><b>Acquire.</b> The first attempt of a run creates its node (protected, so that a connection loss during the
 * create leaves no unknown node behind) and lists the parent's children: create + getChildren, the same two requests
 * as Curator's {@code InterProcessMutex}, but the listing is sent right behind the create, so the caller waits for
 * one round trip instead of two (see {@code createAndList}). The create answers with the node's {@link Stat}, whose
 * creation zxid is the fencing token: zxids grow with every write to the ensemble, so a later holder's node always
 * has a larger one, even after the container parent was reaped and recreated and sequence numbers started again from
 * zero. If the node is not the lowest and the caller will wait, the same call watches only the node's predecessor
 * (no herd), whose watch runs the attempt's wake-up, and answers {@link Acquisition#watched}; the run's next attempt
 * lists the children again with the node it already has, so the run keeps its place in the queue. Every busy answer
 * to a caller that waits is watched, so the store needs no {@code subscribe}: a release or a forced release reaches
 * the waiter behind through its watch, and a lost session through the store's set of runs (below). An attempt whose
 * caller will not wait deletes a node that is not the lowest at once. A node's name carries the owner id of the run
 * that created it ({@code <clientId>.<number>}, see {@link LockPaths}), so a provider recognises and deletes its
 * nodes that no run of it uses any more: left over from a create whose answer never arrived, or from a hold whose
 * delete has not landed yet (the machinery starts a run for a name only once no other run of it holds or attempts
 * the name).
 *
 * <p><b>Read holds.</b> A read run's node ({@link #newSharedHold}) joins the same queue, marked as a read node in
 * its name ({@link LockPaths#isRead}); it holds once no write node is ahead of it (but the node of the reader's own
 * write hold: a downgrade) and otherwise watches only the nearest write node ahead. A write node still holds only
 * as the lowest and watches the node right ahead, reader or writer. A read hold's fencing token is its own node's
 * creation zxid, which is above the last write's and below every later write's. Several read runs of one provider
 * may have nodes at once, so a write run takes only write nodes of its provider for strays.
 *
 * <p><b>Release.</b> A hold's node is deleted with Curator's guaranteed delete. A delete that got no answer may have
 * been applied and the lock taken by another client since: the hold stays RELEASING and is never held again (see
 * {@link ZooKeeperHold}). The machinery then retries {@code release} with the same hold; the store keeps deleting
 * the node in the background meanwhile, and a retried release deletes it once more and answers, or answers false at
 * once once a delete has been confirmed.
 *
 * <p><b>Leases.</b> ZooKeeper has none: a node lives until it is deleted or its session ends. The machinery's lease
 * clock ends a hold whose lease ran out unrenewed and calls {@link #leaseEnded}, which deletes its node in the
 * background. Renewal checks that the nodes still exist, in one read-only multi request per batch (a transaction of
 * check ops on servers older than 3.6).
 *
 * <p><b>Session.</b> LOST (the session expired, or Curator gave up on it) means every node is gone or going: every
 * hold is reported lost, and waiting runs look again with a new node. SUSPENDED follows the {@link SuspendedPolicy},
 * and so does READ_ONLY: a member that lost the quorum answers reads but cannot vouch for the session, which the
 * quorum may have expired meanwhile, so a read-only connection counts as suspended until a member of the quorum
 * takes the client back (it neither starts a new suspension period nor ends one). Holds given up while the session
 * may still be alive are deleted in the background (Curator's guaranteed delete), so that they do not block others.
 * Session events concern every node of the session, so the store keeps the set of runs that have a node, and
 * nothing else about them.
 *
 * <p>Every call waits for Curator in the background and at most the operation timeout, then fails with
 * {@link LockBackendException}; an interrupt ends the wait at once the same way, with the interrupt flag left set
 * (see {@link CuratorCalls}).
 */
final class ZooKeeperLockStore implements LockStore<ZooKeeperHold> {

    private static final Logger log = LoggerFactory.getLogger(ZooKeeperLockStore.class);
    private static final byte[] NO_DATA = new byte[0];

    private final CuratorFramework client;
    private final boolean ownsClient;
    private final String address;
    private final LockPaths paths;
    private final List<ACL> acl;
    private final SuspendedPolicy suspendedPolicy;
    private final long timeoutNanos;
    /**
     * The runs that have a node (WAITING or HELD), by identity: what a session event acts on. Nothing is looked up
     * in it; a run leaves it when it gives its node up.
     */
    private final Set<ZooKeeperHold> withNodes = ConcurrentHashMap.newKeySet();
    /** Curator calls waited for within the operation timeout, and deletes retried in the background. */
    private final CuratorCalls calls;
    private final ConnectionStateListener connectionListener = this::connectionChanged;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile StoreEvents<ZooKeeperHold> events;
    /** Whether the server takes read-only multi requests; cleared on the first one it refuses. */
    private volatile boolean multiRead = true;
    /** Counts SUSPENDED periods, so that a timer knows whether the period it was set for has ended. */
    private long suspendedEpoch;
    /** Whether a SUSPENDED period is going on (entered by SUSPENDED or READ_ONLY), guarded by this. */
    private boolean suspendedNow;
    private ScheduledFuture<?> suspendedTimer;

    ZooKeeperLockStore(CuratorFramework client, boolean ownsClient, String address, String namespace, List<ACL> acl,
            SuspendedPolicy suspendedPolicy, Duration operationTimeout) {
        this.client = client;
        this.ownsClient = ownsClient;
        this.address = address;
        this.paths = new LockPaths(namespace);
        this.acl = acl;
        this.suspendedPolicy = suspendedPolicy;
        this.timeoutNanos = operationTimeout.toNanos();
        this.calls = new CuratorCalls(client, address, operationTimeout);
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public void start(StoreEvents<ZooKeeperHold> storeEvents) {
        this.events = storeEvents;
        client.getConnectionStateListenable().addListener(connectionListener);
    }

    @Override
    public ZooKeeperHold newHold(String name, String owner) {
        return new ZooKeeperHold(name, owner, paths.parent(name));
    }

    @Override
    public boolean supportsSharedHolds() {
        return true;
    }

    /**
     * A read run: its node (marked as a read node, see {@link LockPaths}) joins the same queue as the write nodes,
     * and holds once no write node is ahead of it but {@code ownWrite}'s (a downgrade).
     */
    @Override
    public ZooKeeperHold newSharedHold(String name, String owner, ZooKeeperHold ownWrite) {
        return new ZooKeeperHold(name, owner, paths.parent(name), true, ownWrite);
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public Acquisition tryAcquire(ZooKeeperHold hold, Duration lease, Duration wait, Runnable wakeUp) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        boolean waits = wakeUp != null && !wait.isZero();
        if (hold.isPastAttempts()) {
            // A late call of a run the machinery has given up (and released): it must not leave a node behind.
            return Acquisition.busy();
        }
        hold.wakeUpWith(wakeUp);
        String parent = hold.parent;
        Node node = hold.attemptNode();
        try {
            calls.checkNotInterrupted("acquire lock '" + hold.name + "'");
            while (true) {
                boolean fresh;
                List<String> children;
                if (node == null) {
                    calls.checkNotInterrupted("create a lock node under " + parent);
                    CreatedAndListed first = createAndList(hold, deadline);
                    node = first.node();
                    fresh = true;
                    // A listing sent behind the create shows the node, unless Curator had to create the parent
                    // first (the listing then ran before the node existed): list again.
                    children = first.children() != null && first.children().contains(node.child())
                            ? first.children() : children(parent, deadline);
                } else {
                    fresh = false;
                    children = children(parent, deadline);
                }
                if (!children.contains(node.child())) {
                    // Gone with an expired session, or deleted by an operator.
                    if (hold.giveUp(node)) {
                        withNodes.remove(hold);
                        if (fresh) {
                            throw calls.failure("the lock node " + node.path() + " vanished right after it was "
                                    + "created (session expired?)", null);
                        }
                    }
                    node = null;
                    continue;
                }
                List<String> queue = new ArrayList<>(children.size());
                for (String child : children) {
                    if (!hold.shared && !LockPaths.isRead(child) && !child.equals(node.child())
                            && LockPaths.isOfClient(child, hold.owner)
                            && !LockPaths.isLaterRun(LockPaths.owner(child), hold.owner)) {
                        // This provider's but not this run's write node: a create whose answer never arrived, or the
                        // node of an ended run whose delete has not landed yet. No other write run of this provider
                        // holds or waits for the name now, so it must not keep a place. (Several read runs of one
                        // provider may hold or wait at once: their nodes are never taken for strays.)
                        calls.deleteWithin(parent + "/" + child, deadline, "delete a stray node of this provider");
                    } else {
                        queue.add(child);
                    }
                }
                queue.sort(LockPaths.BY_SEQUENCE);
                int index = queue.indexOf(node.child());
                int blocker = hold.shared ? writerAhead(queue, index, hold.ownWrite) : index - 1;
                if (blocker < 0) {
                    if (hold.acquire(node)) {
                        return Acquisition.acquired(node.czxid());
                    }
                    checkOpen();
                    if (hold.isPastAttempts()) {
                        return Acquisition.busy(); // released meanwhile by the machinery: a late call
                    }
                    node = hold.attemptNode(); // given up meanwhile (session lost): start over with a new node
                    continue;
                }
                if (!waits) {
                    // Nobody will wait on this node, so it must not keep a place in the queue.
                    if (hold.giveUp(node)) {
                        withNodes.remove(hold);
                        calls.deleteWithin(node.path(), deadline, "delete the node of a failed attempt");
                    }
                    return Acquisition.busy();
                }
                if (watch(parent + "/" + queue.get(blocker), hold, deadline)) {
                    return Acquisition.watched(null);
                }
                // The predecessor went away between the listing and the watch: look again.
            }
        } catch (RuntimeException e) {
            Node given = hold.giveUpWaiting();
            if (given != null) {
                withNodes.remove(hold);
                if (Thread.currentThread().isInterrupted() && calls.isConnected()) {
                    // Interrupted, the store is fine: undo the attempt before the caller hears of the interrupt,
                    // so that nothing of it keeps another client from the lock (the node may be the lowest).
                    calls.deleteIgnoringInterrupt(given.path(), "delete the node of an interrupted attempt");
                } else {
                    // The store is failing: do not make the caller wait another timeout.
                    calls.discard(given.path());
                }
            }
            throw e;
        }
    }

    /**
     * The position of the write node nearest ahead of a read node at {@code index} of the sorted queue, other than
     * the node of {@code ownWrite} (the reader's own write hold), or -1 if none: a read node waits only for writers.
     */
    private static int writerAhead(List<String> queue, int index, ZooKeeperHold ownWrite) {
        Node own = ownWrite == null ? null : ownWrite.heldNode();
        for (int i = index - 1; i >= 0; i--) {
            String child = queue.get(i);
            if (!LockPaths.isRead(child) && (own == null || !own.child().equals(child))) {
                return i;
            }
        }
        return -1;
    }

    /** A new node and, if its listing could be sent behind the create, the parent's children after it. */
    private record CreatedAndListed(Node node, List<String> children) {
    }

    /**
     * Creates {@code hold}'s node and lists the parent's children without waiting for the create's answer in
     * between: a session's requests are answered in the order they were sent, so the listing sees the new node, and
     * the two requests cost one round trip of waiting instead of two. The listing's answer is null if it could not
     * be sent or did not succeed (the parent did not exist yet, for instance); the caller lists again then.
     */
    private CreatedAndListed createAndList(ZooKeeperHold hold, long deadline) {
        String parent = hold.parent;
        CompletableFuture<CuratorEvent> created = startCreate(hold);
        CompletableFuture<CuratorEvent> listed;
        try {
            listed = CuratorCalls.launch(callback -> client.getChildren().inBackground(callback).forPath(parent),
                    null);
        } catch (Exception e) {
            listed = null;
        }
        // A node whose create is unanswered may exist and be the lowest already: an interrupt does not end this
        // wait while the client is connected, so that the node is known and can be deleted before the caller returns.
        Node node = created(hold, calls.awaitAnswer(created, "create a lock node under " + parent, deadline, true),
                deadline);
        if (listed == null) {
            return new CreatedAndListed(node, null);
        }
        try {
            CuratorEvent listing = calls.awaitAnswer(listed, "list the lock nodes of " + parent, deadline);
            boolean ok = listing.getResultCode() == KeeperException.Code.OK.intValue();
            return new CreatedAndListed(node, ok ? listing.getChildren() : null);
        } catch (LockBackendException e) {
            // the node is known now: the caller's own listing fails the same way and gives the node up
            return new CreatedAndListed(node, null);
        }
    }

    private CompletableFuture<CuratorEvent> startCreate(ZooKeeperHold hold) {
        String prefix = paths.nodePrefix(hold.name, hold.owner, hold.shared);
        try {
            return CuratorCalls.launch(callback -> {
                var builder = client.create().creatingParentContainersIfNeeded().withProtection()
                        .withMode(CreateMode.EPHEMERAL_SEQUENTIAL);
                if (acl != null) {
                    builder.withACL(acl, true).inBackground(callback).forPath(prefix, NO_DATA);
                } else {
                    builder.inBackground(callback).forPath(prefix, NO_DATA);
                }
            }, late -> {
                if (late.getResultCode() == KeeperException.Code.OK.intValue()) {
                    calls.discard(late.getName());
                }
            });
        } catch (Exception e) {
            throw calls.failure("could not create a lock node under " + hold.parent, e);
        }
    }

    private Node created(ZooKeeperHold hold, CuratorEvent event, long deadline) {
        calls.check(event, "create a lock node under " + hold.parent);
        Stat stat = event.getStat();
        if (stat == null) {
            stat = statOfFound(event.getName(), deadline);
        }
        Node node = Node.of(event.getName(), stat.getCzxid());
        withNodes.add(hold);
        if (!hold.created(node)) {
            withNodes.remove(hold);
            calls.discard(node.path());
            checkOpen();
            throw calls.failure("the acquisition run " + hold.owner + " ended while its lock node was created",
                    null);
        }
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
            found = calls.await("read the lock node " + path + " found after a connection loss", deadline,
                    callback -> client.checkExists().inBackground(callback).forPath(path), null);
        } catch (RuntimeException e) {
            calls.discard(path);
            throw e;
        }
        if (found.getResultCode() != KeeperException.Code.OK.intValue() || found.getStat() == null) {
            calls.discard(path);
            throw calls.failure("the lock node " + path + ", found after a connection loss, could not be read: "
                    + KeeperException.Code.get(found.getResultCode()), null);
        }
        return found.getStat();
    }

    private List<String> children(String parent, long deadline) {
        CuratorEvent event = calls.await("list the lock nodes of " + parent, deadline,
                callback -> client.getChildren().inBackground(callback).forPath(parent), null);
        if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
            return List.of();
        }
        calls.check(event, "list the lock nodes of " + parent);
        return event.getChildren();
    }

    /** Watches {@code predecessor} for {@code hold}'s waiter; false if it no longer exists. */
    private boolean watch(String predecessor, ZooKeeperHold hold, long deadline) {
        // getData() instead of exists(): exists() on a node that is already gone would leave a watch behind.
        CuratorEvent event = calls.await("watch " + predecessor, deadline,
                callback -> client.getData().usingWatcher(hold.watcher).inBackground(callback).forPath(predecessor),
                null);
        if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
            return false;
        }
        calls.check(event, "watch " + predecessor);
        return true;
    }

    // ---------------------------------------------------------------- release, abandon, leaseEnded

    @Override
    public boolean release(ZooKeeperHold hold) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        switch (hold.state()) {
            case NEW, WAITING -> {
                // an attempt whose outcome the machinery did not learn: it held nothing
                Node waiting = hold.abandon();
                if (waiting != null) {
                    withNodes.remove(hold);
                    calls.deleteWithin(waiting.path(), deadline, "delete the node of a failed attempt");
                }
                return false;
            }
            case RELEASING -> {
                return releaseAgain(hold, deadline);
            }
            default -> {
                Node held = hold.startRelease();
                if (held == null) {
                    return false; // deleted for good already: its lease ended, or the session was given up
                }
                withNodes.remove(hold);
                return delete(hold, held.path(), deadline);
            }
        }
    }

    /** Deletes a held node for its release; see the class comment for a delete that gets no answer. */
    private boolean delete(ZooKeeperHold hold, String path, long deadline) {
        // Guaranteed: should the answer get lost, Curator keeps deleting in the background until it succeeds.
        String what = "delete " + path;
        boolean answered = false;
        try {
            CuratorEvent event = calls.await(what, deadline,
                    callback -> client.delete().guaranteed().inBackground(callback).forPath(path),
                    late -> calls.deleteAnswered(path, late));
            boolean deleted = event.getResultCode() == KeeperException.Code.OK.intValue();
            if (!deleted && event.getResultCode() != KeeperException.Code.NONODE.intValue()) {
                calls.check(event, what);
            }
            answered = true;
            hold.released();
            return deleted;
        } finally {
            if (!answered) {
                // The delete may have been applied and the lock taken by another client since: the hold stays
                // RELEASING, never held again. The store keeps deleting the node; a retried release deletes it again.
                calls.keepDeleting(path);
            }
        }
    }

    /**
     * A retried release of a hold whose delete got no answer: if no delete of its node has been confirmed since,
     * the node is deleted again, and the answer tells whether this call deleted it; otherwise nothing is left to
     * do (false).
     */
    private boolean releaseAgain(ZooKeeperHold hold, long deadline) {
        Node node = hold.releasing();
        if (node == null) {
            return false;
        }
        String path = node.path();
        if (!calls.isPendingDelete(path)) {
            hold.released();
            return false;
        }
        String what = "delete " + path + " again (an earlier delete got no answer)";
        CuratorEvent event = calls.await(what, deadline,
                callback -> client.delete().inBackground(callback).forPath(path),
                late -> calls.deleteAnswered(path, late));
        int rc = event.getResultCode();
        if (rc != KeeperException.Code.OK.intValue() && rc != KeeperException.Code.NONODE.intValue()) {
            calls.check(event, what);
        }
        calls.deleted(path);
        hold.released();
        return rc == KeeperException.Code.OK.intValue();
    }

    @Override
    public void abandon(ZooKeeperHold hold) {
        Node waiting = hold.abandon();
        if (waiting == null) {
            return;
        }
        withNodes.remove(hold);
        if (closed.get() || !calls.isConnected()) {
            calls.discard(waiting.path());
        } else {
            // Synchronously, so that the place is free by the time the caller's failure is seen.
            calls.deleteWithin(waiting.path(), calls.deadline(), "delete the node of an abandoned wait");
        }
    }

    /** A held node outlives the machinery's lease unless it is deleted: in the background, so as not to block. */
    @Override
    public void leaseEnded(ZooKeeperHold hold) {
        Node held = hold.drop();
        if (held != null) {
            withNodes.remove(hold);
            log.debug("Lock '{}' on {}: lease ended, deleting {}", hold.name, address, held.path());
            calls.discard(held.path());
        }
    }

    // ---------------------------------------------------------------- renew, isLocked

    @Override
    public RenewResult<ZooKeeperHold> renew(List<ZooKeeperHold> holds, Duration lease) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        Set<ZooKeeperHold> gone = new HashSet<>();
        List<ZooKeeperHold> held = new ArrayList<>(holds.size());
        List<String> nodePaths = new ArrayList<>(holds.size());
        for (ZooKeeperHold hold : holds) {
            // not held: released, being released (the machinery lets the release's answer decide), or dropped
            Node node = hold.heldNode();
            if (node == null) {
                gone.add(hold);
            } else {
                held.add(hold);
                nodePaths.add(node.path());
            }
        }
        if (!held.isEmpty()) {
            List<Integer> missing = multiRead ? missingByMultiRead(nodePaths, deadline)
                    : missingByChecks(nodePaths, deadline);
            for (int index : missing) {
                ZooKeeperHold hold = held.get(index);
                // a hold whose release started meanwhile is not lost: its release finds the node missing, and says so
                if (hold.drop() != null) {
                    withNodes.remove(hold);
                    gone.add(hold);
                }
            }
        }
        return RenewResult.gone(gone);
    }

    /**
     * The indexes of the paths that no longer exist, in one read-only multi request (ZooKeeper 3.6+): answered by
     * the member the client is connected to, without a round through the quorum, each read failing or succeeding on
     * its own. Falls back to {@link #missingByChecks} on a server that does not know read-only multi requests.
     */
    private List<Integer> missingByMultiRead(List<String> paths, long deadline) {
        List<Op> reads = new ArrayList<>(paths.size());
        for (String path : paths) {
            reads.add(Op.getData(ZKPaths.fixForNamespace(client.getNamespace(), path)));
        }
        String what = "read " + paths.size() + " held lock node(s)";
        CompletableFuture<Object[]> answer = new CompletableFuture<>();
        try {
            client.getZookeeperClient().getZooKeeper().multi(reads,
                    (rc, path, ctx, results) -> answer.complete(new Object[] {rc, results}), null);
        } catch (Exception e) {
            throw calls.failure("could not " + what, e);
        }
        Object[] result = calls.awaitAnswer(answer, what, deadline);
        int rc = (Integer) result[0];
        if (rc == KeeperException.Code.UNIMPLEMENTED.intValue()) {
            log.info("{} - the server does not support read-only multi requests; checking held locks with "
                    + "check transactions", address);
            multiRead = false;
            return missingByChecks(paths, deadline);
        }
        @SuppressWarnings("unchecked")
        List<OpResult> results = (List<OpResult>) result[1];
        // The answer carries the first error as its code, but every read has its own result.
        if (results == null || results.size() != paths.size()) {
            throw calls.failure("could not " + what + ": " + calls.describe(rc), null);
        }
        List<Integer> missing = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            if (results.get(i) instanceof OpResult.ErrorResult error) {
                if (error.getErr() != KeeperException.Code.NONODE.intValue()) {
                    throw calls.failure("could not " + what + ": " + calls.describe(error.getErr()), null);
                }
                missing.add(i);
            }
        }
        return missing;
    }

    /**
     * The indexes of the paths that no longer exist, by transactions of check ops: one round per missing node,
     * plus one.
     */
    private List<Integer> missingByChecks(List<String> paths, long deadline) {
        List<Integer> pending = new ArrayList<>(paths.size());
        for (int i = 0; i < paths.size(); i++) {
            pending.add(i);
        }
        List<Integer> missing = new ArrayList<>();
        // A multi of check ops stops at its first missing node: note that one and check the rest again.
        while (!pending.isEmpty()) {
            List<CuratorOp> checks = new ArrayList<>(pending.size());
            for (int index : pending) {
                checks.add(checkOp(paths.get(index)));
            }
            CuratorEvent event = calls.await("check " + pending.size() + " held lock node(s)", deadline,
                    callback -> client.transaction().inBackground(callback).forOperations(checks), null);
            if (event.getResultCode() == KeeperException.Code.OK.intValue()) {
                break;
            }
            int index = firstMissing(event);
            if (index < 0) {
                calls.check(event, "check " + pending.size() + " held lock node(s)");
                throw calls.failure("checking held lock nodes failed: " + calls.describe(event.getResultCode()),
                        null);
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
            throw calls.failure("could not prepare a check of " + path, e);
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
        CuratorEvent event = calls.await("look at " + parent, System.nanoTime() + timeoutNanos,
                callback -> client.checkExists().inBackground(callback).forPath(parent), null);
        if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
            return false;
        }
        calls.check(event, "look at " + parent);
        return event.getStat() != null && event.getStat().getNumChildren() > 0;
    }

    // ---------------------------------------------------------------- semaphore permit counts

    /** The count is the decimal text of a persistent node's data (see {@link LockPaths#permits}). */
    @Override
    public OptionalInt semaphorePermits(String name) {
        checkOpen();
        String path = paths.permits(name);
        String what = "read the permit count of semaphore '" + name + "' at " + path;
        CuratorEvent event = calls.await(what, System.nanoTime() + timeoutNanos,
                callback -> client.getData().inBackground(callback).forPath(path), null);
        if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
            return OptionalInt.empty();
        }
        calls.check(event, what);
        String text = new String(event.getData(), StandardCharsets.US_ASCII);
        try {
            return OptionalInt.of(Integer.parseInt(text));
        } catch (NumberFormatException e) {
            throw calls.failure(what + ": not a number: '" + text + "'", e);
        }
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        checkOpen();
        long deadline = System.nanoTime() + timeoutNanos;
        String path = paths.permits(name);
        byte[] data = Integer.toString(permits).getBytes(StandardCharsets.US_ASCII);
        String what = "set the permit count of semaphore '" + name + "' at " + path;
        while (true) {
            CuratorEvent set = calls.await(what, deadline,
                    callback -> client.setData().inBackground(callback).forPath(path, data), null);
            if (set.getResultCode() != KeeperException.Code.NONODE.intValue()) {
                calls.check(set, what);
                return;
            }
            CuratorEvent created = calls.await(what, deadline, callback -> {
                var builder = client.create().creatingParentContainersIfNeeded().withMode(CreateMode.PERSISTENT);
                if (acl != null) {
                    builder.withACL(acl, true).inBackground(callback).forPath(path, data);
                } else {
                    builder.inBackground(callback).forPath(path, data);
                }
            }, null);
            if (created.getResultCode() != KeeperException.Code.NODEEXISTS.intValue()) {
                calls.check(created, what);
                return;
            } // another operator created it meanwhile: set it
        }
    }

    // ---------------------------------------------------------------- inspect, forceRelease

    /*
     * The holder is the lowest-sequence node under the lock's parent, as every provider's acquire decides. Its name
     * carries the owner id of the run that created it (see LockPaths), and its Stat the creation time and the
     * creation zxid, which is the holder's fencing token. A listing gives no Stat of the children, so inspect costs
     * two round trips: getChildren of the parent, then exists on the lowest node. The creation time is when the
     * holder joined the queue; if it waited behind others it began to hold later. ZooKeeper keeps nothing of a lock
     * once its last node is gone (the parent is a container that the server reaps), so a free lock has no last
     * token, and a node has no lease: only the holder's provider knows one. A forced release deletes the lowest node
     * only: the waiters keep their places, and the next one is woken by its watch on that node like after a
     * release; the holder's provider finds its node missing at its next renewal or unlock and reports the hold lost.
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
            CuratorEvent event = calls.await("look at the holder's node " + path, deadline,
                    callback -> client.checkExists().inBackground(callback).forPath(path), null);
            if (event.getResultCode() == KeeperException.Code.NONODE.intValue() || event.getStat() == null) {
                continue; // released between the two reads: the next node holds it now, or nobody does
            }
            calls.check(event, "look at the holder's node " + path);
            Stat stat = event.getStat();
            String owner = LockPaths.owner(holder);
            return LockInfo.held(name, owner == null ? holder : owner, Instant.ofEpochMilli(stat.getCtime()), null,
                    stat.getCzxid());
        }
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
        CuratorEvent event = calls.await(what, deadline,
                callback -> client.delete().inBackground(callback).forPath(path), null);
        int rc = event.getResultCode();
        if (rc == KeeperException.Code.NONODE.intValue()) {
            // Released by its holder (or gone with its session) since the listing; the next node, if any, is a
            // holder that took the lock in the meantime and is left alone.
            return false;
        }
        if (rc == KeeperException.Code.NOAUTH.intValue()) {
            throw calls.failure("could not " + what + ": NOAUTH - the lock's nodes are protected by a digest ACL and "
                    + "this provider is not authenticated with its credentials (open it with "
                    + "zookeeper://user:password@..., or build it on a client authorized with them)", null);
        }
        calls.check(event, what);
        return true;
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
                calls.retryPendingDeletes();
                wakeWaiters();
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
                suspendedTimer = calls.schedule(() -> {
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
        // Every node belonged to the lost session: waiting runs give theirs up too (they create new ones when they
        // look again), and what the server may still keep until it expires the old session is deleted.
        List<ZooKeeperHold> waiting = new ArrayList<>();
        for (ZooKeeperHold hold : withNodes) {
            Node node = hold.giveUpWaiting();
            if (node != null) {
                waiting.add(hold);
            } else {
                node = hold.drop();
            }
            withNodes.remove(hold);
            if (node != null) {
                calls.discard(node.path());
            }
        }
        reportAllLost("the ZooKeeper session was lost (expired, or unreachable for longer than its timeout)");
        waiting.forEach(ZooKeeperHold::wake);
    }

    /** Gives up every hold, deleting their nodes in the background; waiting runs keep their place. */
    private void dropHolds(String reason) {
        for (ZooKeeperHold hold : withNodes) {
            Node node = hold.drop();
            if (node != null) {
                withNodes.remove(hold);
                calls.discard(node.path());
            }
        }
        reportAllLost(reason);
    }

    private void reportAllLost(String reason) {
        StoreEvents<ZooKeeperHold> sink = events;
        if (sink != null && !closed.get()) {
            sink.allHoldsLost(reason);
        }
    }

    /** Makes every waiting run look again. */
    private void wakeWaiters() {
        for (ZooKeeperHold hold : withNodes) {
            if (hold.state() == ZooKeeperHold.State.WAITING) {
                hold.wake();
            }
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
        calls.close(ownsClient);
        List<Node> left = new ArrayList<>();
        for (ZooKeeperHold hold : withNodes) {
            Node node = hold.end();
            if (node != null) {
                left.add(node);
            }
        }
        withNodes.clear();
        if (ownsClient) {
            // Closing the session deletes every ephemeral node at once.
            client.close();
            return;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        for (Node node : left) {
            if (calls.isConnected() && System.nanoTime() - deadline < 0) {
                calls.deleteWithin(node.path(), deadline, "delete a node left at close");
            } else {
                calls.discard(node.path());
            }
        }
    }

    // ---------------------------------------------------------------- plumbing

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(address + " - the lock store is closed");
        }
    }
}
