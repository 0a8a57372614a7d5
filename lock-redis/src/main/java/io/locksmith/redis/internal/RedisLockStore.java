package io.locksmith.redis.internal;

import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisScripts.Script;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * The Redis {@link LockStore}: one hash per lock, a fencing counter beside it, Lua scripts called by SHA and
 * wake-ups over pub/sub. Key layout in {@link RedisKeys}, the scripts and why they are safe in
 * {@link RedisScripts}.
 *
 * <p>Round trips: an acquisition is one {@code EVALSHA}, a release one {@code EVALSHA} (which also publishes the
 * wake-up: {@code PUBLISH} on a single server, {@code SPUBLISH} on a Redis 7+ cluster), a renewal batch one
 * {@code EVALSHA} on a single server and one per hash slot on a cluster, {@link #isLocked} one {@code EXISTS},
 * {@link #inspect} and {@link #forceRelease} one {@code EVALSHA} each (their scripts are loaded on first use,
 * not when the store starts). Every Jedis failure becomes a {@link LockBackendException} naming the server
 * without credentials.
 *
 * <p>A call that fails at once on a broken connection (a pooled connection the server closed when it restarted
 * or dropped its clients) is repeated once on a fresh connection; all calls are safe to repeat (see
 * {@link RedisScripts}). A call that timed out or failed slowly is not repeated, so every call returns within
 * about one operation timeout. An acquisition whose answer was lost is cancelled in the background until
 * the server confirms it, so a hold that the server granted after its client gave up does not linger.
 *
 * <p>Each acquisition run is a {@link RedisHold}: the lock's keys and the owner id, encoded once when the run
 * begins, and the id of its latest attempt, which its release and renewals name. The store keeps nothing per
 * hold.
 *
 * <p>Over a pooled single-server client, acquisitions and releases can also be pipelined
 * ({@link RedisNodeStore.Pipelining}): sent through a {@link RedisPipeline} and answered later on the caller's
 * thread, so that Redlock waits for all its servers at once without a thread per server.
 *
 * <p>Unsupported internal API: {@code io.locksmith.redis.RedisLockProviders} builds it for one server and
 * {@link RedisNodeStore#open} for each server of a Redlock; applications use those instead.
 */
public final class RedisLockStore implements LockStore<RedisHold>, RedisNodeStore, RedisNodeStore.Pipelining {

    private static final Logger log = LoggerFactory.getLogger(RedisLockStore.class);
    private static final long CANCEL_MEMORY_MILLIS = 60_000;
    private static final long MIN_RETRY_MILLIS = 50;
    private static final long MAX_RETRY_MILLIS = 1_000;
    /** The attempt argument that names any attempt of the owner. */
    private static final byte[] ANY_ATTEMPT = new byte[0];
    /** An unused script argument. */
    private static final byte[] NONE = new byte[0];
    /** The ticket argument of a run that has not been answered busy yet. */
    private static final byte[] NO_TICKET = new byte[0];
    private static final byte[] CLAIM_ARG = RedisHold.bytes(RedisScripts.CLAIM);
    private static final byte[] QUEUE_ARG = RedisHold.bytes(RedisScripts.QUEUE);
    /** The least time a queued waiter stays queued without looking again (FIFO fairness). */
    private static final long MIN_QUEUED_MILLIS = 5_000;
    private static final byte[] SHARDED = RedisHold.bytes(RedisScripts.SHARDED);
    /**
     * How long a waiter sleeps at most while another run's claim to the next turn lives: the releases before the
     * claimant's turn wake the claimant alone (see {@link RedisScripts#RELEASE}), so a claimant that died with its
     * claim must not leave the others asleep on a lock that may be free until a lease they were told of ends.
     */
    static final Duration UNCLAIMED_RECHECK = Duration.ofSeconds(1);

    private final UnifiedJedis jedis;
    /** Whether waiters queue first come, first served across providers (FIFO fairness). */
    private final boolean fifo;
    /** How long a queued waiter stays queued without looking again, before the attempt's lease caps it. */
    private final long queuedMillis;
    private final String address;
    private final RedisKeys keys;
    private final boolean cluster;
    private final RedisShardedWakeups.Nodes nodes;
    private final Duration operationTimeout;
    private final long timeoutNanos;
    /** Whether wake-ups go over sharded pub/sub: a cluster whose nodes all run Redis 7 or later. */
    private volatile boolean sharded;
    private volatile RedisSubscriber wakeups;
    private final Runnable onConnectionFailure;
    private final AutoCloseable owned;
    private final AtomicLong attempts = new AtomicLong();
    /** Pipelined calls over the client's connection pool; null if it has none (or is a cluster client). */
    private final RedisPipeline pipeline;
    private final Canceller canceller = new Canceller();
    /** The waiters' wake-ups by the machinery's callback ({@link #subscribe}), told as which owner they ask. */
    private final Map<Runnable, Waiter> waiters = new ConcurrentHashMap<>();
    /** The lease the scripts were last given, as their argument: the usual lease is encoded once. */
    private volatile LeaseArg leaseArg = new LeaseArg(Duration.ZERO, number(leaseMillis(Duration.ZERO)));
    private volatile boolean closed;

    /**
     * A store over {@code jedis}.
     *
     * @param onConnectionFailure run after a call failed on a broken connection (drops the idle pooled
     *     connections of an owned client, which are likely stale too)
     * @param owned closed with the store, or null if the caller keeps ownership of the client
     */
    public RedisLockStore(UnifiedJedis jedis, String address, LockOptions options, Runnable onConnectionFailure,
            AutoCloseable owned) {
        this(jedis, address, options, false, onConnectionFailure, owned);
    }

    /**
     * A store over {@code jedis}, serving waiters first come, first served across providers if {@code fifo}
     * (see {@link RedisScripts#ACQUIRE}), else by the bounded rule of claims.
     *
     * @param onConnectionFailure run after a call failed on a broken connection (drops the idle pooled
     *     connections of an owned client, which are likely stale too)
     * @param owned closed with the store, or null if the caller keeps ownership of the client
     */
    public RedisLockStore(UnifiedJedis jedis, String address, LockOptions options, boolean fifo,
            Runnable onConnectionFailure, AutoCloseable owned) {
        this.jedis = jedis;
        this.fifo = fifo;
        // a queued waiter looks again within a third of this, and a dead one holds the queue up for at most this
        this.queuedMillis = Math.max(MIN_QUEUED_MILLIS, 2 * options.operationTimeout().toMillis());
        this.address = address;
        this.keys = new RedisKeys(options.namespace());
        this.nodes = RedisShardedWakeups.Nodes.of(jedis);
        this.cluster = nodes != null;
        this.operationTimeout = options.operationTimeout();
        this.timeoutNanos = operationTimeout.toNanos();
        this.wakeups = new RedisWakeups(jedis, address, operationTimeout);
        this.onConnectionFailure = onConnectionFailure;
        this.owned = owned;
        this.pipeline = cluster ? null : RedisPipeline.over(jedis);
    }

    /**
     * Loads the scripts, which also proves the server answers, and on a cluster whose nodes all run Redis 7 or
     * later switches wake-ups to sharded pub/sub; on failure the caller closes what it owns.
     */
    @Override
    public void loadScripts() {
        for (Script script : List.of(RedisScripts.ACQUIRE, RedisScripts.RELEASE, RedisScripts.RENEW,
                RedisScripts.CANCEL, RedisScripts.READ_ACQUIRE, RedisScripts.READ_RELEASE)) {
            String sha = run("load the " + script.name() + " script", null,
                    () -> jedis.scriptLoad(script.text())).value;
            if (!script.sha().equalsIgnoreCase(sha)) {
                throw new LockBackendException(address + " - loading the " + script.name()
                        + " script returned SHA " + sha + ", expected " + script.sha());
            }
        }
        if (cluster && !sharded && RedisShardedWakeups.supported(nodes)) {
            RedisSubscriber unused = wakeups;
            wakeups = new RedisShardedWakeups(nodes, address, operationTimeout);
            sharded = true;
            unused.close();
        }
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public RedisHold newHold(String name, String owner) {
        return new RedisHold(keys, name, owner);
    }

    @Override
    public boolean supportsSharedHolds() {
        return true;
    }

    /**
     * A read run: its hold is a field of the lock hash beside the other readers', with a lease of its own (see
     * {@link RedisScripts#READ_ACQUIRE}). A write hold under which a read run starts is released so as to leave the
     * read holds in place.
     */
    @Override
    public RedisHold newSharedHold(String name, String owner, RedisHold ownWrite) {
        if (ownWrite != null) {
            ownWrite.downgraded = true;
        }
        return new RedisHold(keys, name, owner, true, ownWrite);
    }

    @Override
    public RedisNodeStore.Hold newSharedHold(String name, String owner, RedisNodeStore.Hold ownWrite) {
        return newSharedHold(name, owner, (RedisHold) ownWrite);
    }

    @Override
    public Acquisition tryAcquire(RedisHold hold, Duration lease, Duration wait, Runnable wakeUp) {
        long attempt = attempts.incrementAndGet();
        hold.attempt = attempt;
        waitingAs(wakeUp, hold.shared ? null : hold.owner);
        return acquire(hold, attempt, lease, wakeUp != null, null);
    }

    @Override
    public boolean takesOver() {
        return true;
    }

    /**
     * One {@link RedisScripts#ACQUIRE} that also counts the lock free where its hash is exactly {@code previous}'s
     * hold, and replaces that hold when it grants; refused, it deletes that hold, with the wake-up of a release. A
     * failed call is cancelled as any acquisition, and the machinery releases {@code previous} then.
     */
    @Override
    public Acquisition takeOver(RedisHold previous, RedisHold hold, Duration lease, Runnable wakeUp) {
        long attempt = attempts.incrementAndGet();
        hold.attempt = attempt;
        boolean claim = wakeUp != null;
        waitingAs(wakeUp, hold.owner);
        Reply<Object> reply;
        try {
            reply = eval("acquire", hold.name, RedisScripts.ACQUIRE, hold.lock, hold.acquireKeys,
                    takeOverArgs(previous, previous.attempt, hold, lease, attempt, claim));
        } catch (Failed e) {
            cancelIfRun(e, hold, attempt, lease);
            throw e;
        }
        return acquired(hold, reply.value);
    }

    @Override
    public Acquisition tryAcquire(RedisNodeStore.Attempt attempt, Duration lease) {
        return acquire(holdOf(attempt), callerAttempt(attempt), lease, attempt.claim(), attempt.previous());
    }

    /**
     * Makes one attempt; a busy answer claims the next turn if {@code claim}; a grant replaces the hold of
     * {@code previous}'s round (null: none), and a refusal deletes it if it still holds the lock.
     */
    private Acquisition acquire(RedisHold hold, long attempt, Duration lease, boolean claim,
            RedisNodeStore.Attempt previous) {
        Reply<Object> reply;
        try {
            reply = hold.shared
                    ? eval("read-acquire", hold.name, RedisScripts.READ_ACQUIRE, hold.lock, hold.acquireKeys,
                            readArgs(hold, lease, attempt, claim))
                    : eval("acquire", hold.name, RedisScripts.ACQUIRE, hold.lock, hold.acquireKeys,
                            args(hold, lease, attempt, claim, previous));
        } catch (Failed e) {
            cancelIfRun(e, hold, attempt, lease);
            throw e;
        }
        return acquired(hold, reply.value);
    }

    private List<byte[]> acquireArgs(RedisHold hold, Duration lease, long attempt, boolean claim) {
        if (!claim) {
            return List.of(hold.ownerArg, leaseArg(lease), number(attempt));
        }
        if (fifo) {
            return List.of(hold.ownerArg, leaseArg(lease), number(attempt), QUEUE_ARG, number(queuedMillis(lease)));
        }
        // with the channel, so that the claimant's grant, which ends its claim, wakes the other waiters
        long ticket = hold.ticket;
        return List.of(hold.ownerArg, leaseArg(lease), number(attempt), CLAIM_ARG,
                ticket < 0 ? NO_TICKET : number(ticket), NONE, NONE, hold.channel, sharded ? SHARDED : NONE);
    }

    /** The arguments of {@link RedisScripts#ACQUIRE}, taking over {@code previous}'s round where it is not null. */
    private List<byte[]> args(RedisHold hold, Duration lease, long attempt, boolean claim,
            RedisNodeStore.Attempt previous) {
        return previous == null ? acquireArgs(hold, lease, attempt, claim)
                : takeOverArgs(holdOf(previous), previous.id(), hold, lease, attempt, claim);
    }

    /** The arguments of {@link RedisScripts#ACQUIRE} for a take-over: always nine, the unused ones empty. */
    private List<byte[]> takeOverArgs(RedisHold previous, long previousAttempt, RedisHold hold, Duration lease,
            long attempt, boolean claim) {
        byte[] none = new byte[0];
        byte[] mode = !claim ? none : fifo ? QUEUE_ARG : CLAIM_ARG;
        byte[] modeArg = !claim ? none : fifo ? number(queuedMillis(lease))
                : hold.ticket < 0 ? NO_TICKET : number(hold.ticket);
        return List.of(hold.ownerArg, leaseArg(lease), number(attempt), mode, modeArg, previous.ownerArg,
                number(previousAttempt), hold.channel, sharded ? SHARDED : none);
    }

    /** The arguments of {@link RedisScripts#READ_ACQUIRE}: always six, the unused ones empty. */
    private List<byte[]> readArgs(RedisHold hold, Duration lease, long attempt, boolean claim) {
        byte[] none = new byte[0];
        if (!claim) {
            return List.of(hold.ownerArg, leaseArg(lease), number(attempt), none, none, hold.ownWriteArg);
        }
        long ticket = hold.ticket;
        return fifo ? List.of(hold.ownerArg, leaseArg(lease), number(attempt), QUEUE_ARG,
                number(queuedMillis(lease)), hold.ownWriteArg) : List.of(hold.ownerArg, leaseArg(lease),
                number(attempt), CLAIM_ARG, ticket < 0 ? NO_TICKET : number(ticket), hold.ownWriteArg);
    }

    /** How long a waiter stays queued without looking again: {@link #queuedMillis}, at most the lease. */
    private long queuedMillis(Duration lease) {
        return Math.max(1, Math.min(queuedMillis, leaseMillis(lease)));
    }

    /**
     * Cancels an attempt whose call failed, if the server may have run it: at once if an interrupt ended the call,
     * otherwise (or if that fails) in the background. A virtual thread's socket I/O gives up when the thread is
     * interrupted, and the caller then throws InterruptedException, after which the attempt must hold nothing.
     */
    private void cancelIfRun(Failed failure, RedisHold hold, long attempt, Duration lease) {
        if (!failure.mayHaveRun) {
            return;
        }
        Cancel cancel = new Cancel(hold, attempt, Math.max(CANCEL_MEMORY_MILLIS, 2 * leaseMillis(lease)));
        if (Thread.interrupted()) {
            // hidden from the client for this one call, so that it runs; the caller still sees the interrupt
            try {
                if (canceller.cancel(cancel)) {
                    return;
                }
            } finally {
                Thread.currentThread().interrupt();
            }
        }
        canceller.add(cancel);
    }

    /** A hold of a caller's attempt; only this store makes them. */
    private static RedisHold holdOf(RedisNodeStore.Attempt attempt) {
        return (RedisHold) attempt.hold();
    }

    /**
     * The attempt id a caller gave; the store's own numbering continues above it, so that its ids keep growing
     * for every owner whichever way it is called.
     */
    private long callerAttempt(RedisNodeStore.Attempt attempt) {
        attempts.accumulateAndGet(attempt.id(), Math::max);
        return attempt.id();
    }

    private Acquisition acquired(RedisHold hold, Object reply) {
        if (reply instanceof List<?> read && read.size() == 2) {
            return Acquisition.acquired(asLong(read.get(0), "read-acquire"));
        }
        if (reply instanceof List<?> claim && claim.size() == 3) {
            hold.ticket = asLong(claim.get(2), "acquire");
            long left = asLong(claim.get(1), "acquire");
            Duration retryAfter = left > 0 ? Duration.ofMillis(left) : null;
            if (asLong(claim.get(0), "acquire") == 1) {
                return Acquisition.claimed(retryAfter);
            }
            // another run's claim lives: the releases until its turn wake that claimant alone
            return Acquisition.busy(retryAfter == null || retryAfter.compareTo(UNCLAIMED_RECHECK) > 0
                    ? UNCLAIMED_RECHECK : retryAfter);
        }
        if (reply instanceof List<?> claimed && claimed.size() == 1) {
            long left = asLong(claimed.get(0), "acquire");
            if (fifo) {
                // a queued waiter must look again before its place lapses, woken or not
                long refresh = Math.max(1, queuedMillis / 3);
                return Acquisition.claimed(Duration.ofMillis(left > 0 ? Math.min(left, refresh) : refresh));
            }
            return Acquisition.claimed(left > 0 ? Duration.ofMillis(left) : null);
        }
        long answer = asLong(reply, "acquire");
        if (answer > 0) {
            return Acquisition.acquired(answer);
        }
        return answer == 0 ? Acquisition.busy() : Acquisition.busy(Duration.ofMillis(-answer));
    }

    @Override
    public boolean release(RedisHold hold) {
        long attempt = hold.attempt;
        // before any attempt the run holds nothing; "any attempt of the owner" says so without a special case
        return released(eval("release", hold.name, releaseScript(hold), hold.lock, hold.releaseKeys,
                withChannel(hold, hold.ownerArg, attempt == 0 ? ANY_ATTEMPT : number(attempt))));
    }

    @Override
    public boolean release(RedisNodeStore.Attempt attempt) {
        RedisHold hold = holdOf(attempt);
        return released(eval("release", hold.name, releaseScript(hold), hold.lock, hold.releaseKeys,
                withChannel(hold, hold.ownerArg, number(attempt.id()))));
    }

    /**
     * The script that releases {@code hold}: a read hold, and a write hold whose thread took the read lock under it
     * (a downgrade), are released among the readers, leaving the other readers' fields alone.
     */
    private static Script releaseScript(RedisHold hold) {
        return hold.shared || hold.downgraded ? RedisScripts.READ_RELEASE : RedisScripts.RELEASE;
    }

    /**
     * A run that stopped waiting gives up its claim to the next turn, if it made one: the release script does that
     * for an attempt that holds nothing.
     */
    @Override
    public void abandon(RedisHold hold) {
        long attempt = hold.attempt;
        if (attempt != 0) {
            eval("abandon", hold.name, RedisScripts.RELEASE, hold.lock, hold.releaseKeys,
                    withChannel(hold, hold.ownerArg, number(attempt)));
        }
    }

    private boolean released(Reply<Object> reply) {
        // An attempt whose answer was lost and a repeat that finds nothing: the first one released it.
        return asLong(reply.value, "release") == 1 || reply.afterLostAnswer;
    }

    // ---------------------------------------------------------------- pipelined calls

    @Override
    public boolean canPipeline() {
        return pipeline != null;
    }

    @Override
    public RedisNodeStore.Pending<Acquisition> sendAcquire(RedisNodeStore.Attempt attempt, Duration lease) {
        RedisHold hold = holdOf(attempt);
        long id = callerAttempt(attempt);
        Sent sent = hold.shared ? new Sent("read-acquire", hold, RedisScripts.READ_ACQUIRE, hold.acquireKeys,
                readArgs(hold, lease, id, attempt.claim())) : new Sent("acquire", hold, RedisScripts.ACQUIRE,
                hold.acquireKeys, args(hold, lease, id, attempt.claim(), attempt.previous()));
        return deadline -> {
            Reply<Object> reply;
            try {
                reply = sent.await(deadline);
            } catch (Failed e) {
                cancelIfRun(e, hold, id, lease);
                throw e;
            }
            return acquired(hold, reply.value);
        };
    }

    @Override
    public RedisNodeStore.Pending<Boolean> sendRelease(RedisNodeStore.Attempt attempt) {
        RedisHold hold = holdOf(attempt);
        Sent sent = new Sent("release", hold, releaseScript(hold), hold.releaseKeys,
                withChannel(hold, hold.ownerArg, number(attempt.id())));
        return deadline -> released(sent.await(deadline));
    }

    /** The pipelined calls; for tests. */
    RedisPipeline pipeline() {
        return pipeline;
    }

    /** A script call sent through the pipeline (a failure to send shows when awaited), and how to repeat it. */
    private final class Sent {
        final String action;
        final RedisHold hold;
        final Script script;
        final List<byte[]> keyList;
        final List<byte[]> args;
        final long start = System.nanoTime();
        final RedisPipeline.Call call;

        Sent(String action, RedisHold hold, Script script, List<byte[]> keyList, List<byte[]> args) {
            this.action = action;
            this.hold = hold;
            this.script = script;
            this.keyList = keyList;
            this.args = args;
            this.call = pipeline.send(script, keyList, args);
        }

        private Reply<Object> again() {
            return eval(action, hold.name, script, hold.lock, keyList, args);
        }

        /**
         * Reads the answer until {@code deadline}. As in {@link #run}: a connection that broke at once is stale,
         * and the call is repeated (blocking, on a fresh connection); a server that lost the script gets it again.
         */
        Reply<Object> await(long deadline) {
            JedisConnectionException broken;
            try {
                return new Reply<>(call.read(deadline), false);
            } catch (JedisNoScriptException e) {
                return again();
            } catch (JedisConnectionException e) {
                broken = e;
            } catch (JedisException e) {
                // the server answered with an error, or no connection could be had from the pool: nothing ran
                throw new Failed(address + " - " + what(action, hold.name) + " failed: " + describe(e), e, false);
            }
            onConnectionFailure.run();
            boolean fast = System.nanoTime() - start < timeoutNanos / 4;
            if (!fast || closed || RedisPipeline.causedBy(broken, SocketTimeoutException.class)) {
                throw new Failed(address + " - " + what(action, hold.name) + " failed: " + describe(broken), broken,
                        call.maybeSent());
            }
            try {
                Reply<Object> again = again();
                return call.maybeSent() ? new Reply<>(again.value, true) : again;
            } catch (Failed e) {
                throw call.maybeSent() && !e.mayHaveRun ? new Failed(e.getMessage(), e.getCause(), true) : e;
            }
        }
    }

    @Override
    public RenewResult<RedisHold> renew(List<RedisHold> holds, Duration lease) {
        return RenewResult.gone(renew(holds, hold -> hold, hold -> hold.attempt, lease));
    }

    @Override
    public Set<RedisNodeStore.Attempt> renewAttempts(List<RedisNodeStore.Attempt> attempts, Duration lease) {
        return renew(attempts, RedisLockStore::holdOf, RedisNodeStore.Attempt::id, lease);
    }

    /**
     * Renews each of {@code items}: the hold {@code holdOf} gives, as far as its attempt {@code attemptOf} (0: any
     * attempt of its owner) still holds it.
     *
     * @return the items whose attempt no longer holds its lock
     */
    private <T> Set<T> renew(List<T> items, Function<T, RedisHold> holdOf, ToLongFunction<T> attemptOf,
            Duration lease) {
        if (items.isEmpty()) {
            return Set.of();
        }
        byte[] leaseArg = leaseArg(lease);
        Set<T> gone = new HashSet<>();
        for (List<T> group : groups(items, holdOf)) {
            List<byte[]> hashes = new ArrayList<>(group.size());
            List<byte[]> args = new ArrayList<>(2 * group.size() + 1);
            args.add(leaseArg);
            for (T item : group) {
                RedisHold hold = holdOf.apply(item);
                long attempt = attemptOf.applyAsLong(item);
                hashes.add(hold.lockKey);
                args.add(hold.ownerArg);
                args.add(attempt == 0 ? ANY_ATTEMPT : number(attempt));
            }
            Object reply = eval("renew " + group.size() + " lock(s)", null, RedisScripts.RENEW,
                    holdOf.apply(group.get(0)).lock, hashes, args).value;
            if (!(reply instanceof List<?> positions)) {
                throw unexpected("renew", reply);
            }
            for (Object position : positions) {
                int index = (int) asLong(position, "renew") - 1;
                if (index < 0 || index >= group.size()) {
                    throw unexpected("renew", reply);
                }
                gone.add(group.get(index));
            }
        }
        return gone;
    }

    /** The items of one renewal call each: all of them on a single server, one group per slot on a cluster. */
    private <T> List<List<T>> groups(List<T> items, Function<T, RedisHold> holdOf) {
        if (!cluster) {
            return List.of(items);
        }
        Map<Integer, List<T>> bySlot = new LinkedHashMap<>();
        for (T item : items) {
            bySlot.computeIfAbsent(JedisClusterCRC16.getSlot(holdOf.apply(item).lock), s -> new ArrayList<>())
                    .add(item);
        }
        return new ArrayList<>(bySlot.values());
    }

    @Override
    public boolean isLocked(String name) {
        String lock = keys.lock(name);
        return run("check", name, () -> jedis.exists(lock)).value;
    }

    @Override
    public LockInfo inspect(String name) {
        Object reply = eval("inspect", name, RedisScripts.INSPECT,
                List.of(keys.lock(name), keys.fence(name)), List.of()).value;
        if (!(reply instanceof List<?> parts) || parts.size() != 3) {
            throw unexpected("inspect", reply);
        }
        Long token = parts.get(2) == null ? null : asNumber(parts.get(2), "inspect");
        if (parts.get(0) == null) {
            return LockInfo.free(name, token);
        }
        if (!(parts.get(0) instanceof String owner)) {
            throw unexpected("inspect", reply);
        }
        long pttl = asLong(parts.get(1), "inspect");
        // The hash does not record when the hold began (see RedisScripts).
        return LockInfo.held(name, owner, null, pttl >= 0 ? Duration.ofMillis(pttl) : null, token);
    }

    @Override
    public boolean forceRelease(String name) {
        String lock = keys.lock(name);
        Object reply = eval("force the release of", name, RedisScripts.FORCE_RELEASE, List.of(lock),
                wakeUp(lock)).value;
        return asLong(reply, "force-release") == 1;
    }

    @Override
    public String permitRecord(String name) {
        String key = keys.permits(name);
        return run("read the permit count of semaphore '" + name + "'", null, () -> jedis.get(key)).value;
    }

    @Override
    public void setPermitRecord(String name, String record) {
        String key = keys.permits(name);
        run("set the permit count of semaphore '" + name + "'", null, () -> jedis.set(key, record));
    }

    /** The count is the key's value, a decimal number. */
    @Override
    public OptionalInt semaphorePermits(String name) {
        String record = permitRecord(name);
        if (record == null) {
            return OptionalInt.empty();
        }
        try {
            return OptionalInt.of(Integer.parseInt(record));
        } catch (NumberFormatException e) {
            throw new LockBackendException(address + " - the permit count of semaphore '" + name + "' ("
                    + keys.permits(name) + ") is not a number: '" + record + "'", e);
        }
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        setPermitRecord(name, Integer.toString(permits));
    }

    /**
     * Runs {@code onRelease} at each release of {@code name} that does not name another run's claim to the next
     * turn (see {@link RedisScripts#RELEASE}); which run the callback's waiter is, its attempts tell
     * ({@link #waitingAs}). Until the first, and whenever a message may have been missed, every release runs it.
     */
    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        Waiter waiter = new Waiter(onRelease);
        waiters.put(onRelease, waiter);
        Subscription subscription = wakeups.subscribe(keys.channel(name), waiter);
        return () -> {
            waiters.remove(onRelease, waiter);
            subscription.close();
        };
    }

    /** In FIFO mode every waiter hears every release: the head of the queue may not be a claim's owner. */
    @Override
    public void waitingAs(Runnable onRelease, String owner) {
        if (onRelease != null && !fifo) {
            Waiter waiter = waiters.get(onRelease);
            if (waiter != null) {
                waiter.owner = owner;
            }
        }
    }

    /**
     * A waiter's callback behind the channel's messages: a release names the claimant of the next turn, if a claim
     * lives, and wakes only the waiter that asks as that claimant, or as nobody yet.
     */
    private static final class Waiter implements Consumer<String> {
        private final Runnable onRelease;
        /** The owner id of the waiter's latest attempt; null before the first. */
        private volatile String owner;

        Waiter(Runnable onRelease) {
            this.onRelease = onRelease;
        }

        @Override
        public void accept(String message) {
            String asking = owner;
            if (message == null || asking == null || message.equals(RedisScripts.RELEASED)
                    || message.equals(asking)) {
                onRelease.run();
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        if (pipeline != null) {
            pipeline.close();
        }
        wakeups.close();
        canceller.closeAndFlush();
        if (owned != null) {
            try {
                owned.close();
            } catch (Exception e) {
                throw new LockBackendException(address + " - closing the Redis client failed: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public String toString() {
        return "RedisLockStore{" + address + '}';
    }

    RedisKeys keys() {
        return keys;
    }

    RedisSubscriber wakeups() {
        return wakeups;
    }

    /** Whether wake-ups go over sharded pub/sub; for tests. */
    boolean sharded() {
        return sharded;
    }

    /**
     * The arguments of a script that publishes a wake-up for the lock whose hash is {@code lock}: {@code first},
     * then the lock's channel, then {@link RedisScripts#SHARDED} if the script is to use {@code SPUBLISH}.
     */
    private List<String> wakeUp(String lock, String... first) {
        String[] args = java.util.Arrays.copyOf(first, first.length + (sharded ? 2 : 1));
        args[first.length] = RedisKeys.channelOf(lock);
        if (sharded) {
            args[first.length + 1] = RedisScripts.SHARDED;
        }
        return List.of(args);
    }

    /**
     * The arguments of a script that publishes a wake-up for {@code hold}'s lock: {@code first}, then the lock's
     * channel, then {@link RedisScripts#SHARDED} if the script is to use {@code SPUBLISH}.
     */
    private List<byte[]> withChannel(RedisHold hold, byte[]... first) {
        byte[][] args = Arrays.copyOf(first, first.length + (sharded ? 2 : 1));
        args[first.length] = hold.channel;
        if (sharded) {
            args[first.length + 1] = SHARDED;
        }
        return Arrays.asList(args);
    }

    /** The lease in milliseconds as a script argument. */
    private byte[] leaseArg(Duration lease) {
        LeaseArg last = leaseArg;
        if (last.lease != lease && !last.lease.equals(lease)) {
            last = new LeaseArg(lease, number(leaseMillis(lease)));
            leaseArg = last;
        }
        return last.millis;
    }

    /** A number as a script argument. */
    private static byte[] number(long value) {
        return RedisHold.bytes(Long.toString(value));
    }

    /** How many lost acquisitions still wait to be cancelled; for tests. */
    int pendingCancellations() {
        return canceller.pending();
    }

    // ---------------------------------------------------------------- calls

    /**
     * Runs a script by SHA; if the server lost it, loads it on the key's node and runs it again. {@code action}
     * and {@code name} say what it does, for the message of a failure (see {@link #run}).
     */
    private Reply<Object> eval(String action, String name, Script script, List<String> keyList, List<String> args) {
        return run(action, name, () -> {
            try {
                return jedis.evalsha(script.sha(), keyList, args);
            } catch (JedisNoScriptException e) {
                jedis.scriptLoad(script.text(), keyList.get(0));
                return jedis.evalsha(script.sha(), keyList, args);
            }
        });
    }

    /**
     * {@link #eval} with keys and arguments encoded already; {@code sampleKey} places a script loaded again. On a
     * pooled single-server client it runs on the pipeline's spare connections, without the pool's bookkeeping.
     */
    private Reply<Object> eval(String action, String name, Script script, String sampleKey, List<byte[]> keyList,
            List<byte[]> args) {
        return run(action, name, () -> {
            try {
                return evalsha(script, keyList, args);
            } catch (JedisNoScriptException e) {
                if (pipeline != null) {
                    pipeline.load(script);
                } else {
                    jedis.scriptLoad(script.text(), sampleKey);
                }
                return evalsha(script, keyList, args);
            }
        });
    }

    private Object evalsha(Script script, List<byte[]> keyList, List<byte[]> args) {
        return pipeline != null ? pipeline.call(script, keyList, args)
                : jedis.evalsha(script.shaBytes(), keyList, args);
    }

    /**
     * Runs a command, repeating it on a fresh connection after a broken connection that did not time out.
     *
     * @param action what the command does, such as {@code acquire}
     * @param name the lock it does it to, or null; the failure message says {@code <action> lock '<name>'},
     *     built only when the command fails
     * @throws Failed naming the server, and whether the command may have run
     */
    private <T> Reply<T> run(String action, String name, Supplier<T> command) {
        long start = System.nanoTime();
        boolean lostAnswer = false;
        for (boolean retried = false; ; retried = true) {
            try {
                return new Reply<>(command.get(), lostAnswer);
            } catch (JedisConnectionException e) {
                onConnectionFailure.run();
                lostAnswer |= !RedisPipeline.causedBy(e, ConnectException.class);
                // Only a failure that came at once is a stale connection worth one more try; anything slower
                // (a timeout, a server that is slow to refuse) is reported, so the call stays within its bound.
                boolean fast = System.nanoTime() - start < timeoutNanos / 4;
                if (retried || !fast || closed || RedisPipeline.causedBy(e, SocketTimeoutException.class)) {
                    throw new Failed(address + " - " + what(action, name) + " failed: " + describe(e), e,
                            lostAnswer);
                }
            } catch (JedisException e) {
                // The server answered with an error, or no connection could be had: nothing ran.
                throw new Failed(address + " - " + what(action, name) + " failed: " + describe(e), e,
                        lostAnswer);
            }
        }
    }

    private static String what(String action, String name) {
        return name == null ? action : action + " lock '" + name + "'";
    }

    private static String describe(JedisException e) {
        String message = e.getMessage();
        Throwable cause = e.getCause();
        if (cause != null && cause.getMessage() != null && (message == null || !message.contains(cause.getMessage()))) {
            message = (message == null ? "" : message + ": ") + cause.getMessage();
        }
        return message == null ? e.getClass().getSimpleName() : message;
    }

    private long asLong(Object reply, String what) {
        if (reply instanceof Long value) {
            return value;
        }
        throw unexpected(what, reply);
    }

    /** A number the server stores as a string, such as the fencing counter. */
    private long asNumber(Object reply, String what) {
        if (reply instanceof String text) {
            try {
                return Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw unexpected(what, reply);
            }
        }
        throw unexpected(what, reply);
    }

    private LockBackendException unexpected(String what, Object reply) {
        return new LockBackendException(address + " - " + what + " script gave an unexpected reply: " + reply);
    }

    /**
     * The lease in whole milliseconds for {@code PEXPIRE}, rounded up: the machinery counts the lease in
     * nanoseconds from before the call, so the key must live at least that long, never a fraction of a
     * millisecond less.
     */
    static long leaseMillis(Duration lease) {
        long millis = lease.toMillis();
        return Math.max(1, lease.getNano() % 1_000_000 == 0 ? millis : millis + 1);
    }

    /** A command's answer, and whether an earlier try of it lost its answer (so it may have run before). */
    private record Reply<T>(T value, boolean afterLostAnswer) {
    }

    /** A lease and its argument for the scripts. */
    private record LeaseArg(Duration lease, byte[] millis) {
    }

    /** An acquisition attempt to undo. */
    private record Cancel(RedisHold hold, long attempt, long memoryMillis) {
    }

    /** A failed call; {@link #mayHaveRun} if the server may have run it although its answer was lost. */
    private static final class Failed extends LockBackendException {
        private static final long serialVersionUID = 1L;
        final boolean mayHaveRun;

        Failed(String message, Throwable cause, boolean mayHaveRun) {
            super(message, cause);
            this.mayHaveRun = mayHaveRun;
        }
    }

    /**
     * Cancels acquisitions whose answer was lost, on a daemon thread started at the first one, retrying with
     * backoff until the server confirms each cancellation; {@link #closeAndFlush} makes a last bounded try.
     */
    private final class Canceller {
        private final ArrayDeque<Cancel> pending = new ArrayDeque<>();
        private Thread thread;
        private boolean stopped;

        synchronized void add(Cancel cancel) {
            if (stopped) {
                return;
            }
            pending.add(cancel);
            if (thread == null) {
                thread = new Thread(this::loop, "locksmith-redis-cancel");
                thread.setDaemon(true);
                thread.start();
            }
            notifyAll();
        }

        synchronized int pending() {
            return pending.size();
        }

        private void loop() {
            long delay = MIN_RETRY_MILLIS;
            while (true) {
                Cancel next;
                synchronized (this) {
                    while (pending.isEmpty() && !stopped) {
                        waitQuietly(0);
                    }
                    if (stopped) {
                        return;
                    }
                    next = pending.peek();
                }
                if (cancel(next)) {
                    synchronized (this) {
                        pending.remove(next);
                    }
                    delay = MIN_RETRY_MILLIS;
                } else {
                    synchronized (this) {
                        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delay);
                        long left;
                        while (!stopped && (left = until - System.nanoTime()) > 0) {
                            waitQuietly(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                        }
                    }
                    delay = Math.min(MAX_RETRY_MILLIS, delay * 2);
                }
            }
        }

        private boolean cancel(Cancel c) {
            RedisHold hold = c.hold;
            try {
                eval("cancel an unanswered acquisition of", hold.name, RedisScripts.CANCEL, hold.lock,
                        List.of(hold.lockKey, hold.cancelledKey),
                        withChannel(hold, hold.ownerArg, number(c.attempt), number(c.memoryMillis)));
                return true;
            } catch (LockBackendException e) {
                log.debug("{}: will retry: {}", address, e.getMessage());
                return false;
            }
        }

        void closeAndFlush() {
            Thread running;
            synchronized (this) {
                stopped = true;
                notifyAll();
                running = thread;
            }
            long deadline = System.nanoTime() + timeoutNanos;
            if (running != null) {
                try {
                    running.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(timeoutNanos)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            List<Cancel> left;
            synchronized (this) {
                left = new ArrayList<>(pending);
                pending.clear();
            }
            int abandoned = 0;
            for (Cancel c : left) {
                if (System.nanoTime() - deadline >= 0 || running != null && running.isAlive() || !cancel(c)) {
                    abandoned++;
                }
            }
            if (abandoned > 0) {
                log.warn("{}: closing with {} unanswered acquisition(s) not cancelled; a hold the server granted "
                        + "late ends with its lease", address, abandoned);
            }
        }

        private void waitQuietly(long millis) {
            try {
                wait(millis);
            } catch (InterruptedException e) {
                // only the store's own threads wait here; the state says what to do
            }
        }
    }
}
