package io.locksmith.redlock;

import io.locksmith.LockBackendException;
import io.locksmith.TimeSource;
import io.locksmith.redis.internal.RedisNodes;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.StoreEvents;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * The Redlock {@link LockStore}: one lock over N independent Redis masters, each served by the Redis backend's
 * own per-server store (its scripts, attempt ids, cancellation of unanswered acquisitions and wake-ups).
 *
 * <p>The algorithm (redis.io "Distributed locks with Redis"), for one attempt with lease {@code L}:
 * <ol>
 *   <li>read the time source ({@code start}), then send the acquire script with the same owner id (the
 *       acquisition run's, see {@link LockStore}) and the same attempt id (the round's number, greater than
 *       every earlier round of this store) to every node at once: pipelined from the caller's thread (each
 *       node's call is written to its own connection before any answer is read) when every node's client has a
 *       connection pool, otherwise on a small executor shared by the provider;</li>
 *   <li>wait for the answers at most the per-node timeout, much smaller than {@code L}; a node that did not
 *       answer by then counts as a no;</li>
 *   <li>read the time source again ({@code end}); the attempt succeeded only if at least {@code N/2+1} nodes
 *       granted the lock <em>and</em> the remaining validity {@code L - (end - start) - drift} is positive
 *       ({@link Validity});</li>
 *   <li>otherwise release on every node, including those that did not answer (a release to such a node is
 *       sent once its acquisition has come back, so it cannot overtake it), and report the lock busy; after a
 *       split vote (some nodes granted, but fewer than a quorum) wait a random delay first, so that clients
 *       that collided do not collide again.</li>
 * </ol>
 * Every release names the exact attempt it undoes, never "any attempt of this owner": the rounds of one
 * acquisition run share its owner id, and a release sent after a failed round (to a node that has not answered,
 * it runs whenever that node gets to it) must not free the hold a later round of the same run took on that
 * node. For the same reason an acquisition takes over a hold of its own owner only for a newer round (see
 * lock-redis). A hold that ended without its release (its validity ran out, a renewal gave it up, a release or
 * acquisition whose outcome is unknown) keeps its attempt here until the machinery's release of its owner
 * names it, or until its keys have surely expired.
 *
 * <p>The hold is valid until {@code start + L - drift}; renewal extends it the same way, counting only if a
 * quorum confirms before the current validity ends. A round that misses the quorum only because nodes did not
 * answer in time leaves the hold and its validity as they were, so the next round can try again; the hold is
 * given up (the names are reported gone, and released on every node) once its validity has ended or a majority
 * of nodes answered that the key is gone. The store tells the machinery when a validity ends unrenewed, which for
 * explicit leases is a little earlier than the machinery's own {@code start + L}.
 *
 * <p>Fencing: each node's acquire script increments that node's counter; the token is the maximum over the
 * nodes that granted. Nodes of the quorum whose counter is lower are raised to the token before the hold is
 * reported (this is needed only when the counters differ, which happens after nodes were unreachable). So after
 * each acquisition a majority holds a counter at least as high as its token, every later quorum includes one
 * of them, and tokens strictly increase, as long as no node of such a majority loses its data.
 */
final class RedlockStore implements LockStore {

    private static final Logger log = LoggerFactory.getLogger(RedlockStore.class);

    /** Raises a fencing counter to at least ARGV[1]; KEYS[1] the counter. */
    static final String RAISE_FENCE = """
            local current = tonumber(redis.call('get', KEYS[1]) or '0')
            if current < tonumber(ARGV[1]) then
              redis.call('set', KEYS[1], ARGV[1])
            end
            return 0
            """;

    /** Above this many ended holds, keeping one more forgets those whose keys have surely expired. */
    private static final int UNSETTLED_SWEEP_ABOVE = 64;

