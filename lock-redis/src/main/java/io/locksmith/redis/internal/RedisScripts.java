package io.locksmith.redis.internal;

import io.locksmith.spi.LockStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The Lua scripts of the Redis store. Unsupported internal API, shared by the Redis and Redlock backends and the
 * benchmarks' protocol floor; applications never need it. Each is loaded once ({@code SCRIPT LOAD}) and called by SHA
 * ({@code EVALSHA}); a server that lost its script cache (restart, {@code SCRIPT FLUSH}, failover) answers
 * {@code NOSCRIPT}, and the store loads the script again and repeats the call.
 *
 * <p>Why the scripts are safe: Redis runs a script atomically (no other command runs between its first and its
 * last call), so each check-then-act below is one indivisible step, exactly as if the server had a command for
 * it. Every key a script touches is passed in {@code KEYS} and shares the lock's hash tag, so on a cluster the
 * whole script runs on the one node that owns the lock's slot. A lock is a hash whose single field is the
 * owner id (the provider's random 128-bit client id and the number of one acquisition run, so no other client
 * can guess it and it names one hold) and whose value is the id of the attempt that took it: a decimal number
 * that grows with every attempt a store makes; its expiry is the lease, so Redis frees the lock when the lease
 * ends even if its owner died.
 *
 * <p>The attempt id matters because a request that timed out on the client may still run later: a server
 * paused with SIGSTOP runs the commands waiting in its sockets when it resumes, and a retransmitted packet can
 * arrive late. Release and renewal therefore act only on the hold of the exact attempt they mean, so a late
 * release can never free a newer hold of the same owner, and an acquisition takes over a hold of its own owner
 * only if it is a strictly newer attempt: a late attempt never takes over a newer one, so the cancellation that
 * follows a late attempt cannot free the newer hold either. An acquisition whose outcome the client does not
 * know is cancelled afterwards ({@link #CANCEL}): if it already ran, its hold is deleted; if it has not, a
 * tombstone makes it do nothing when it does.
 *
 * <ul>
 *   <li>{@link #ACQUIRE}: takes the lock if nobody holds it, or if the hash names an older attempt of this
 *       owner (a round of a Redlock acquisition that failed and whose release did not reach this server): the
 *       machinery only asks for fresh acquisitions, never for re-entry. Compared as numbers, since {@code "10"}
 *       sorts before {@code "9"}. The same attempt repeated (its first answer was lost on a broken connection)
 *       is told its token again. A fresh acquisition increments the fencing counter, so each token is greater
 *       than every earlier one for the name, and the counter never expires. A busy lock answers the holder's
 *       remaining lease, which bounds how long a waiter that misses the release message waits. The usual case,
 *       neither a hold nor a cancelled attempt of the lock, is told by one {@code EXISTS} of both keys, so that
 *       it costs four commands inside the script: each command a script calls adds to the server's time per
 *       round trip. A waiter's attempt may claim the next turn (a hash of the claimant and its ticket, expiring
 *       with the claimant's lease, refreshed by each of its attempts): once {@link LockStore#GRANTS_PAST_A_CLAIM}
 *       more tokens than the ticket have been issued, and {@link #GRANTS_SINCE_A_CLAIM} since the claim was made
 *       (its {@code since}, the counter then), a free lock goes to the claimant alone, and its grant deletes the
 *       claim. The grants since the claim let the holder's provider hand the lock to its own next waiters before the
 *       turn passes (see {@link io.locksmith.spi.LockStore#takeOver}): a claimant that waited long has an old ticket,
 *       and without them the lock would cross between processes at every grant, each crossing costing a release and
 *       a wake-up.
 *       A run's ticket is the fencing counter when it was first answered busy, which the script tells it and it
 *       sends with its later attempts; a run with an older ticket takes the claim from a younger one, so
 *       the waiter that has waited longest is the claimant, and the Redlock masters, whose counters move
 *       together, agree on it instead of splitting their claims among several waiters. The claim key joins the first {@code EXISTS}, so the usual
 *       case still costs one command to tell. With FIFO fairness a waiter's attempt queues its owner instead: a
 *       sorted set of the waiting owners in order of arrival, and beside it a sorted set of the server time
 *       ({@code TIME}) at which each stops counting as waiting unless it looks again; every attempt that finds a
 *       queue first drops the owners whose time has passed, so a waiter that died holds up the others for at most
 *       its own time, whatever the number of dead waiters (they lapse side by side, not one after another), and
 *       a free lock goes only to the head of the queue. Attempts that do not queue (bounded fairness) respect the
 *       queue too, so providers of both kinds on one lock never pass a queued waiter. The queue key joins the
 *       first {@code EXISTS}, and {@code TIME} is read only when a queue exists. A take-over (the next run of the
 *       same provider, to which its holder handed the lock) also counts the lock free where the hash holds exactly
 *       the previous run's attempt, and a grant replaces that hold: one call instead of a release and an
 *       acquisition, under the same claim and queue rules. Since the lock never came free, a take-over granted while
 *       no claim lives publishes a wake-up, so that the other providers' waiters look again and claim.</li>
 *   <li>{@link #RELEASE}: deletes the hash only if it holds this owner's attempt, then publishes a wake-up.
 *       Retried after a lost answer, it finds the attempt gone and changes nothing, so it can never free a hold
 *       that another owner, or a later attempt of the same owner, took meanwhile. A run that holds nothing
 *       (abandoned, or its attempt failed) gives up its claim and its place in the queue the same way.</li>
 *   <li>{@link #RENEW}: extends each hash of the batch that still holds the attempt of the owner given for it
 *       (each name has its own owner id) and names those that do not (expired, deleted, or flushed): one server
 *       call for the whole batch.</li>
 *   <li>{@link #CANCEL}: undoes an acquisition whose answer was lost, whether it ran before or runs after, and
 *       leaves a newer attempt's hold alone.</li>
 *   <li>{@link #INSPECT}: reads the holder, the remaining lease and the fencing counter in one step, so the three
 *       describe the same moment: while a hold exists the counter is its token, since an acquisition increments
 *       the counter only together with writing its hold; when the lock is free it is the last token issued.</li>
 *   <li>{@link #READ_ACQUIRE} and {@link #READ_RELEASE}: read holds of a read-write lock. They turn the lock hash
 *       into a reader hash: a {@code ~r} mark, one field per reader (owner → attempt, as for a writer) with its own
 *       lease end by the server's clock ({@code ~e:<owner>}), and {@code ~w} naming the writer whose thread
 *       downgraded. The hash lives as long as its longest lease; the scripts drop holds whose lease ended whenever
 *       they touch it. A writer's {@link #ACQUIRE} needs no change: any hash means busy. {@link #RENEW} extends a
 *       reader's own lease end and never shortens the hash, and {@link #CANCEL} removes only the cancelled reader's
 *       fields.</li>
 *   <li>{@link #FORCE_RELEASE}: deletes the hash whoever holds it and publishes a wake-up. Its holder finds its
 *       attempt gone at its next renewal or release, exactly as after an expiry.</li>
 * </ul>
 *
 * <p>The scripts that free a lock publish the wake-up on the lock's channel with {@code PUBLISH}, or with
 * {@code SPUBLISH} when told {@link #SHARDED} (a Redis 7+ cluster). The channel shares the lock's hash tag, so
 * it hashes to the lock's slot and the script may publish on it from the node that runs it; a sharded message
 * stays on that node (and its replicas) instead of being broadcast to the whole cluster.
 *
 * <p>The hash does not record when a hold began: reading the server's clock ({@code TIME}) in {@link #ACQUIRE}
 * would make every acquisition slower (and need one more ACL permission) for the sake of an operator's view.
 */
public final class RedisScripts {

    /** The last argument that makes a script publish its wake-up with {@code SPUBLISH}. */
    public static final String SHARDED = "sharded";

    /** The wake-up message of a release that names no claimant: every waiter may look. */
    public static final String RELEASED = "released";

    /** The argument that lets {@link #ACQUIRE} claim the next turn for a waiter it answers busy. */
    public static final String CLAIM = "claim";

    /** The argument that lets {@link #ACQUIRE} queue a waiter it answers busy (FIFO fairness). */
    public static final String QUEUE = "queue";

    /**
     * How many grants a claim lets pass after it is made, however old its claimant's ticket: the holder's process
     * hands the lock to its own waiting threads that many times before the turn crosses to the claimant's. Three
     * (a turn of about four grants) measured, with four processes of two threads, Redis +6 % and Redlock +22 %
     * handoffs/s against one, with the longest wait still within 13× the median (docs/benchmarks.md).
     */
    public static final int GRANTS_SINCE_A_CLAIM = 3;

    /**
     * KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] cancelled attempts, KEYS[4] claim to the next turn,
     * KEYS[5] FIFO queue, KEYS[6] its deadlines; ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] attempt id (a decimal
     * number, greater than the owner's earlier attempts), ARGV[4] {@link #CLAIM} if a busy answer should claim the
     * next turn, {@link #QUEUE} if it should queue the owner (FIFO fairness), or absent; ARGV[5] with
     * {@link #QUEUE}: how long in ms the owner stays queued unless it looks again; with {@link #CLAIM}: the run's
     * ticket, the fencing counter when it was first answered busy here (empty until it knows it); ARGV[6] and ARGV[7]
     * (a take-over, see {@link io.locksmith.spi.LockStore#takeOver}): the owner and attempt of an exclusive hold of
     * the same provider that counts as free, and that a grant replaces (both empty: none); then ARGV[8] the lock's
     * channel and ARGV[9] {@link #SHARDED} or empty: a take-over granted while no claim lives publishes a wake-up
     * there, since the lock never came free and the other providers' waiters, asleep until a release, must look again
     * to claim the next turn; and so does the grant to a claimant, which ends its claim: the releases until then
     * named the claimant and woke nobody else. A take-over refused (a claim or the queue has the turn) deletes the
     * previous hold and publishes as {@link #RELEASE} does, in the same step. Returns the new
     * fencing token (&gt; 0), or this attempt's token if it holds the lock already; when busy, the negated
     * remaining lease in ms (&lt; 0), or 0 if that is unknown (the holder's hash has no expiry) or the attempt was
     * cancelled; when busy and queued, a one-element array of the remaining lease in ms (0 if unknown); when busy
     * and claiming, a three-element array: 1 if the owner holds the claim now, else 0; the remaining lease in ms
     * (0 if unknown); the run's ticket.
     */
    public static final Script ACQUIRE = new Script("acquire", """
            local free = redis.call('exists', KEYS[1], KEYS[3], KEYS[4], KEYS[5]) == 0
            local refused = false
            local handed = false
            local now = nil
            local headDeadline = nil
            if not free then
              if redis.call('sismember', KEYS[3], ARGV[1] .. ':' .. ARGV[3]) == 1 then
                return 0
              end
              local held = redis.call('hget', KEYS[1], ARGV[1])
              if held == ARGV[3] then
                redis.call('pexpire', KEYS[1], ARGV[2])
                return tonumber(redis.call('get', KEYS[2]))
              end
              handed = ARGV[6] ~= nil and ARGV[6] ~= '' and redis.call('hlen', KEYS[1]) == 1
                and redis.call('hget', KEYS[1], ARGV[6]) == ARGV[7]
              free = handed or redis.call('exists', KEYS[1]) == 0
                or (held and (tonumber(held) or math.huge) < tonumber(ARGV[3]))
              if redis.call('exists', KEYS[5]) == 1 then
                local t = redis.call('time')
                now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            $QUEUE_HEAD
                if free and head and head ~= ARGV[1] then
                  free = false
                  headDeadline = tonumber(redis.call('zscore', KEYS[6], head))
                end
              end
              if free then
                local claimant = redis.call('hget', KEYS[4], 'owner')
                if claimant == ARGV[1] then
                  redis.call('del', KEYS[4])
                  if ARGV[8] then
                    redis.call(ARGV[9] == 'sharded' and 'spublish' or 'publish', ARGV[8], 'released')
                  end
                elseif claimant and tonumber(redis.call('get', KEYS[2]) or '0')
                    - math.max(tonumber(redis.call('hget', KEYS[4], 'at')),
                      (tonumber(redis.call('hget', KEYS[4], 'since')) or 0) - $GRANTS + $SINCE) >= $GRANTS
                    and not ($OLDER) then
                  free = false
                  refused = true
                end
              end
            end
            if free then
              local token = redis.call('incr', KEYS[2])
              if handed then
                redis.call('del', KEYS[1])
                if redis.call('exists', KEYS[4]) == 0 then
                  redis.call(ARGV[9] == 'sharded' and 'spublish' or 'publish', ARGV[8], 'released')
                end
              end
              redis.call('hset', KEYS[1], ARGV[1], ARGV[3])
              redis.call('pexpire', KEYS[1], ARGV[2])
              if now then
                redis.call('zrem', KEYS[5], ARGV[1])
                redis.call('zrem', KEYS[6], ARGV[1])
              end
              return token
            end
            if handed then
              -- a refused take-over: the previous hold goes now, as its release would, and the turn passes
              redis.call('del', KEYS[1])
              redis.call(ARGV[9] == 'sharded' and 'spublish' or 'publish', ARGV[8],
                redis.call('hget', KEYS[4], 'owner') or 'released')
            end
            local ttl
            if headDeadline then
              ttl = headDeadline - now
            else
              ttl = redis.call('pttl', refused and KEYS[4] or KEYS[1])
            end
            if ARGV[4] == 'queue' then
              if not now then
                local t = redis.call('time')
                now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
              end
            $QUEUE_JOIN
            end
            if ARGV[4] == 'claim' then
            $CLAIM
            end
            if ttl < 0 then
              return 0
            end
            return -math.max(ttl, 1)
            """.replace("$GRANTS", Integer.toString(LockStore.GRANTS_PAST_A_CLAIM)).replace("$OLDER", Lua.OLDER)
            .replace("$SINCE", Integer.toString(GRANTS_SINCE_A_CLAIM)).replace("$QUEUE_HEAD", Lua.QUEUE_HEAD)
            .replace("$QUEUE_JOIN", Lua.QUEUE_JOIN)
            .replace("$CLAIM", Lua.claim(false)));

    /**
     * The same KEYS as {@link #ACQUIRE}; ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] attempt id, ARGV[4]
     * {@link #CLAIM}, {@link #QUEUE} or empty, ARGV[5] as for {@link #ACQUIRE} or empty, ARGV[6] the owner of the
     * caller's own write hold (a downgrade) or empty. Takes a read hold: granted unless another owner writes, or
     * (but for a downgrade) another run waits ahead in the FIFO queue, or a writer's run has claimed the next turn.
     * Returns {token of the latest write (0 if none), 1} when granted; a busy answer as {@link #ACQUIRE}'s.
     */
    public static final Script READ_ACQUIRE = new Script("read-acquire", """
            if redis.call('sismember', KEYS[3], ARGV[1] .. ':' .. ARGV[3]) == 1 then
              return 0
            end
            local t = redis.call('time')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local lease = tonumber(ARGV[2])
            local writer
            if redis.call('hget', KEYS[1], '~r') then
            $PRUNE
              writer = redis.call('hget', KEYS[1], '~w')
            else
              writer = redis.call('hkeys', KEYS[1])[1] or false
            end
            local ttl = -1
            local claimant = redis.call('hget', KEYS[4], 'owner')
            local downgrade = writer and writer == ARGV[6]
            if writer and not downgrade then
              ttl = math.max(redis.call('pttl', KEYS[1]), 0)
            elseif not downgrade then
              if redis.call('exists', KEYS[5]) == 1 then
            $QUEUE_HEAD
                if head and head ~= ARGV[1] then
                  ttl = math.max(tonumber(redis.call('zscore', KEYS[6], head)) - now, 0)
                end
              end
              if ttl < 0 and claimant and claimant ~= ARGV[1] and redis.call('hget', KEYS[4], 'shared') ~= '1'
                  and not ($OLDER) then
                ttl = math.max(redis.call('pttl', KEYS[4]), 0)
              end
            end
            if ttl < 0 then
              if claimant == ARGV[1] then
                redis.call('del', KEYS[4])
              end
              if redis.call('exists', KEYS[5]) == 1 and redis.call('zrem', KEYS[5], ARGV[1]) == 1 then
                redis.call('zrem', KEYS[6], ARGV[1])
              end
              local left = redis.call('pttl', KEYS[1])
              if downgrade and not redis.call('hget', KEYS[1], '~r') then
                redis.call('hset', KEYS[1], '~w', writer, '~e:' .. writer, now + math.max(left, 0))
              end
              redis.call('hset', KEYS[1], '~r', '1', ARGV[1], ARGV[3], '~e:' .. ARGV[1], now + lease)
              if left < lease then
                redis.call('pexpire', KEYS[1], lease)
              end
              return {tonumber(redis.call('get', KEYS[2]) or '0'), 1}
            end
            if ARGV[4] == 'queue' then
            $QUEUE_JOIN
            end
            if ARGV[4] == 'claim' then
            $CLAIM
            end
            return -math.max(ttl, 1)
            """.replace("$PRUNE", Lua.PRUNE_READERS).replace("$OLDER", Lua.OLDER)
            .replace("$QUEUE_HEAD", Lua.QUEUE_HEAD).replace("$QUEUE_JOIN", Lua.QUEUE_JOIN)
            .replace("$CLAIM", Lua.claim(true)));

    /**
     * KEYS[1] lock hash, KEYS[2] claim to the next turn, KEYS[3] FIFO queue, KEYS[4] its deadlines; ARGV[1] owner,
     * ARGV[2] attempt id (empty: any attempt of the owner), ARGV[3] wake-up channel, ARGV[4] {@link #SHARDED} or
     * absent. Returns 1 if released, 0 if that attempt did not hold the lock; in that case the owner's claim, if it
     * has one, ends (a holder has none: its grant ended it), and so does its place in the queue, with a wake-up if
     * the lock is free, so that the next in line looks again. The wake-up of a release names the owner of the claim
     * to the next turn while one lives, else says {@link #RELEASED}: until the claimant's grant, which ends the
     * claim, the lock is the claimant's whenever the claim is due, so the other waiters would look only to be
     * refused. They look again on the next wake-up that names nobody (the claimant's grant publishes one, and so does
     * a take-over granted while no claim lives), or within {@link RedisLockStore#UNCLAIMED_RECHECK}, in case the
     * claimant died.
     */
    public static final Script RELEASE = new Script("release", """
            local held = redis.call('hget', KEYS[1], ARGV[1])
            if not held or (ARGV[2] ~= '' and held ~= ARGV[2]) then
            $NOT_HELD
            end
            redis.call('del', KEYS[1])
            redis.call(ARGV[4] == 'sharded' and 'spublish' or 'publish', ARGV[3],
              KEYS[2] and redis.call('hget', KEYS[2], 'owner') or 'released')
            return 1
            """.replace("$NOT_HELD", Lua.NOT_HELD));

    /**
     * The same KEYS and ARGV as {@link #RELEASE}, for a read hold or a write hold under which read holds were taken
     * (a downgrade): deletes only the owner's own fields of a hash that has readers, frees the lock (with a wake-up)
     * when no live hold is left, and otherwise keeps the hash as long as the longest remaining lease; the release of
     * the write hold of such a hash wakes the readers that waited for it. A hash without readers goes as with
     * {@link #RELEASE}.
     */
    public static final Script READ_RELEASE = new Script("read-release", """
            local held = redis.call('hget', KEYS[1], ARGV[1])
            if not held or (ARGV[2] ~= '' and held ~= ARGV[2]) then
            $NOT_HELD
            end
            if not redis.call('hget', KEYS[1], '~r') then
              redis.call('del', KEYS[1])
              redis.call(ARGV[4] == 'sharded' and 'spublish' or 'publish', ARGV[3], 'released')
              return 1
            end
            local wrote = redis.call('hget', KEYS[1], '~w') == ARGV[1]
            redis.call('hdel', KEYS[1], ARGV[1], '~e:' .. ARGV[1])
            if wrote then
              redis.call('hdel', KEYS[1], '~w')
            end
            local t = redis.call('time')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            $PRUNE
            if last == 0 then
              redis.call('del', KEYS[1])
              redis.call(ARGV[4] == 'sharded' and 'spublish' or 'publish', ARGV[3], 'released')
              return 1
            end
            redis.call('pexpire', KEYS[1], math.max(last - now, 1))
            if wrote then
              redis.call(ARGV[4] == 'sharded' and 'spublish' or 'publish', ARGV[3], 'released')
            end
            return 1
            """.replace("$NOT_HELD", Lua.NOT_HELD).replace("$PRUNE", Lua.PRUNE_READERS));

    /**
     * KEYS: lock hashes; ARGV[1] lease in ms, ARGV[2i] the owner of KEYS[i] and ARGV[2i + 1] its attempt id (empty:
     * any attempt of that owner). Returns the 1-based positions in KEYS of the hashes that no longer hold them.
     */
    public static final Script RENEW = new Script("renew", """
            local gone = {}
            local now = nil
            for i, key in ipairs(KEYS) do
              local attempt = ARGV[2 * i + 1]
              local held = redis.call('hget', key, ARGV[2 * i])
              if held and (attempt == '' or held == attempt) then
                local expiry = '~e:' .. ARGV[2 * i]
                if redis.call('hget', key, expiry) then
                  if not now then
                    local t = redis.call('time')
                    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
                  end
                  redis.call('hset', key, expiry, now + tonumber(ARGV[1]))
                  if redis.call('pttl', key) < tonumber(ARGV[1]) then
                    redis.call('pexpire', key, ARGV[1])
                  end
                else
                  redis.call('pexpire', key, ARGV[1])
                end
              else
                gone[#gone + 1] = i
              end
            end
            return gone
            """);

    /**
     * KEYS[1] lock hash, KEYS[2] cancelled attempts; ARGV[1] owner, ARGV[2] attempt id, ARGV[3] how long to
     * remember the cancellation in ms, ARGV[4] wake-up channel, ARGV[5] {@link #SHARDED} or absent. Returns 1 if
     * the attempt held the lock and was released, 0 if it is now remembered as cancelled.
     */
    public static final Script CANCEL = new Script("cancel", """
            if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then
              if redis.call('hget', KEYS[1], '~r') then
                redis.call('hdel', KEYS[1], ARGV[1], '~e:' .. ARGV[1])
                if redis.call('hget', KEYS[1], '~w') == ARGV[1] then
                  redis.call('hdel', KEYS[1], '~w')
                end
                if redis.call('hlen', KEYS[1]) > 1 then
                  return 1
                end
              end
              redis.call('del', KEYS[1])
              redis.call(ARGV[5] == 'sharded' and 'spublish' or 'publish', ARGV[4], 'released')
              return 1
            end
            redis.call('sadd', KEYS[2], ARGV[1] .. ':' .. ARGV[2])
            redis.call('pexpire', KEYS[2], ARGV[3])
            return 0
            """);

    /**
     * KEYS[1] lock hash, KEYS[2] fencing counter. Returns {owner or nil, remaining lease in ms (PTTL: -2 if there
     * is no hash, -1 if it has no expiry), fencing counter or nil}.
     */
    public static final Script INSPECT = new Script("inspect", """
            local owner = redis.call('hkeys', KEYS[1])[1] or false
            if redis.call('hget', KEYS[1], '~r') then
              local readers = {}
              local writer = redis.call('hget', KEYS[1], '~w')
              for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
                if string.sub(field, 1, 1) ~= '~' and field ~= writer then
                  readers[#readers + 1] = field
                end
              end
              table.sort(readers)
              owner = (writer and writer .. ' (writing), ' or '') .. 'readers ' .. table.concat(readers, ', ')
            end
            return {owner, redis.call('pttl', KEYS[1]), redis.call('get', KEYS[2])}
            """);

    /**
     * KEYS[1] lock hash; ARGV[1] wake-up channel, ARGV[2] {@link #SHARDED} or absent. Returns 1 if a hold was
     * deleted, 0 if the lock was free. Publishes the wake-up either way: a needless one costs a waiter one
     * attempt, a missed one its wait until the lease it was told of ends.
     */
    public static final Script FORCE_RELEASE = new Script("force-release", """
            local deleted = redis.call('del', KEYS[1])
            redis.call(ARGV[2] == 'sharded' and 'spublish' or 'publish', ARGV[1], 'released')
            return deleted
            """);

    private RedisScripts() {
    }

    /** Lua shared by several scripts, spliced into their text. */
    private static final class Lua {

        /**
         * The branch of a release whose attempt does not hold the lock: the owner's claim, if it has one, ends, and
         * so does its place in the queue, either with a wake-up if the lock is free, so that the next in line (or
         * the waiters the claim kept from the free lock) look again.
         */
        static final String NOT_HELD = """
                  if KEYS[2] and redis.call('hget', KEYS[2], 'owner') == ARGV[1] then
                    redis.call('del', KEYS[2])
                    if redis.call('exists', KEYS[1]) == 0 then
                      -- waiters refused a free lock for the claim's sake would otherwise sleep out its life
                      redis.call(ARGV[4] == 'sharded' and 'spublish' or 'publish', ARGV[3], 'released')
                    end
                  end
                  if KEYS[3] and redis.call('exists', KEYS[3]) == 1 and redis.call('zrem', KEYS[3], ARGV[1]) == 1 then
                    redis.call('zrem', KEYS[4], ARGV[1])
                    if redis.call('exists', KEYS[1]) == 0 then
                      redis.call(ARGV[4] == 'sharded' and 'spublish' or 'publish', ARGV[3], 'released')
                    end
                  end
                  return 0""";

        /**
         * Drops from a hash with readers (KEYS[1], at server time {@code now} in ms) every hold whose lease
         * ({@code ~e:<owner>}) has passed, and the writer mark of a writer so dropped; leaves in {@code last} the
         * latest lease end of the holds left (0 if none).
         */
        static final String PRUNE_READERS = """
                  local last = 0
                  local fields = redis.call('hgetall', KEYS[1])
                  for i = 1, #fields, 2 do
                    local f = fields[i]
                    if string.sub(f, 1, 3) == '~e:' then
                      local ends = tonumber(fields[i + 1])
                      if ends <= now then
                        local gone = string.sub(f, 4)
                        redis.call('hdel', KEYS[1], f, gone)
                        if redis.call('hget', KEYS[1], '~w') == gone then
                          redis.call('hdel', KEYS[1], '~w')
                        end
                      elseif ends > last then
                        last = ends
                      end
                    end
                  end""";

        /**
         * Drops from the FIFO queue (KEYS[5], deadlines KEYS[6]) the waiters whose time has passed at {@code now},
         * and leaves its first waiter in {@code head} (nil if none).
         */
        static final String QUEUE_HEAD = """
                  local lapsed = redis.call('zrangebyscore', KEYS[6], '-inf', now)
                  if #lapsed > 0 then
                    redis.call('zrem', KEYS[5], unpack(lapsed))
                    redis.call('zremrangebyscore', KEYS[6], '-inf', now)
                  end
                  local head = redis.call('zrange', KEYS[5], 0, 0)[1]""";

        /**
         * Queues the owner (ARGV[1]) at the end of the FIFO queue unless it is queued already, gives it ARGV[5] ms
         * from {@code now} to look again, and answers busy and queued with the remaining wait {@code ttl}.
         */
        static final String QUEUE_JOIN = """
                  if not redis.call('zscore', KEYS[5], ARGV[1]) then
                    local last = redis.call('zrange', KEYS[5], -1, -1, 'withscores')
                    redis.call('zadd', KEYS[5], (tonumber(last[2]) or 0) + 1, ARGV[1])
                  end
                  redis.call('zadd', KEYS[6], now + tonumber(ARGV[5]), ARGV[1])
                  if redis.call('pttl', KEYS[5]) < tonumber(ARGV[5]) then
                    redis.call('pexpire', KEYS[5], ARGV[5])
                    redis.call('pexpire', KEYS[6], ARGV[5])
                  end
                  return {math.max(ttl, 0)}""";

        /**
         * Whether the caller claims (ARGV[4]) with a ticket (ARGV[5]) older than the live claim's (KEYS[4]): the
         * claim's turn, when it comes, is then the caller's, whose claim would take its place. A free lock refused to
         * everyone but the claimant goes to such a caller at once: were it refused, it would take the claim and be
         * answered the claim's remaining life, with nobody holding the lock to wake it sooner (a Redlock waiter
         * whose claims a split vote had ended slept a third of its lease this way).
         */
        static final String OLDER = "ARGV[4] == 'claim' and tonumber(ARGV[5]) ~= nil"
                + " and tonumber(ARGV[5]) < (tonumber(redis.call('hget', KEYS[4], 'at')) or 0)";

        /**
         * Claims the next turn (KEYS[4]) for the owner with its ticket ARGV[5] (see {@link #ACQUIRE}), marked as a
         * reader's claim if {@code shared} (readers do not pass a writer's claim), and answers busy with the claim
         * and the remaining wait {@code ttl}.
         */
        static String claim(boolean shared) {
            return """
                  local ticket = ARGV[5]
                  if not tonumber(ticket) then
                    ticket = redis.call('get', KEYS[2]) or '0'
                  end
                  local claimant = redis.call('hget', KEYS[4], 'owner')
                  if not claimant or (claimant ~= ARGV[1]
                      and (tonumber(redis.call('hget', KEYS[4], 'at')) or 0) > tonumber(ticket)) then
                    redis.call('hset', KEYS[4], 'owner', ARGV[1], 'at', ticket, 'shared', '$SHARED', 'since',
                      redis.call('get', KEYS[2]) or '0')
                    claimant = ARGV[1]
                  end
                  if claimant == ARGV[1] then
                    redis.call('pexpire', KEYS[4], ARGV[2])
                  end
                  return {claimant == ARGV[1] and 1 or 0, math.max(ttl, 0), tonumber(ticket)}"""
                    .replace("$SHARED", shared ? "1" : "0");
        }

        private Lua() {
        }
    }

    /** A script's text and the SHA-1 Redis caches it under. */
    public static final class Script {
        private final String name;
        private final String text;
        private final String sha;
        private final byte[] shaBytes;

        private Script(String name, String text) {
            this.name = name;
            this.text = text;
            this.sha = sha1(text);
            this.shaBytes = sha.getBytes(StandardCharsets.US_ASCII);
        }

        /** The script's name for messages, such as {@code acquire}. */
        public String name() {
            return name;
        }

        /** The Lua source, as {@code SCRIPT LOAD} takes it. */
        public String text() {
            return text;
        }

        /** The SHA-1 of {@link #text}, in lower-case hex: what {@code EVALSHA} names. */
        public String sha() {
            return sha;
        }

        /** {@link #sha} as sent to the server; shared, so never to be modified. */
        public byte[] shaBytes() {
            return shaBytes;
        }

        @Override
        public String toString() {
            return name + " script " + sha;
        }

        private static String sha1(String text) {
            try {
                MessageDigest digest = MessageDigest.getInstance("SHA-1");
                return HexFormat.of().formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("SHA-1 is required of every Java platform", e);
            }
        }
    }
}
