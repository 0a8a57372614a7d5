package io.locksmith.redis.internal;

import io.locksmith.LockOptions;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import redis.clients.jedis.UnifiedJedis;

/**
 * The Redis backend's lock store on one server, as a backend built on several Redis servers (Redlock) calls it:
 * each call names the exact round it acts on. A backend that takes one lock on several servers makes several
 * rounds in one run (one owner id), and what it sends for one round (the release after a failed round, in
 * particular to a server that has not answered yet) must never act on the hold of a later round of the same
 * run; so it numbers its rounds and names the round in every call. These calls keep nothing in the store: the
 * caller keeps its attempts. An acquisition whose answer was lost is cancelled by the store, by its attempt, as
 * with {@link LockStore#tryAcquire}.
 *
 * <p>Unsupported internal API: nothing here is a stable API; applications use
 * {@code io.locksmith.redis.RedisLockProviders} or a {@code redis://} URI instead.
 */
public interface RedisNodeStore extends AutoCloseable {

    /**
     * The Redis backend's store on one server over {@code client}, which it uses but never closes; its scripts are
     * not loaded yet (see {@link #loadScripts}), and it loads them by itself on first use if needed.
     *
     * @param onConnectionFailure run after a call failed on a broken connection
     */
    static RedisNodeStore open(UnifiedJedis client, String address, LockOptions options,
            Runnable onConnectionFailure) {
        return new RedisLockStore(client, address, options, onConnectionFailure, null);
    }

    /**
     * The pipelined form of {@code store}, or null if its client cannot pipeline (it has no connection pool to
     * borrow a connection from, or it is a cluster client).
     */
    static Pipelining pipelining(RedisNodeStore store) {
        return store instanceof Pipelining p && p.canPipeline() ? p : null;
    }

    /** Where the server is, without credentials, for messages. */
    String address();

    /** The value of semaphore {@code name}'s permit-count key ({@link RedisKeys#permits}), or null if it has none. */
    String permitRecord(String name);

    /** Sets semaphore {@code name}'s permit-count key to {@code record}, without expiry. */
    void setPermitRecord(String name, String record);

    /**
     * The record of a new acquisition run of {@code name} by {@code owner}; no I/O. It holds the run's keys and
     * owner id, which serve every node store of the same namespace, and what one server told the run (its ticket
     * there); the calls that take it name the round they act on through an {@link Attempt}. Redlock makes one per
     * run and a {@link #copyOf} of it for each further server.
     */
    Hold newHold(String name, String owner);

    /**
     * A record of the same run as {@code hold} for another server of the same namespace: the keys and owner id
     * encoded once are shared, what a server tells the run (its ticket, whose numbers are that server's counter)
     * is kept apart; no I/O.
     */
    default Hold copyOf(Hold hold) {
        return new RedisHold((RedisHold) hold);
    }

    /**
     * The record of a new <em>read</em> run of {@code name} by {@code owner}, as {@link LockStore#newSharedHold}:
     * every call that takes it (acquire, release, renew, pipelined or not) acts on the run's read hold only; a
     * {@code ownWrite} (a downgrade) is released from then on as one of the readers.
     */
    Hold newSharedHold(String name, String owner, Hold ownWrite);

    /** One attempt (no wait) for {@code attempt}, as {@link LockStore#tryAcquire}. */
    Acquisition tryAcquire(Attempt attempt, Duration lease);

    /**
     * Releases the hold of exactly {@code attempt}; any other hold is left alone.
     *
     * @return true if that attempt held the lock and it is now free
     */
    boolean release(Attempt attempt);

    /**
     * Extends the holds of exactly the attempts given, one call per hash slot.
     *
     * @return those of {@code attempts} (the same objects) that no longer hold their lock
     */
    Set<Attempt> renewAttempts(List<Attempt> attempts, Duration lease);

    /** Whether anybody holds {@code name} on this server. */
    boolean isLocked(String name);

    /** Wake-ups for {@code name} from this server, as {@link LockStore#subscribe}. */
    LockStore.Subscription subscribe(String name, Runnable onRelease);

    /**
     * Tells that the waiter whose callback ({@link #subscribe}) is {@code onRelease} now asks as {@code owner}: a
     * release that names another run's claim to the next turn does not run it. Nothing if it is not subscribed or
     * null.
     */
    void waitingAs(Runnable onRelease, String owner);

    /**
     * Loads the lock scripts into the server, which proves the server answers.
     *
     * @throws io.locksmith.LockBackendException if the server cannot be reached or refuses the scripts
     */
    void loadScripts();

    /** Releases the store's threads and connections (not the client it was given). */
    @Override
    void close();

    /**
     * A per-server store's record of one acquisition run, from {@link RedisNodeStore#newHold}: the lock's keys and
     * the run's owner id, prepared once for every call of the run. Every node store of the same namespace takes it.
     */
    interface Hold {
        /** The lock name. */
        String name();

        /** The owner id of the run. */
        String owner();
    }

    /**
     * One round of an acquisition run on one server: the run's hold there, a number the caller gives the round,
     * greater than every earlier round of that run, whether an acquisition answered busy claims the next turn
     * there (see {@link LockStore#tryAcquire}), and the round of another run of the same provider whose hold there
     * the acquisition takes over, or null (see {@link LockStore#takeOver}: where the server grants, the grant
     * replaces that hold; where it refuses, the hold is deleted, with the wake-up of a release).
     */
    record Attempt(Hold hold, long id, boolean claim, Attempt previous) {
        public Attempt {
            Objects.requireNonNull(hold, "hold");
            if (id <= 0) {
                throw new IllegalArgumentException("attempt ids are positive: " + id);
            }
        }

        /** A round that takes nothing over. */
        public Attempt(Hold hold, long id, boolean claim) {
            this(hold, id, claim, null);
        }

        /** A round that claims nothing. */
        public Attempt(Hold hold, long id) {
            this(hold, id, false, null);
        }
    }

    /**
     * A per-server store that can send a call now and read its answer later, so that one thread can have a call
     * on the wire to each of several servers at once and wait for all of them together: no thread handoff, and
     * the round lasts as long as the slowest server, not the sum. Each call behaves as the {@link RedisNodeStore}
     * method of the same name, with the same cancellation of an acquisition whose answer was lost, and the same
     * one repeat after a connection that broke at once.
     */
    interface Pipelining {
        /** Whether this store's client lets it pipeline. */
        boolean canPipeline();

        /** Sends {@link RedisNodeStore#tryAcquire}; never throws: a failure shows in the answer. */
        Pending<Acquisition> sendAcquire(Attempt attempt, Duration lease);

        /** Sends {@link RedisNodeStore#release}; never throws: a failure shows in the answer. */
        Pending<Boolean> sendRelease(Attempt attempt);
    }

    /** A call on the wire; its answer is read by the thread that sent it. */
    interface Pending<T> {
        /**
         * Reads the answer, waiting until {@code deadline} ({@link System#nanoTime}) at the most.
         *
         * @throws io.locksmith.LockBackendException if the call failed or no answer came in time
         */
        T await(long deadline);
    }
}