    private final List<Node> nodes;
    /** Each node's pipelined calls, or null unless every node can pipeline. */
    private final RedisNodes.Pipelining[] pipelines;
    private final int quorum;
    private final String address;
    private final String namespace;
    private final long nodeTimeoutNanos;
    private final long retryDelayNanos;
    private final TimeSource time;
    private final ScheduledThreadPoolExecutor executor;
    private final AutoCloseable owned;
    /** The current hold of each name, guarded by {@code this}. */
    private final Map<String, Hold> holds = new HashMap<>();
    /**
     * Holds that ended without a confirmed release, by name and owner, until a release of their owner names their
     * attempt or their keys have surely expired; guarded by {@code this}.
     */
    private final Map<Claim, Hold> unsettled = new HashMap<>();
    /** The planned look at the holds' validity, guarded by {@code this}; null if none is planned. */
    private ScheduledFuture<?> validityCheck;
    /** When (time source nanos) {@link #validityCheck} comes, guarded by {@code this}. */
    private long nextValidityCheck;
    private final AtomicLong attempts = new AtomicLong();
    private final AtomicLong splitVotes = new AtomicLong();
    private volatile StoreEvents events;

    /** One Redis master: the Redis backend's store over it and the client it uses. */
    record Node(String address, RedisNodes.NodeStore store, UnifiedJedis client) {
    }

