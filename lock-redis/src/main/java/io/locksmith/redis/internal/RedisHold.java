package io.locksmith.redis.internal;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The Redis store's record of one acquisition run ({@link RedisLockStore#newHold}): the lock's keys and the
 * run's owner id, encoded once for every call of the run, and the id of the run's latest attempt, which its
 * release and renewals name. Unsupported internal API: only the store makes and reads it.
 */
public final class RedisHold implements RedisNodeStore.Hold {

    final String name;
    final String owner;
    /** The lock hash's key: the slot of a cluster call, the sample key of a script loaded again. */
    final String lock;
    final byte[] lockKey;
    final byte[] cancelledKey;
    final byte[] channel;
    final byte[] ownerArg;
    /**
     * KEYS of the acquire script: the lock hash, its fencing counter, its cancelled attempts, the claim to the next
     * turn, the FIFO queue and its deadlines.
     */
    final List<byte[]> acquireKeys;
    /** KEYS of the release script: the lock hash, the claim to the next turn, the FIFO queue and its deadlines. */
    final List<byte[]> releaseKeys;
    /**
     * The run's latest attempt through {@link RedisLockStore#tryAcquire}, 0 before the first; set before the
     * attempt is sent. The machinery makes a run's attempts one after another and releases or renews the run only
     * after its last attempt.
     */
    volatile long attempt;
    /**
     * The run's ticket on this server: the fencing counter when an attempt of the run was first answered busy, -1
     * until then (see {@link RedisScripts#ACQUIRE}). Written by the run's attempts, which never overlap.
     */
    volatile long ticket = -1;
    /** Whether the run takes a read hold ({@link RedisScripts#READ_ACQUIRE}). */
    final boolean shared;
    /** For a read run: the owner of the caller's own write hold, which does not keep it out (a downgrade), or empty. */
    final byte[] ownWriteArg;
    /**
     * Whether read holds may have been taken under this write hold (a downgrade), so that its release must leave
     * them in place ({@link RedisScripts#READ_RELEASE}).
     */
    volatile boolean downgraded;

    RedisHold(RedisKeys keys, String name, String owner) {
        this(keys, name, owner, false, null);
    }

    RedisHold(RedisKeys keys, String name, String owner, boolean shared, RedisHold ownWrite) {
        this.name = name;
        this.owner = owner;
        this.shared = shared;
        this.ownWriteArg = ownWrite == null ? new byte[0] : ownWrite.ownerArg;
        this.lock = keys.lock(name);
        this.lockKey = bytes(lock);
        this.cancelledKey = bytes(RedisKeys.cancelledOf(lock));
        this.channel = bytes(RedisKeys.channelOf(lock));
        this.ownerArg = bytes(owner);
        byte[] claimKey = bytes(RedisKeys.claimOf(lock));
        byte[] queueKey = bytes(RedisKeys.queueOf(lock));
        byte[] deadlinesKey = bytes(RedisKeys.queueDeadlinesOf(lock));
        this.acquireKeys = List.of(lockKey, bytes(RedisKeys.fenceOf(lock)), cancelledKey, claimKey, queueKey,
                deadlinesKey);
        this.releaseKeys = List.of(lockKey, claimKey, queueKey, deadlinesKey);
    }

    /**
     * The same run for another server: the encoded keys and arguments shared, the attempt, ticket and downgrade
     * of its own (see {@link RedisNodeStore#copyOf}).
     */
    RedisHold(RedisHold run) {
        this.name = run.name;
        this.owner = run.owner;
        this.shared = run.shared;
        this.ownWriteArg = run.ownWriteArg;
        this.lock = run.lock;
        this.lockKey = run.lockKey;
        this.cancelledKey = run.cancelledKey;
        this.channel = run.channel;
        this.ownerArg = run.ownerArg;
        this.acquireKeys = run.acquireKeys;
        this.releaseKeys = run.releaseKeys;
    }

    /** A script argument as Jedis sends a string: UTF-8. */
    static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String owner() {
        return owner;
    }

    @Override
    public String toString() {
        return "RedisHold{" + name + (shared ? " (read)" : "") + ", owner=" + owner + ", attempt=" + attempt + '}';
    }
}
