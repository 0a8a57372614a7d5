package io.locksmith.zookeeper;

import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;

/**
 * The ZooKeeper store's record of one acquisition run: the run's owner id, the lock's parent node, and the
 * ephemeral-sequential node the run created, once it did, with where that node stands.
 *
 * <p>States, moved under this object's monitor and never with I/O in between: NEW (the run has no node: before its
 * first attempt, or after its node was given up while the run goes on) → WAITING (the node is queued behind
 * others) → HELD (the node is the lowest) → RELEASING (its delete is on its way; one that gets no answer may have
 * been applied and the lock taken by another client since, so the node is never held again, and a retried release
 * deletes it once more) → ENDED once a delete is answered. WAITING → NEW when an attempt gives its node up (a
 * one-off attempt that found the lock busy, an attempt that failed, a lost session); NEW or WAITING → ENDED when the
 * run stops waiting; HELD → ENDED when the node is deleted in the background (lease ended, session given up) or
 * found gone.
 *
 * <p>Equality is identity: the machinery and the store's set of live holds tell holds apart by object.
 */
final class ZooKeeperHold {

    enum State { NEW, WAITING, HELD, RELEASING, ENDED }

    /** One node of the run: its path, its name under the parent, and its creation zxid (the fencing token). */
    record Node(String path, String child, long czxid) {
        static Node of(String path, long czxid) {
            return new Node(path, path.substring(path.lastIndexOf('/') + 1), czxid);
        }
    }

    final String name;
    final String owner;
    /** Whether the run takes a read hold: its node waits only for the write nodes ahead of it. */
    final boolean shared;
    /** For a read run: the caller's own write hold of the name, whose node does not keep it out, or null. */
    final ZooKeeperHold ownWrite;
    /** The lock's parent node, where the run's node goes. */
    final String parent;
    /** One watcher per run: ZooKeeper keeps a watcher once per path however often it is set again. */
    final Watcher watcher;
    /** The wake-up of the run's latest waiting attempt, which the watch on its predecessor runs. */
    private volatile Runnable wakeUp;

    // guarded by this
    private State state = State.NEW;
    private Node node;

    ZooKeeperHold(String name, String owner, String parent) {
        this(name, owner, parent, false, null);
    }

    ZooKeeperHold(String name, String owner, String parent, boolean shared, ZooKeeperHold ownWrite) {
        this.name = name;
        this.owner = owner;
        this.shared = shared;
        this.ownWrite = ownWrite;
        this.parent = parent;
        this.watcher = (WatchedEvent event) -> {
            if (event.getType() != Watcher.Event.EventType.None) {
                wake();
            }
        };
    }

    /** Sets what a watch of this run runs; null leaves the last one. */
    void wakeUpWith(Runnable wakeUp) {
        if (wakeUp != null) {
            this.wakeUp = wakeUp;
        }
    }

    /** Tells the run's waiter that the lock may have become free. */
    void wake() {
        Runnable waiter = wakeUp;
        if (waiter != null) {
            waiter.run();
        }
    }

    synchronized State state() {
        return state;
    }

    /** Whether the run makes no more attempts: it holds the lock, or has ended. */
    synchronized boolean isPastAttempts() {
        return state != State.NEW && state != State.WAITING;
    }

    /** The node an attempt goes on with: the run's waiting node, or null if it has none (or makes no attempts). */
    synchronized Node attemptNode() {
        return state == State.WAITING ? node : null;
    }

    /** NEW → WAITING with the node just created; false if the run ended meanwhile. */
    synchronized boolean created(Node created) {
        if (state != State.NEW) {
            return false;
        }
        state = State.WAITING;
        node = created;
        return true;
    }

    /** WAITING → HELD if {@code lowest} is still the run's node; false if it was given up meanwhile. */
    synchronized boolean acquire(Node lowest) {
        if (state != State.WAITING || node != lowest) {
            return false;
        }
        state = State.HELD;
        return true;
    }

    /** WAITING → NEW if {@code given} is still the run's node: the caller deletes it. */
    synchronized boolean giveUp(Node given) {
        if (state != State.WAITING || node != given) {
            return false;
        }
        state = State.NEW;
        node = null;
        return true;
    }

    /** WAITING → NEW: the waiting node, which the caller deletes, or null if the run was not waiting. */
    synchronized Node giveUpWaiting() {
        Node given = state == State.WAITING ? node : null;
        if (given != null) {
            giveUp(given);
        }
        return given;
    }

    /** NEW or WAITING → ENDED: the run stopped; its waiting node, which the caller deletes, or null. */
    synchronized Node abandon() {
        if (state != State.NEW && state != State.WAITING) {
            return null;
        }
        Node waiting = node;
        state = State.ENDED;
        node = null;
        return waiting;
    }

    /** HELD → RELEASING: the held node, which the caller deletes, or null if the run does not hold it. */
    synchronized Node startRelease() {
        if (state != State.HELD) {
            return null;
        }
        state = State.RELEASING;
        return node;
    }

    /** The held node, or null if the run does not hold the lock. */
    synchronized Node heldNode() {
        return state == State.HELD ? node : null;
    }

    /** The node whose delete got no answer, or null if the run is not releasing. */
    synchronized Node releasing() {
        return state == State.RELEASING ? node : null;
    }

    /** RELEASING → ENDED: a delete of the node was answered. */
    synchronized void released() {
        if (state == State.RELEASING) {
            state = State.ENDED;
            node = null;
        }
    }

    /** HELD → ENDED: the held node, which the caller deletes (or found gone), or null if the run did not hold it. */
    synchronized Node drop() {
        if (state != State.HELD) {
            return null;
        }
        Node held = node;
        state = State.ENDED;
        node = null;
        return held;
    }

    /** Any state → ENDED, for a closing store: the waiting or held node, which the caller deletes, or null. */
    synchronized Node end() {
        Node left = state == State.WAITING || state == State.HELD ? node : null;
        state = State.ENDED;
        node = null;
        return left;
    }

    @Override
    public synchronized String toString() {
        return "ZooKeeperHold{" + owner + ", " + state + (node == null ? "" : ", " + node.path()) + '}';
    }
}