    /**
     * A store over {@code nodes}, which it closes (the stores, not their clients) when closed.
     *
     * @param owned closed after the node stores (the clients of the URI form), or null
     */
    RedlockStore(List<Node> nodes, String address, String namespace, Duration nodeTimeout, Duration retryDelay,
            TimeSource time, AutoCloseable owned) {
        this.nodes = List.copyOf(nodes);
        RedisNodes.Pipelining[] pipelining = new RedisNodes.Pipelining[this.nodes.size()];
        for (int i = 0; i < pipelining.length; i++) {
            pipelining[i] = RedisNodes.pipelining(this.nodes.get(i).store());
        }
        this.pipelines = Arrays.stream(pipelining).allMatch(Objects::nonNull) ? pipelining : null;
        this.quorum = Validity.quorum(nodes.size());
        this.address = address;
        this.namespace = namespace;
        this.nodeTimeoutNanos = nodeTimeout.toNanos();
        this.retryDelayNanos = retryDelay.toNanos();
        this.time = time;
        this.owned = owned;
        AtomicInteger threads = new AtomicInteger();
        // Two threads per node: an acquisition and a release (or renewal) of another lock can be on the wire to
        // one node at once; more parallel work queues, and a task whose round is over before it starts is skipped.
        this.executor = new ScheduledThreadPoolExecutor(2 * nodes.size(), r -> {
            Thread t = new Thread(r, "locksmith-redlock-" + threads.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        executor.setRemoveOnCancelPolicy(true);
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public void start(StoreEvents storeEvents) {
        this.events = storeEvents;
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
        RedisNodes.Attempt attempt = new RedisNodes.Attempt(owner, attempts.incrementAndGet());
        long leaseNanos = lease.toNanos();
        long start = time.nanoTime();
        Round<Acquisition> round = pipelines != null
                ? pipelined(i -> pipelines[i].sendAcquire(name, attempt, lease))
                : fanOut(null, i -> nodes.get(i).store().tryAcquire(name, attempt, lease));
        List<Integer> granted = new ArrayList<>();
        long maxToken = 0;
        long minBusy = Long.MAX_VALUE;
        int busy = 0;
        for (int i = 0; i < nodes.size(); i++) {
            Acquisition a = round.value(i);
            if (a == null) {
                continue;
            }
            if (a.isAcquired()) {
                granted.add(i);
                maxToken = Math.max(maxToken, a.fencingToken());
            } else {
                busy++;
                if (a.retryAfter().isPresent()) {
                    minBusy = Math.min(minBusy, a.retryAfter().get().toNanos());
                }
            }
        }
        String failure;
        if (granted.size() >= quorum) {
            int fenced = raiseFences(name, round, granted, maxToken);
            long end = time.nanoTime();
            long remaining = Validity.remaining(leaseNanos, start, end);
            if (fenced >= quorum && remaining > 0) {
                record(name, attempt, leaseNanos, start, round);
                return Acquisition.acquired(maxToken);
            }
            failure = fenced < quorum
                    ? "only " + fenced + " node(s) took fencing token " + maxToken + ", quorum " + quorum
                    : "the quorum answered after " + millis(end - start) + " ms, leaving no validity of the "
                            + millis(leaseNanos) + " ms lease (drift " + millis(Validity.drift(leaseNanos)) + " ms)";
            log.debug("Redlock '{}' on {}: attempt failed: {}", name, address, failure);
        } else {
            failure = null;
        }
        releaseEverywhere(name, attempt, round.futures());
        if (granted.size() + busy < quorum) {
            // the outcome is unknown to the machinery, which releases this owner's hold later: name this round
            keep(new Hold(name, attempt, leaseNanos, null, Validity.validUntil(leaseNanos, start)));
            throw new LockBackendException(address + " - acquire lock '" + name + "': only " + (granted.size() + busy)
                    + " of " + nodes.size() + " nodes answered within " + millis(nodeTimeoutNanos)
                    + " ms, quorum " + quorum + ": " + round.problems());
        }
        if (failure != null) {
            return Acquisition.busy(Duration.ofMillis(1));
        }
        if (!granted.isEmpty()) {
            splitVotes.incrementAndGet();
            if (!wait.isZero()) {
                // Clients that split the vote retry after a random delay, so they do not collide again.
                sleepRandomly(Math.min(retryDelayNanos, wait.toNanos()));
            }
            return Acquisition.busy(Duration.ofMillis(1));
        }
        return minBusy == Long.MAX_VALUE ? Acquisition.busy() : Acquisition.busy(Duration.ofNanos(minBusy));
    }

    /** Raises the counters of granting nodes below {@code token}; returns how many granting nodes now hold it. */
    private int raiseFences(String name, Round<Acquisition> round, List<Integer> granted, long token) {
        List<Integer> low = new ArrayList<>();
        int fenced = 0;
        for (int i : granted) {
            if (round.value(i).fencingToken() == token) {
                fenced++;
            } else {
                low.add(i);
            }
        }
        if (low.isEmpty()) {
            return fenced;
        }
        String key = RedisNodes.fenceKey(namespace, name);
        List<String> args = List.of(Long.toString(token));
        Round<Object> raise = fanOut(null, i -> low.contains(i)
                ? nodes.get(i).client().eval(RAISE_FENCE, List.of(key), args) : null);
        for (int i : low) {
            if (raise.answered(i)) {
                fenced++;
            }
        }
        return fenced;
    }

    // ---------------------------------------------------------------- release

    @Override
    public boolean release(String name, String owner) {
        Hold hold = take(name, owner);
        if (hold == null) {
            // nothing of this owner's is known here: released already, or never granted (a round that failed
            // was released by its own attempt when it ended)
            return false;
        }
        Round<Boolean> round = releaseEverywhere(name, hold.attempt, hold.unanswered);
        int released = 0;
        int notHeld = 0;
        for (int i = 0; i < nodes.size(); i++) {
            Boolean answer = round.value(i);
            if (answer != null) {
                if (answer) {
                    released++;
                } else {
                    notHeld++;
                }
            }
        }
        if (notHeld >= quorum) {
            return false;
        }
        if (released + notHeld < quorum) {
            keep(hold); // so that the machinery's retry names the same attempt
            throw new LockBackendException(address + " - release lock '" + name + "': only " + (released + notHeld)
                    + " of " + nodes.size() + " nodes answered within " + millis(nodeTimeoutNanos) + " ms, quorum "
                    + quorum + ": " + round.problems());
        }
        return true;
    }

    /**
     * Releases the hold of exactly {@code attempt} on every node; a node whose acquisition in {@code pending}
     * (null: none) has not answered yet gets the release once it has, and is not waited for.
     */
    private Round<Boolean> releaseEverywhere(String name, RedisNodes.Attempt attempt, CompletableFuture<?>[] pending) {
        if (pipelines != null && (pending == null || Arrays.stream(pending).allMatch(CompletableFuture::isDone))) {
            return pipelined(i -> pipelines[i].sendRelease(name, attempt));
        }
        return fanOut(pending, i -> nodes.get(i).store().release(name, attempt));
    }

    /** Takes {@code owner}'s hold of {@code name} out of the store's books: the current one or an ended one. */
    private synchronized Hold take(String name, String owner) {
        Hold hold = holds.get(name);
        if (hold != null && hold.attempt.owner().equals(owner)) {
            holds.remove(name);
            return hold;
        }
        return unsettled.remove(new Claim(name, owner));
    }

    /** Keeps a hold that ended without a confirmed release, for the release of its owner. */
    private synchronized void keep(Hold hold) {
        unsettled.put(new Claim(hold.name, hold.attempt.owner()), hold);
        if (unsettled.size() > UNSETTLED_SWEEP_ABOVE) {
            // the keys of a hold live at most a lease past its validity (plus the drift, and a round on the wire)
            long now = time.nanoTime();
            unsettled.values().removeIf(h -> now - h.validUntil > 2 * (h.leaseNanos + nodeTimeoutNanos));
        }
    }

    // ---------------------------------------------------------------- renew

    @Override
    public Set<String> renew(Map<String, String> owners, Duration lease) {
        if (owners.isEmpty()) {
            return Set.of();
        }
        long leaseNanos = lease.toNanos();
        // The holds this round is about: a name released (and perhaps taken again) while the round is out is
        // none of its business, whatever the nodes answer, and must not be given up on their word. A name whose
        // current hold is not its owner's is no longer held by that owner.
        Map<String, Hold> renewed = new HashMap<>();
        Map<String, RedisNodes.Attempt> attempts = new LinkedHashMap<>();
        Set<String> lost = new HashSet<>();
        synchronized (this) {
            owners.forEach((name, owner) -> {
                Hold hold = holds.get(name);
                if (hold != null && hold.attempt.owner().equals(owner)) {
                    renewed.put(name, hold);
                    attempts.put(name, hold.attempt);
                } else {
                    lost.add(name);
                }
            });
        }
        if (attempts.isEmpty()) {
            return lost;
        }
        Set<String> names = attempts.keySet();
        long start = time.nanoTime();
        Round<Set<String>> round = fanOut(null, i -> nodes.get(i).store().renewAttempts(attempts, lease));
        long end = time.nanoTime();
        Map<String, Integer> confirmations = new HashMap<>();
        Map<String, Integer> denials = new HashMap<>();
        for (int i = 0; i < nodes.size(); i++) {
            Set<String> gone = round.value(i);
            if (gone == null) {
                continue;
            }
            for (String name : names) {
                (gone.contains(name) ? denials : confirmations).merge(name, 1, Integer::sum);
            }
        }
        long newValidUntil = Validity.validUntil(leaseNanos, start);
        List<Hold> givenUp = new ArrayList<>();
        int unconfirmed = 0;
        synchronized (this) {
            for (String name : names) {
                Hold hold = holds.get(name);
                if (hold != renewed.get(name)) {
                    // released while the round was out (perhaps taken again, by another owner): not this owner's
                    lost.add(name);
                    continue;
                }
                boolean confirmed = confirmations.getOrDefault(name, 0) >= quorum;
                boolean stillValid = end - hold.validUntil < 0;
                // counts only if the quorum answered while the hold was still valid, with validity left over
                if (confirmed && stillValid && end - newValidUntil < 0) {
                    hold.validUntil = newValidUntil;
                } else if (stillValid && denials.getOrDefault(name, 0) <= nodes.size() - quorum) {
                    // Too few answers in time (slow or unreachable nodes, a starved machine), but no majority says
                    // the key is gone and the current validity has not ended: keep the hold as it is, and let the
                    // next round try again. checkValidities reports it lost if no round succeeds before it ends.
                    unconfirmed++;
                } else {
                    lost.add(name);
                    givenUp.add(hold);
                    holds.remove(name);
                    keep(hold);
                }
            }
        }
        if (unconfirmed > 0) {
            log.warn("Redlock on {}: renewal of {} lock(s) not confirmed by a quorum of {} this round; keeping them "
                    + "until their validity ends and retrying: {}", address, unconfirmed, quorum, round.problems());
        }
        if (!givenUp.isEmpty()) {
            log.warn("Redlock on {}: renewal of {} lock(s) not confirmed by a quorum of {} within their validity; "
                    + "giving them up: {}", address, givenUp.size(), quorum, round.problems());
            for (Hold hold : givenUp) {
                releaseEverywhere(hold.name, hold.attempt, hold.unanswered);
            }
        }
        return lost;
    }

    // ---------------------------------------------------------------- queries and wake-ups

    @Override
    public boolean isLocked(String name) {
        Round<Boolean> round = fanOut(null, i -> nodes.get(i).store().isLocked(name));
        int yes = 0;
        int no = 0;
        for (int i = 0; i < nodes.size(); i++) {
            Boolean answer = round.value(i);
            if (answer != null) {
                if (answer) {
                    yes++;
                } else {
                    no++;
                }
            }
        }
        if (yes >= quorum) {
            return true;
        }
        if (no >= quorum) {
            return false;
        }
        throw new LockBackendException(address + " - check lock '" + name + "': " + yes + " node(s) say held, " + no
                + " free, the rest did not answer within " + millis(nodeTimeoutNanos) + " ms; a quorum of "
                + quorum + " is needed to tell: " + round.problems());
    }

    /** Any node's release message wakes the waiter. */
    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        List<Subscription> subscriptions = new ArrayList<>(nodes.size());
        for (Node node : nodes) {
            Subscription s = node.store().subscribe(name, onRelease);
            if (s != null) {
                subscriptions.add(s);
            }
        }
        return () -> subscriptions.forEach(Subscription::close);
    }

    @Override
    public void close() {
        executor.shutdownNow();
        for (Node node : nodes) {
            try {
                node.store().close();
            } catch (RuntimeException e) {
                log.warn("Redlock on {}: closing node {} failed: {}", address, node.address(), e.getMessage());
            }
        }
        if (owned != null) {
            try {
                owned.close();
            } catch (Exception e) {
                throw new LockBackendException(address + " - closing the Redis clients failed: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public String toString() {
        return "RedlockStore{" + address + '}';
    }

    /** How many acquisition rounds ran; for tests. */
    long attempts() {
        return attempts.get();
    }

    /** How many acquisition rounds ended in a split vote; for tests. */
    long splitVotes() {
        return splitVotes.get();
    }

    // ---------------------------------------------------------------- validity

    private void record(String name, RedisNodes.Attempt attempt, long leaseNanos, long start,
            Round<Acquisition> round) {
        CompletableFuture<?>[] futures = round.futures();
        boolean pending = false;
        for (CompletableFuture<?> f : futures) {
            pending |= !f.isDone();
        }
        Hold hold = new Hold(name, attempt, leaseNanos, pending ? futures : null,
                Validity.validUntil(leaseNanos, start));
        synchronized (this) {
            Hold previous = holds.put(name, hold);
            if (previous != null && !previous.attempt.owner().equals(attempt.owner())) {
                keep(previous);
            }
        }
        planValidityCheck(hold.validUntil);
    }

    /*
     * One timer task looks at the holds when the earliest validity may end, instead of a task per hold: a task
     * per acquisition would leave a task behind for every released hold and wake a thread for each of them
     * when its validity would have ended. A hold makes sure that a check comes no later than its validity end;
     * the check reports what has ended and plans the next check for the earliest validity left.
     */

    /** Makes sure that the holds are looked at no later than {@code at} (time source nanos). */
    private synchronized void planValidityCheck(long at) {
        if (validityCheck != null && nextValidityCheck - at <= 0) {
            return;
        }
        if (validityCheck != null) {
            validityCheck.cancel(false);
        }
        try {
            validityCheck = executor.schedule(this::checkValidities, Math.max(0, at - time.nanoTime()),
                    TimeUnit.NANOSECONDS);
            nextValidityCheck = at;
        } catch (RejectedExecutionException closed) {
            validityCheck = null; // the provider is closing and releases its holds
        }
    }

    /**
     * Reports the holds whose validity ended without a quorum renewing them, and plans the next check. Runs
     * under the monitor that {@link #record} needs, so the machinery cannot have a newer hold of a name while
     * the old one is reported.
     */
    private synchronized void checkValidities() {
        validityCheck = null;
        long now = time.nanoTime();
        boolean more = false;
        long next = 0;
        for (var it = holds.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Hold> entry = it.next();
            Hold hold = entry.getValue();
            long end = hold.validUntil;
            if (now - end < 0) {
                next = more && next - end <= 0 ? next : end;
                more = true;
                continue;
            }
            it.remove();
            keep(hold);
            StoreEvents sink = events;
            if (sink != null) {
                sink.holdLost(entry.getKey(), hold.attempt.owner(),
                        "its Redlock validity ended without a quorum renewing it");
            }
        }
        if (more) {
            planValidityCheck(next);
        }
    }

    /**
     * A hold of this store: the attempt (owner and round) that took it, which every release and renewal of it
     * names; the acquisitions of that round that had not answered when it was granted (null if none), which a
     * release to their nodes waits for; and its validity, advanced by renewals under the store's monitor.
     */
    private static final class Hold {
        final String name;
        final RedisNodes.Attempt attempt;
        final long leaseNanos;
        final CompletableFuture<?>[] unanswered;
        long validUntil;

        Hold(String name, RedisNodes.Attempt attempt, long leaseNanos, CompletableFuture<?>[] unanswered,
                long validUntil) {
            this.name = name;
            this.attempt = attempt;
            this.leaseNanos = leaseNanos;
            this.unanswered = unanswered;
            this.validUntil = validUntil;
        }
    }

    /** The key of an ended hold: its name and owner id. */
    private record Claim(String name, String owner) {
    }

    // ---------------------------------------------------------------- fan-out

    /*
     * Pipelined rounds: the caller's thread writes each node's call to that node's connection, then reads the
     * answers in turn until the per-node timeout, so the round lasts as long as its slowest node. Handing each
     * call to an executor thread instead costs two thread handoffs per node and round, which on a small or busy
     * machine outweigh the round trips themselves (and can delay a call past the per-node timeout before it is
     * even sent). A node that does not answer in time counts as a no; an acquisition on it whose answer was
     * lost is cancelled by that node's store by its attempt id (see lock-redis), so that, should it run after the
     * release that follows, it is undone or does nothing.
     */

    /** Sends {@code send}'s call to every node, then waits at most the per-node timeout for the answers. */
    private <T> Round<T> pipelined(IntFunction<RedisNodes.Pending<T>> send) {
        int n = nodes.size();
        @SuppressWarnings("unchecked")
        RedisNodes.Pending<T>[] sent = new RedisNodes.Pending[n];
        for (int i = 0; i < n; i++) {
            sent[i] = send.apply(i);
        }
        long deadline = System.nanoTime() + nodeTimeoutNanos;
        @SuppressWarnings("unchecked")
        CompletableFuture<T>[] answers = new CompletableFuture[n];
        for (int i = 0; i < n; i++) {
            try {
                answers[i] = CompletableFuture.completedFuture(sent[i].await(deadline));
            } catch (RuntimeException e) {
                answers[i] = CompletableFuture.failedFuture(e);
            }
        }
        return new Round<>(answers);
    }

    /**
     * Runs {@code op} on every node at once and waits at most the per-node timeout for the answers. A node
     * whose {@code after} future has not completed gets its call once it has, and is not waited for; a call
     * that has not started when the wait ends is not sent at all.
     */
    private <T> Round<T> fanOut(CompletableFuture<?>[] after, Function<Integer, T> op) {
        int n = nodes.size();
        @SuppressWarnings("unchecked")
        CompletableFuture<T>[] futures = new CompletableFuture[n];
        AtomicInteger[] states = new AtomicInteger[n];
        List<CompletableFuture<T>> awaited = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int index = i;
            AtomicInteger state = new AtomicInteger(NEW);
            states[i] = state;
            java.util.function.Supplier<T> call = () -> {
                if (!state.compareAndSet(NEW, STARTED)) {
                    throw new NotSent();
                }
                return op.apply(index);
            };
            CompletableFuture<?> before = after == null ? null : after[i];
            try {
                if (before == null || before.isDone()) {
                    futures[i] = CompletableFuture.supplyAsync(call, executor);
                    awaited.add(futures[i]);
                } else {
                    state.set(STARTED); // sent later whatever happens
                    futures[i] = before.handle((r, e) -> null).thenApplyAsync(x -> op.apply(index), executor);
                }
            } catch (RejectedExecutionException closing) {
                futures[i] = CompletableFuture.failedFuture(new LockBackendException(address + " is closed"));
            }
        }
        long deadline = System.nanoTime() + nodeTimeoutNanos;
        boolean interrupted = false;
        CompletableFuture<Void> all = CompletableFuture.allOf(awaited.toArray(CompletableFuture[]::new));
        while (true) {
            long left = deadline - System.nanoTime();
            try {
                all.get(Math.max(0, left), TimeUnit.NANOSECONDS);
                break;
            } catch (TimeoutException e) {
                break;
            } catch (ExecutionException e) {
                break; // one call failed; wait for the others until the deadline
            } catch (InterruptedException e) {
                // a round lasts at most the per-node timeout: finish it, the machinery looks at the flag
                interrupted = true;
            }
            if (deadline - System.nanoTime() <= 0) {
                break;
            }
            if (awaited.stream().allMatch(CompletableFuture::isDone)) {
                break;
            }
            all = CompletableFuture.allOf(awaited.stream().filter(f -> !f.isDone()).toArray(CompletableFuture[]::new));
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        for (AtomicInteger state : states) {
            state.compareAndSet(NEW, SKIPPED);
        }
        return new Round<>(futures);
    }

    private static final int NEW = 0;
    private static final int STARTED = 1;
    private static final int SKIPPED = 2;

    /** A call the round ended before it started, so it was never sent. */
    private static final class NotSent extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NotSent() {
            super("not sent: the round ended before its turn", null, false, false);
        }
    }

    /** The calls of one round, one per node, as they stood when the round's wait ended. */
    private final class Round<T> {
        private final CompletableFuture<T>[] futures;
        private final Object[] values;

        Round(CompletableFuture<T>[] futures) {
            this.futures = futures;
            this.values = new Object[futures.length];
            for (int i = 0; i < futures.length; i++) {
                CompletableFuture<T> f = futures[i];
                if (f.isDone() && !f.isCompletedExceptionally()) {
                    values[i] = f.join();
                }
            }
        }

        /** The answer of node {@code i}, or null if it failed or did not answer in time. */
        @SuppressWarnings("unchecked")
        T value(int i) {
            return (T) values[i];
        }

        boolean answered(int i) {
            return futures[i].isDone() && !futures[i].isCompletedExceptionally();
        }

        CompletableFuture<?>[] futures() {
            return futures.clone();
        }

        /** What went wrong on each node that did not answer, for messages. */
        String problems() {
            StringJoiner joiner = new StringJoiner("; ");
            for (int i = 0; i < futures.length; i++) {
                CompletableFuture<T> f = futures[i];
                if (!f.isDone()) {
                    joiner.add(nodes.get(i).address() + ": no answer within " + millis(nodeTimeoutNanos) + " ms");
                } else if (f.isCompletedExceptionally()) {
                    Throwable cause = f.handle((r, e) -> e).join();
                    while (cause instanceof java.util.concurrent.CompletionException && cause.getCause() != null) {
                        cause = cause.getCause();
                    }
                    joiner.add(cause instanceof NotSent ? nodes.get(i).address() + ": " + cause.getMessage()
                            : String.valueOf(cause.getMessage()));
                }
            }
            String text = joiner.toString();
            return text.isEmpty() ? "every node answered" : text;
        }
    }

    private static void sleepRandomly(long maxNanos) {
        if (maxNanos <= 0) {
            return;
        }
        try {
            TimeUnit.NANOSECONDS.sleep(ThreadLocalRandom.current().nextLong(maxNanos));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }
}
