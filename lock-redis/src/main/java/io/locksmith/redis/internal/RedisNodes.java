package io.locksmith.redis.internal;

import io.locksmith.LockOptions;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import redis.clients.jedis.UnifiedJedis;

/**
 * Unsupported internal API: lock-redis's per-server lock store, URI parsing and key layout, for backends built
 * on several Redis servers (Redlock). Nothing here is a stable API; applications use
 * {@code io.locksmith.redis.RedisLockProviders} or a {@code redis://} URI instead.
 */
public final class RedisNodes {

    private static volatile Access access;

    private RedisNodes() {
    }

    /**
     * The pipelined form of a store from {@link #newStore}, or null if its client cannot pipeline (it has no
     * connection pool to borrow a connection from, or it is a cluster client).
     */
    public static Pipelining pipelining(NodeStore store) {
        return store instanceof Pipelining p && p.canPipeline() ? p : null;
    }

    /**
     * A per-server store's record of one acquisition run on its server, from {@link NodeStore#newHold}: the lock's
     * keys and the run's owner id, prepared once for every call of the run. Only the store that made it takes it.
     */
    public interface Hold {
        /** The lock name. */
        String name();

        /** The owner id of the run. */
        String owner();
    }

    /**
     * One round of an acquisition run on one server: the run's hold there and a number the caller gives the
     * round, greater than every earlier round of that run.
     */
    public record Attempt(Hold hold, long id) {
        public Attempt {
            Objects.requireNonNull(hold, "hold");
            if (id <= 0) {
                throw new IllegalArgumentException("attempt ids are positive: " + id);
            }
        }
    }

    /**
     * A per-server store from {@link #newStore} whose calls name the exact round they act on. A backend that
     * takes one lock on several servers makes several rounds in one run (one owner id), and what it sends for one
     * round (the release after a failed round, in particular to a server that has not answered yet) must never
     * act on the hold of a later round of the same run; so it numbers its rounds and names the round in every
     * call. These calls keep nothing in the store: the caller keeps its attempts. An acquisition whose answer was
     * lost is cancelled by the store, by its attempt, as with {@link LockStore#tryAcquire}.
     */
    public interface NodeStore extends AutoCloseable {
        /** Where the server is, without credentials, for messages. */
        String address();

        /** The record of a new acquisition run of {@code name} by {@code owner} on this server; no I/O. */
        Hold newHold(String name, String owner);

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

        /** Releases the store's threads and connections (not the client it was given). */
        @Override
        void close();
    }

    /**
     * A per-server store that can send a call now and read its answer later, so that one thread can have a call
     * on the wire to each of several servers at once and wait for all of them together: no thread handoff, and
     * the round lasts as long as the slowest server, not the sum. Each call behaves as the {@link NodeStore}
     * method of the same name, with the same cancellation of an acquisition whose answer was lost, and the same
     * one repeat after a connection that broke at once.
     */
    public interface Pipelining {
        /** Whether this store's client lets it pipeline. */
        boolean canPipeline();

        /** Sends {@link NodeStore#tryAcquire}; never throws: a failure shows in the answer. */
        Pending<Acquisition> sendAcquire(Attempt attempt, Duration lease);

        /** Sends {@link NodeStore#release}; never throws: a failure shows in the answer. */
        Pending<Boolean> sendRelease(Attempt attempt);
    }

    /** A call on the wire; its answer is read by the thread that sent it. */
    public interface Pending<T> {
        /**
         * Reads the answer, waiting until {@code deadline} ({@link System#nanoTime}) at the most.
         *
         * @throws io.locksmith.LockBackendException if the call failed or no answer came in time
         */
        T await(long deadline);
    }

    /** A parsed {@code redis://} or {@code rediss://} address of one server. */
    public record Address(boolean tls, String host, int port, int database, String user, String password) {

        /** The address for messages: scheme, host, port and database, never the credentials. */
        public String address() {
            String shownHost = host.indexOf(':') >= 0 ? '[' + host + ']' : host;
            return (tls ? "rediss" : "redis") + "://" + shownHost + ':' + port + '/' + database;
        }

        @Override
        public String toString() {
            return address();
        }
    }

    /**
     * Parses {@code redis://[[user]:password@]host[:port][/db]} or {@code rediss://…} exactly as the Redis backend
     * does.
     *
     * @throws IllegalArgumentException naming what is wrong, with the credentials hidden
     */
    public static Address parse(URI uri) {
        return access().parse(Objects.requireNonNull(uri, "uri"));
    }

    /**
     * The Redis backend's lock store on one server over {@code client}, which it uses but never closes; its
     * scripts are not loaded yet (see {@link #loadScripts}), and it loads them by itself on first use if needed.
     *
     * @param onConnectionFailure run after a call failed on a broken connection
     */
    public static NodeStore newStore(UnifiedJedis client, String address, LockOptions options,
            Runnable onConnectionFailure) {
        return access().newStore(client, address, options, onConnectionFailure);
    }

    /**
     * Loads the lock scripts into the server of a store from {@link #newStore}, which proves the server answers.
     *
     * @throws io.locksmith.LockBackendException if the server cannot be reached or refuses the scripts
     */
    public static void loadScripts(NodeStore store) {
        access().loadScripts(store);
    }

    /** The key of the lock hash of {@code name} in {@code namespace}. */
    public static String lockKey(String namespace, String name) {
        return access().lockKey(namespace, name);
    }

    /** The key of the fencing counter of {@code name} in {@code namespace}. */
    public static String fenceKey(String namespace, String name) {
        return access().fenceKey(namespace, name);
    }

    /** A {@code SCAN MATCH} pattern for every lock hash of {@code namespace}. */
    public static String lockPattern(String namespace) {
        return access().lockPattern(namespace);
    }

    /** The lock name whose hash is {@code key}, or null if it is not a lock hash of {@code namespace}. */
    public static String nameOfLock(String namespace, String key) {
        return access().nameOfLock(namespace, key);
    }

    /** What the Redis backend's package gives this class; implemented there, installed once. */
    public interface Access {
        /** See {@link RedisNodes#parse}. */
        Address parse(URI uri);

        /** See {@link RedisNodes#newStore}. */
        NodeStore newStore(UnifiedJedis client, String address, LockOptions options, Runnable onConnectionFailure);

        /** See {@link RedisNodes#loadScripts}. */
        void loadScripts(NodeStore store);

        /** See {@link RedisNodes#lockKey}. */
        String lockKey(String namespace, String name);

        /** See {@link RedisNodes#fenceKey}. */
        String fenceKey(String namespace, String name);

        /** See {@link RedisNodes#lockPattern}. */
        String lockPattern(String namespace);

        /** See {@link RedisNodes#nameOfLock}. */
        String nameOfLock(String namespace, String key);
    }

    /** Called once by the Redis backend's package when it initializes; nobody else may install an access. */
    public static void install(Access implementation) {
        if (!implementation.getClass().getName().equals("io.locksmith.redis.RedisNodeAccess")) {
            throw new IllegalArgumentException("only lock-redis installs its access");
        }
        access = implementation;
    }

    private static Access access() {
        Access current = access;
        if (current == null) {
            try {
                // initializing the class installs it
                Class.forName("io.locksmith.redis.RedisNodeAccess", true, RedisNodes.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("lock-redis is incomplete: " + e.getMessage(), e);
            }
            current = access;
        }
        return current;
    }
}
