package io.locksmith.redlock;

import io.locksmith.LockBackendException;
import io.locksmith.TimeSource;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
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
 *       split vote (some nodes granted, but fewer than a quorum) with a random delay as the time to look again,
 *       which the machinery waits, so that clients that collided do not collide again.</li>
 * </ol>
 * Every release names the exact attempt it undoes, never "any attempt of this owner": the rounds of one
 * acquisition run share its owner id, and a release sent after a failed round (to a node that has not answered,
 * it runs whenever that node gets to it) must not free the hold a later round of the same run took on that
 * node. For the same reason an acquisition takes over a hold of its own owner only for a newer round (see
 * lock-redis). The run's {@link Hold} carries its latest round, so a release or renewal of the run, however
 * late, names the round that took the lock.
 *
 * <p>The hold is valid until {@code start + L - drift}, which the store hands to the machinery as
 * {@code L - drift} counted from the call ({@link Acquisition#acquired(long, Duration)}); the machinery keeps
 * that clock. A renewal round counts the same way: it renews the holds a quorum confirms with validity left at
 * {@code end}, for {@code L - drift} from the round's start. A hold that a majority of nodes answers is gone is
 * reported gone (and released on every node); a round that confirms a hold neither way (nodes that did not
 * answer in time, or a quorum that answered after the round's own validity) renews nothing: the machinery keeps
 * the hold until the validity it has ends, and the next round tries again. When the machinery ends a hold's
 * validity ({@link #leaseEnded}) the store releases it on every node rather than leave a minority of keys to
 * expire.
 *
 * <p>Fencing: each node's acquire script increments that node's counter; the token is the maximum over the
 * nodes that granted. Nodes of the quorum whose counter is lower are raised to the token before the hold is
 * reported (this is needed only when the counters differ, which happens after nodes were unreachable). So after
 * each acquisition a majority holds a counter at least as high as its token, every later quorum includes one
 * of them, and tokens strictly increase, as long as no node of such a majority loses its data.
 */
final class RedlockStore implements LockStore<RedlockStore.Hold> {

    private static final Logger log = LoggerFactory.getLogger(RedlockStore.class);

    /** Raises a fencing counter to at least ARGV[1]; KEYS[1] the counter. */
    static final String RAISE_FENCE = """
            local current = tonumber(redis.call('get', KEYS[1]) or '0')
            if current < tonumber(ARGV[1]) then
              redis.call('set', KEYS[1], ARGV[1])
            end
            return 0
            """;

    /** The least bound of the random delay after a run's first split vote; see {@link #splitVoteBound}. */
    private static final long FIRST_SPLIT_DELAY_MICROS = 1000;

    /** How long an idle fan-out thread is kept. */
    private static final long IDLE_THREAD_SECONDS = 60;

    private final List<Node> nodes;
    /** Each node's pipelined calls, or null unless every node can pipeline. */
    private final RedisNodeStore.Pipelining[] pipelines;
    private final int quorum;
    private final String address;
    private final String namespace;
    private final long nodeTimeoutNanos;
    private final long retryDelayNanos;
    private final TimeSource time;
    private final ThreadPoolExecutor executor;
    private final AutoCloseable owned;
    private final AtomicLong attempts = new AtomicLong();
    private final AtomicLong splitVotes = new AtomicLong();
    /** The waiters' wake-ups by the machinery's callback ({@link #subscribe}). */
    private final Map<Runnable, QuorumWakeUp> wakeUps = new ConcurrentHashMap<>();

    /** One Redis master: the Redis backend's store over it and the client it uses. */
    record Node(String address, RedisNodeStore store, UnifiedJedis client) {
    }

    /**
     * A store over {@code nodes}, which it closes (the stores, not their clients) when closed.
     *
     * @param owned closed after the node stores (the clients of the URI form), or null
     */
    RedlockStore(List<Node> nodes, String address, String namespace, Duration nodeTimeout, Duration retryDelay,
            TimeSource time, AutoCloseable owned) {
        this.nodes = List.copyOf(nodes);
        RedisNodeStore.Pipelining[] pipelining = new RedisNodeStore.Pipelining[this.nodes.size()];
        for (int i = 0; i < pipelining.length; i++) {
            pipelining[i] = RedisNodeStore.pipelining(this.nodes.get(i).store());
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
        // Rounds that are pipelined (acquisitions and releases over pooled clients) need none, so idle threads end.
        this.executor = new ThreadPoolExecutor(2 * nodes.size(), 2 * nodes.size(), IDLE_THREAD_SECONDS,
                TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "locksmith-redlock-" + threads.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        executor.allowCoreThreadTimeOut(true);
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public Hold newHold(String name, String owner) {
        // The keys are encoded once per acquisition run, not once per node (every node uses the same namespace);
        // what a node tells the run, its ticket there, is kept per node: a ticket is a number of that node's
        // counter, and one sent to another node would judge seniority there by a number of another counter.
        RedisNodeStore.Hold[] onNode = new RedisNodeStore.Hold[nodes.size()];
        onNode[0] = nodes.get(0).store().newHold(name, owner);
        for (int i = 1; i < onNode.length; i++) {
            onNode[i] = nodes.get(i).store().copyOf(onNode[0]);
        }
        return new Hold(name, owner, false, onNode);
    }

    @Override
    public boolean supportsSharedHolds() {
        return true;
    }

    /**
     * A read run: on every master the Redis backend's read hold (a field of the lock hash beside the other
     * readers', with a lease of its own), so a read and a write, each granted by a majority, meet on at least one
     * master, which refuses one of them. The read's token is the highest of the granting masters' counters, and
     * the lower ones are raised to it as for a write ({@link #tryAcquire}): every earlier write left a majority at
     * or above its token and every later write increments on a majority that includes one raised here, so the read
     * token is at least the last write's and below every later write's.
     */
    @Override
    public Hold newSharedHold(String name, String owner, Hold ownWrite) {
        RedisNodeStore.Hold[] onNode = new RedisNodeStore.Hold[nodes.size()];
        for (int i = 0; i < onNode.length; i++) {
            RedisNodeStore store = nodes.get(i).store();
            // a downgrade marks the write hold on each node, to be released there as one of the readers
            onNode[i] = ownWrite != null ? store.newSharedHold(name, owner, ownWrite.onNode[i])
                    : i == 0 ? store.newSharedHold(name, owner, null) : store.copyOf(onNode[0]);
        }
        return new Hold(name, owner, true, onNode);
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public Acquisition tryAcquire(Hold hold, Duration lease, Duration wait, Runnable wakeUp) {
        return watchedRound(hold, lease, wakeUp, null, 0, null);
    }

    /** One round ({@link #acquire}), which the waiter's quorum wake-up, if it has one, is told of. */
    private Acquisition watchedRound(Hold hold, Duration lease, Runnable wakeUp, Hold previous, long previousAttempt,
            boolean[] answered) {
        boolean[] answeredBusy = new boolean[nodes.size()];
        QuorumWakeUp wakeUps = wakeUp != null ? this.wakeUps.get(wakeUp) : null;
        if (wakeUps == null) {
            return acquire(hold, lease, wakeUp, answeredBusy, previous, previousAttempt, answered);
        }
        wakeUps.roundStarting();
        try {
            return acquire(hold, lease, wakeUp, answeredBusy, previous, previousAttempt, answered);
        } finally {
            // A waiter that claims the next turn nowhere hears only the releases that name no claimant (or name it):
            // the others' turn comes first. One that claims it somewhere hears every release: the nodes may have
            // given their claims to different waiters, and a release naming another may still free its quorum.
            String asking = hold.shared || hold.hearsEveryRelease ? null : hold.owner;
            for (int i = 0; i < nodes.size(); i++) {
                nodes.get(i).store().waitingAs(wakeUps.callbacks[i], asking);
            }
            wakeUps.roundEnded(answeredBusy);
        }
    }

    @Override
    public boolean takesOver() {
        return true;
    }

    /**
     * One round whose acquire script on each master also counts the lock free where that master keeps
     * {@code previous}'s round, and replaces it there when it grants, or deletes it there when it refuses, publishing
     * the wake-up of a release (see lock-redis). Wherever this round was not answered, {@code previous} is released
     * afterwards, so that nothing of it outlives the round. A previous round that a master had not
     * answered when it was granted is released and acquired as usual instead: a take-over sent to that master
     * could overtake the acquisition still on its way.
     */
    @Override
    public Acquisition takeOver(Hold previous, Hold hold, Duration lease, Runnable wakeUp) {
        Round handed = previous.latest;
        if (handed == null || handed.unanswered() != null) {
            release(previous);
            return tryAcquire(hold, lease, Duration.ZERO, wakeUp);
        }
        boolean[] answered = new boolean[nodes.size()];
        Acquisition outcome = watchedRound(hold, lease, wakeUp, previous, handed.attempt(), answered);
        boolean everywhere = true;
        for (boolean gone : answered) {
            everywhere &= gone;
        }
        if (!everywhere) {
            releaseExcept(answered, previous, handed.attempt(), null);
        }
        return outcome;
    }

    /**
     * One round; marks in {@code answeredBusy} the nodes that answered it busy, and in {@code answeredOut} (unless
     * null) those that answered at all. With a {@code previous} hold, each master's attempt takes over that hold's
     * round {@code previousAttempt} there: where it answered, that round's hold is gone (replaced or deleted).
     */
    private Acquisition acquire(Hold hold, Duration lease, Runnable wakeUp, boolean[] answeredBusy, Hold previous,
            long previousAttempt, boolean[] answeredOut) {
        String name = hold.name;
        long attempt = attempts.incrementAndGet();
        long leaseNanos = lease.toNanos();
        long start = time.nanoTime();
        // named before it is sent: if the round fails with its outcome unknown, the machinery releases this round
        hold.latest = new Round(attempt, null);
        // a waiter claims the next turn on every node that answers busy; a quorum of claims makes it the next taker
        boolean claim = wakeUp != null;
        IntFunction<RedisNodeStore.Attempt> on = previous == null ? i -> hold.on(i, attempt, claim)
                : i -> hold.on(i, attempt, claim, previous.on(i, previousAttempt));
        Votes<Acquisition> round = pipelines != null
                ? pipelined(i -> pipelines[i].sendAcquire(on.apply(i), lease))
                : fanOut(null, i -> nodes.get(i).store().tryAcquire(on.apply(i), lease));
        List<Integer> granted = new ArrayList<>();
        long maxToken = 0;
        long minBusy = Long.MAX_VALUE;
        int busy = 0;
        int claimed = 0;
        for (int i = 0; i < nodes.size(); i++) {
            Acquisition a = round.value(i);
            if (a == null) {
                continue;
            }
            if (answeredOut != null) {
                answeredOut[i] = true;
            }
            if (a.isAcquired()) {
                granted.add(i);
                maxToken = Math.max(maxToken, a.fencingToken());
            } else {
                busy++;
                answeredBusy[i] = true;
                if (a.isClaimed()) {
                    claimed++;
                }
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
                CompletableFuture<?>[] futures = round.futures();
                boolean pending = Arrays.stream(futures).anyMatch(f -> !f.isDone());
                hold.latest = new Round(attempt, pending ? futures : null);
                return Acquisition.acquired(maxToken, Duration.ofNanos(Validity.validFor(leaseNanos)));
            }
            failure = fenced < quorum
                    ? "only " + fenced + " node(s) took fencing token " + maxToken + ", quorum " + quorum
                    : "the quorum answered after " + millis(end - start) + " ms, leaving no validity of the "
                            + millis(leaseNanos) + " ms lease (drift " + millis(Validity.drift(leaseNanos)) + " ms)";
            log.debug("Redlock '{}' on {}: attempt failed: {}", name, address, failure);
        } else {
            failure = null;
        }
        // a node that answered busy holds nothing of this round, and keeps the run's claim there
        releaseExcept(answeredBusy, hold, attempt, round.futures());
        if (granted.size() + busy < quorum) {
            // the outcome is unknown to the machinery, which releases the hold later: it names this round
            throw new LockBackendException(address + " - acquire lock '" + name + "': only " + (granted.size() + busy)
                    + " of " + nodes.size() + " nodes answered within " + millis(nodeTimeoutNanos)
                    + " ms, quorum " + quorum + ": " + round.problems());
        }
        hold.hearsEveryRelease = true;
        if (failure != null) {
            return Acquisition.busy(Duration.ofMillis(1));
        }
        if (!granted.isEmpty()) {
            splitVotes.incrementAndGet();
            // Clients that split the vote look again after a random delay, so they do not collide again; the release of
            // our own votes wakes our waiter too, so the delay is a back-off the machinery waits out.
            return Acquisition.backOff(Duration.ofNanos(splitVoteDelay(hold, time.nanoTime() - start)));
        }
        hold.splitVotes = 0;
        hold.hearsEveryRelease = claimed > 0;
        Duration retryAfter = minBusy == Long.MAX_VALUE ? null : Duration.ofNanos(minBusy);
        return claimed >= quorum ? Acquisition.claimed(retryAfter) : Acquisition.busy(retryAfter);
    }

    /** The random delay after a split vote of {@code hold}'s run that took {@code roundNanos}. */
    private long splitVoteDelay(Hold hold, long roundNanos) {
        long bound = splitVoteBound(hold.splitVotes++, roundNanos, retryDelayNanos);
        return bound > 0 ? ThreadLocalRandom.current().nextLong(bound) : 0;
    }

    /**
     * The bound of the uniform random delay after a run's split vote that took {@code roundNanos}, the run's
     * {@code before}-th in a row: twice the round (at least {@value #FIRST_SPLIT_DELAY_MICROS} µs), since clients
     * that collided collide again only if their next rounds overlap, doubled for each split vote before it, and
     * never above {@code retryDelayNanos}. A fixed bound of the retry delay (the node timeout, 50 ms by default)
     * left the lock idle for half of it on average after each collision, and collisions are common while a release
     * has reached some masters and not yet the others.
     */
    static long splitVoteBound(int before, long roundNanos, long retryDelayNanos) {
        long bound = Math.max(TimeUnit.MICROSECONDS.toNanos(FIRST_SPLIT_DELAY_MICROS), 2 * roundNanos);
        for (int i = 0; i < before && bound < retryDelayNanos; i++) {
            bound *= 2;
        }
        return Math.max(0, Math.min(bound, retryDelayNanos));
    }

    /** Raises the counters of granting nodes below {@code token}; returns how many granting nodes now hold it. */
    private int raiseFences(String name, Votes<Acquisition> round, List<Integer> granted, long token) {
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
        String key = new RedisKeys(namespace).fence(name);
        List<String> args = List.of(Long.toString(token));
        Votes<Object> raise = fanOut(null, i -> low.contains(i)
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
    public boolean release(Hold hold) {
        Round last = hold.latest;
        if (last == null) {
            return false; // no round was made: nothing to release
        }
        String name = hold.name;
        Votes<Boolean> round = releaseEverywhere(hold, last.attempt, last.unanswered);
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
            // the machinery's retry names the same round
            throw new LockBackendException(address + " - release lock '" + name + "': only " + (released + notHeld)
                    + " of " + nodes.size() + " nodes answered within " + millis(nodeTimeoutNanos) + " ms, quorum "
                    + quorum + ": " + round.problems());
        }
        return true;
    }

    /**
     * Releases the hold of exactly round {@code attempt} of {@code hold} on every node; a node whose acquisition in
     * {@code pending} (null: none) has not answered yet gets the release once it has, and is not waited for.
     */
    private Votes<Boolean> releaseEverywhere(Hold hold, long attempt, CompletableFuture<?>[] pending) {
        return releaseExcept(new boolean[nodes.size()], hold, attempt, pending);
    }

    /** Releases round {@code attempt} on every node but those {@code skip} names. */
    private Votes<Boolean> releaseExcept(boolean[] skip, Hold hold, long attempt, CompletableFuture<?>[] pending) {
        if (pipelines != null && (pending == null || Arrays.stream(pending).allMatch(CompletableFuture::isDone))) {
            return pipelined(i -> skip[i] ? deadline -> false : pipelines[i].sendRelease(hold.on(i, attempt)));
        }
        return fanOut(pending, i -> !skip[i] && nodes.get(i).store().release(hold.on(i, attempt)));
    }

    /**
     * A run that stopped waiting ends its claims: releasing its last round does that on every node where it holds
     * nothing.
     */
    @Override
    public void abandon(Hold hold) {
        Round last = hold.latest;
        if (last != null) {
            releaseEverywhere(hold, last.attempt, last.unanswered);
        }
    }

    /** The machinery ended the hold's validity: released on every node, not left to a minority of keys. */
    @Override
    public void leaseEnded(Hold hold) {
        Round last = hold.latest;
        if (last != null) {
            releaseEverywhere(hold, last.attempt, last.unanswered);
        }
    }

    // ---------------------------------------------------------------- renew

    @Override
    public RenewResult<Hold> renew(List<Hold> holds, Duration lease) {
        if (holds.isEmpty()) {
            return RenewResult.allRenewed();
        }
        long leaseNanos = lease.toNanos();
        int n = holds.size();
        // each hold's latest round (the one that took it) on each node, in the order of holds
        List<List<RedisNodeStore.Attempt>> perNode = new ArrayList<>(nodes.size());
        for (int i = 0; i < nodes.size(); i++) {
            List<RedisNodeStore.Attempt> attemptsOfNode = new ArrayList<>(n);
            for (Hold hold : holds) {
                attemptsOfNode.add(hold.on(i, hold.latest.attempt));
            }
            perNode.add(attemptsOfNode);
        }
        long start = time.nanoTime();
        Votes<Set<RedisNodeStore.Attempt>> round = fanOut(null, i -> nodes.get(i).store()
                .renewAttempts(perNode.get(i), lease));
        long end = time.nanoTime();
        int[] confirmations = new int[n];
        int[] denials = new int[n];
        for (int i = 0; i < nodes.size(); i++) {
            Set<RedisNodeStore.Attempt> gone = round.value(i);
            if (gone == null) {
                continue;
            }
            for (int j = 0; j < n; j++) {
                if (gone.contains(perNode.get(i).get(j))) {
                    denials[j]++;
                } else {
                    confirmations[j]++;
                }
            }
        }
        // counts only if the quorum answered with validity left over, as for an acquisition
        boolean inTime = Validity.remaining(leaseNanos, start, end) > 0;
        Set<Hold> gone = new HashSet<>();
        List<Hold> unconfirmed = new ArrayList<>();
        for (int j = 0; j < n; j++) {
            if (inTime && confirmations[j] >= quorum) {
                continue;
            }
            if (denials[j] > nodes.size() - quorum) {
                gone.add(holds.get(j));
            } else {
                unconfirmed.add(holds.get(j));
            }
        }
        if (!unconfirmed.isEmpty() && gone.isEmpty()) {
            // Too few answers in time (slow or unreachable nodes, a starved machine), but no majority says a key
            // is gone: renew nothing, so the machinery keeps each hold until the validity it has ends and the next
            // round tries again.
            throw new LockBackendException(address + " - renew " + unconfirmed.size() + " lock(s): not confirmed by "
                    + "a quorum of " + quorum + (inTime ? "" : " with validity left (the round took "
                    + millis(end - start) + " ms of the " + millis(leaseNanos) + " ms lease)") + ": " + round.problems());
        }
        if (!unconfirmed.isEmpty()) {
            // Some holds are gone by a majority, others merely unconfirmed: the latter stay as valid as they were,
            // and the next round tries them again
            log.warn("Redlock on {}: renewal of {} lock(s) not confirmed by a quorum of {}, kept until their validity "
                    + "ends; a majority says {} other(s) are gone: {}", address, unconfirmed.size(), quorum,
                    gone.size(), round.problems());
        } else if (!gone.isEmpty()) {
            log.warn("Redlock on {}: a majority of nodes no longer holds {} lock(s); giving them up: {}", address,
                    gone.size(), round.problems());
        }
        for (Hold hold : gone) {
            Round last = hold.latest;
            releaseEverywhere(hold, last.attempt, last.unanswered);
        }
        return RenewResult.of(gone, new HashSet<>(unconfirmed), Duration.ofNanos(Validity.validFor(leaseNanos)));
    }

    // ---------------------------------------------------------------- queries and wake-ups

    @Override
    public boolean isLocked(String name) {
        Votes<Boolean> round = fanOut(null, i -> nodes.get(i).store().isLocked(name));
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

    /*
     * Permit counts. Each master keeps "<version>:<count>" under the semaphore's permit-count key. A write reads the
     * records of a quorum, then writes the next version to every master and is done once a quorum stored it; a read
     * needs a quorum of answers and takes the highest version among them (of two writes that drew the same version,
     * the larger count). Any two quorums share a master, so a read that starts after a write completed sees that
     * write or a later one: the masters need not agree, only overlap, as for locks. A write that reached fewer than
     * a quorum fails, and later reads may see its count or the one before.
     */

    @Override
    public OptionalInt semaphorePermits(String name) {
        PermitRecord latest = latestPermits(name, "read");
        return latest == null ? OptionalInt.empty() : OptionalInt.of(latest.count());
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        PermitRecord latest = latestPermits(name, "set");
        String record = new PermitRecord(latest == null ? 1 : latest.version() + 1, permits).toString();
        Votes<Boolean> round = fanOut(null, i -> {
            nodes.get(i).store().setPermitRecord(name, record);
            return true;
        });
        int stored = 0;
        for (int i = 0; i < nodes.size(); i++) {
            if (round.answered(i)) {
                stored++;
            }
        }
        if (stored < quorum) {
            throw new LockBackendException(address + " - set the permit count of semaphore '" + name + "': stored on "
                    + stored + " node(s), a quorum of " + quorum + " is needed (later reads may see the old count or "
                    + "the new one): " + round.problems());
        }
    }

    /** The latest permit record of semaphore {@code name} among a quorum's answers, or null if none has one. */
    private PermitRecord latestPermits(String name, String action) {
        Votes<Optional<String>> round = fanOut(null,
                i -> Optional.ofNullable(nodes.get(i).store().permitRecord(name)));
        int answers = 0;
        PermitRecord latest = null;
        for (int i = 0; i < nodes.size(); i++) {
            Optional<String> answer = round.value(i);
            if (answer != null) {
                answers++;
                PermitRecord record = answer.map(text -> PermitRecord.parse(name, text)).orElse(null);
                if (record != null && (latest == null || record.compareTo(latest) > 0)) {
                    latest = record;
                }
            }
        }
        if (answers < quorum) {
            throw new LockBackendException(address + " - " + action + " the permit count of semaphore '" + name
                    + "': " + answers + " node(s) answered within " + millis(nodeTimeoutNanos) + " ms, a quorum of "
                    + quorum + " is needed: " + round.problems());
        }
        return latest;
    }

    /** One master's record of a permit count: the write's version and the count. */
    private record PermitRecord(long version, int count) implements Comparable<PermitRecord> {

        static PermitRecord parse(String name, String text) {
            int colon = text.indexOf(':');
            try {
                return new PermitRecord(Long.parseLong(text.substring(0, colon)),
                        Integer.parseInt(text.substring(colon + 1)));
            } catch (RuntimeException e) {
                throw new LockBackendException("the permit count of semaphore '" + name + "' is not a Redlock record "
                        + "(<version>:<count>): '" + text + "'", e);
            }
        }

        @Override
        public int compareTo(PermitRecord other) {
            int byVersion = Long.compare(version, other.version);
            return byVersion != 0 ? byVersion : Integer.compare(count, other.count);
        }

        @Override
        public String toString() {
            return version + ":" + count;
        }
    }

    /**
     * The nodes' release messages wake the waiter once they may have freed a quorum ({@link QuorumWakeUp}): one
     * release publishes on every node, and a round started by the first message would find the others still
     * held, while the messages arriving during it would start another round at once.
     */
    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        QuorumWakeUp wakeUp = new QuorumWakeUp(nodes.size(), quorum, onRelease);
        List<Subscription> subscriptions = new ArrayList<>(nodes.size());
        for (int i = 0; i < nodes.size(); i++) {
            Subscription s = nodes.get(i).store().subscribe(name, wakeUp.callbacks[i]);
            if (s != null) {
                subscriptions.add(s);
            } else {
                wakeUp.pushesNothing(i);
            }
        }
        // the machinery passes the same callback to its rounds (tryAcquire's wakeUp), which tell it what they saw
        wakeUps.put(onRelease, wakeUp);
        return () -> {
            wakeUps.remove(onRelease, wakeUp);
            subscriptions.forEach(Subscription::close);
        };
    }

    /**
     * Wakes one waiter when the nodes' release messages may have freed a quorum, rather than at each node's message
     * of the same release. A node counts as possibly free unless it answered the waiter's last round busy and has
     * published no release since that round began (so a release that reached a node after the round's call there
     * is never missed); a node that granted, did not answer, or pushes nothing always counts as possibly free. So the
     * waiter is woken whenever the lock may be free, as far as messages tell: expiries, which publish nothing, are
     * left to the machinery's timed re-check, as before. Messages that arrive during a round are judged when it
     * ends, against what it saw. A callback that no round has reported on (before the first) wakes at every message.
     */
    static final class QuorumWakeUp {
        private final int quorum;
        private final Runnable wakeUp;
        /** Each node's callback: its release messages ({@link #released}), which a round tells as whom it asks. */
        final Runnable[] callbacks;
        /** Answered the last round busy. */
        private final boolean[] busy;
        /** Published a release since the last round began. */
        private final boolean[] heard;
        /** Cannot push; counts as possibly free. */
        private final boolean[] silent;
        private boolean inRound;

        QuorumWakeUp(int nodes, int quorum, Runnable wakeUp) {
            this.quorum = quorum;
            this.wakeUp = wakeUp;
            this.busy = new boolean[nodes];
            this.heard = new boolean[nodes];
            this.silent = new boolean[nodes];
            this.callbacks = new Runnable[nodes];
            for (int i = 0; i < nodes; i++) {
                int node = i;
                callbacks[i] = () -> released(node);
            }
        }

        /** Node {@code node} published a release (or its connection came back, which may have missed one). */
        void released(int node) {
            boolean wake;
            synchronized (this) {
                heard[node] = true;
                wake = !inRound && possiblyFree() >= quorum;
            }
            if (wake) {
                wakeUp.run();
            }
        }

        synchronized void pushesNothing(int node) {
            silent[node] = true;
        }

        /** A round is about to call the nodes: what they published before counts in its answers. */
        synchronized void roundStarting() {
            inRound = true;
            Arrays.fill(heard, false);
        }

        /** The round is over; {@code answeredBusy} marks the nodes that answered it busy. */
        void roundEnded(boolean[] answeredBusy) {
            boolean wake;
            synchronized (this) {
                inRound = false;
                System.arraycopy(answeredBusy, 0, busy, 0, busy.length);
                boolean anyHeard = false;
                for (boolean h : heard) {
                    anyHeard |= h;
                }
                wake = anyHeard && possiblyFree() >= quorum;
            }
            if (wake) {
                wakeUp.run();
            }
        }

        private int possiblyFree() {
            int free = 0;
            for (int i = 0; i < busy.length; i++) {
                if (!busy[i] || heard[i] || silent[i]) {
                    free++;
                }
            }
            return free;
        }
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

    /** The fan-out threads running now; for tests. */
    int fanOutThreads() {
        return executor.getPoolSize();
    }

    // ---------------------------------------------------------------- holds

    /**
     * One acquisition run over the masters: its name and owner id, its hold on each master (keys and owner id
     * encoded there once), and its latest round, which every release and renewal of the run names.
     */
    static final class Hold {
        final String name;
        final String owner;
        /** A read run: its waiter hears every release, since a claim of another reader does not keep it out. */
        final boolean shared;
        private final RedisNodeStore.Hold[] onNode;
        /**
         * The run's latest round, null before the first. Rounds of a run come one after another; the machinery
         * releases or renews a run only after its last round.
         */
        volatile Round latest;
        /** The run's split votes in a row: the rounds of a run never overlap. */
        int splitVotes;
        /**
         * Whether the run's waiter hears releases that name another run's claim to the next turn: unless its last
         * round was answered busy without a claim anywhere.
         */
        boolean hearsEveryRelease = true;

        Hold(String name, String owner, boolean shared, RedisNodeStore.Hold[] onNode) {
            this.name = name;
            this.owner = owner;
            this.shared = shared;
            this.onNode = onNode;
        }

        /** Round {@code attempt} of this run on node {@code i}. */
        RedisNodeStore.Attempt on(int i, long attempt) {
            return new RedisNodeStore.Attempt(onNode[i], attempt);
        }

        /** Round {@code attempt} of this run on node {@code i}, claiming the next turn there if {@code claim}. */
        RedisNodeStore.Attempt on(int i, long attempt, boolean claim) {
            return new RedisNodeStore.Attempt(onNode[i], attempt, claim);
        }

        /** {@link #on(int, long, boolean)} taking over {@code previous}, another run's round on the same node. */
        RedisNodeStore.Attempt on(int i, long attempt, boolean claim, RedisNodeStore.Attempt previous) {
            return new RedisNodeStore.Attempt(onNode[i], attempt, claim, previous);
        }

        @Override
        public String toString() {
            Round last = latest;
            return "RedlockHold{" + name + ", owner=" + owner + (last == null ? "" : ", round=" + last.attempt) + '}';
        }
    }

    /**
     * A round of a run: its attempt id, and the acquisitions of the round that had not answered when it was granted
     * (null if none), which a release to their nodes waits for.
     */
    record Round(long attempt, CompletableFuture<?>[] unanswered) {
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
    private <T> Votes<T> pipelined(IntFunction<RedisNodeStore.Pending<T>> send) {
        int n = nodes.size();
        @SuppressWarnings("unchecked")
        RedisNodeStore.Pending<T>[] sent = new RedisNodeStore.Pending[n];
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
        return new Votes<>(answers);
    }

    /**
     * Runs {@code op} on every node at once and waits at most the per-node timeout for the answers. A node
     * whose {@code after} future has not completed gets its call once it has, and is not waited for; a call
     * that has not started when the wait ends is not sent at all.
     */
    private <T> Votes<T> fanOut(CompletableFuture<?>[] after, Function<Integer, T> op) {
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
        return new Votes<>(futures);
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
    private final class Votes<T> {
        private final CompletableFuture<T>[] futures;
        private final Object[] values;

        Votes(CompletableFuture<T>[] futures) {
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

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }
}
