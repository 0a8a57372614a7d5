package io.locksmith.redis.internal;

import java.net.ConnectException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.Pool;

/**
 * Script calls to one Redis server that are sent now and answered later, or answered at once, on connections
 * borrowed from a pooled client, with a few spare connections kept borrowed between calls. Unsupported internal
 * API: the Redis store's pipelined calls, which Redlock makes to all its servers at once from one thread, and its
 * acquisitions and releases.
 *
 * <p>This class only moves bytes: a call that fails shows its Jedis exception (a pipelined one when its answer is
 * read), and what that means (repeat it, cancel it) is for the store to say.
 */
public final class RedisPipeline {

    private static final Logger log = LoggerFactory.getLogger(RedisPipeline.class);
    private static final int SPARE_CONNECTIONS = 2;
    private static final int MIN_POOL_FOR_SPARES = 8;

    private final Pool<Connection> pool;
    /** Pooled connections kept borrowed between calls (see {@link #takeConnection}); a slot is null when empty. */
    private final AtomicReferenceArray<Connection> spare;
    private volatile boolean closed;

    private RedisPipeline(Pool<Connection> pool) {
        this.pool = pool;
        // A small pool keeps its connections for the calls that cannot be pipelined (renewals, checks).
        int maxTotal = pool.getMaxTotal();
        this.spare = new AtomicReferenceArray<>(maxTotal < 0 || maxTotal >= MIN_POOL_FOR_SPARES
                ? SPARE_CONNECTIONS : 0);
    }

    /**
     * Pipelined calls over the connection pool of {@code jedis}, a {@code RedisClient}, or null for any other
     * client (one over a connection provider of its own, or Jedis 7's {@code JedisPooled}, which Jedis 8 removed).
     */
    public static RedisPipeline over(UnifiedJedis jedis) {
        Pool<Connection> pool = poolOf(jedis);
        return pool == null ? null : new RedisPipeline(pool);
    }

    private static Pool<Connection> poolOf(UnifiedJedis jedis) {
        try {
            if (jedis instanceof RedisClient client) {
                return client.getPool();
            }
        } catch (ClassCastException notPooled) {
            // a client over a connection provider of its own: calls are not pipelined
        }
        return null;
    }

    /**
     * Runs {@code EVALSHA} of {@code script} now and returns its raw answer, as the client's own {@code evalsha}
     * would, on a spare connection when one is free (see {@link #takeConnection}).
     *
     * @throws JedisConnectionException if the connection failed (it is dropped, and the spares go back to the
     *     pool: they are likely as stale)
     * @throws JedisException if the server answered with an error, or no connection could be had: nothing ran
     */
    public Object call(RedisScripts.Script script, List<byte[]> keys, List<byte[]> args) {
        return execute(new CommandObject<>(evalsha(script, keys, args), BuilderFactory.RAW_OBJECT));
    }

    /**
     * Loads {@code script} into the server ({@code SCRIPT LOAD}) on a spare connection when one is free, after a
     * {@link #call} the server answered with {@code NOSCRIPT}; fails as {@link #call}.
     */
    public void load(RedisScripts.Script script) {
        execute(new CommandObject<>(new CommandArguments(Protocol.Command.SCRIPT).add(Protocol.Keyword.LOAD)
                .add(script.text()), BuilderFactory.STRING));
    }

    private <T> T execute(CommandObject<T> command) {
        Connection connection = takeConnection();
        try {
            return connection.executeCommand(command);
        } catch (JedisConnectionException e) {
            returnSpareConnections();
            throw e;
        } finally {
            giveBack(connection);
        }
    }

    /** Sends {@code EVALSHA} of {@code script} on a connection of its own; never throws. */
    public Call send(RedisScripts.Script script, List<byte[]> keys, List<byte[]> args) {
        CommandArguments command = evalsha(script, keys, args);
        Call call = new Call();
        try {
            call.connection = takeConnection();
        } catch (JedisException e) {
            call.failure = e; // no connection could be had: nothing was sent
            return call;
        }
        try {
            call.connection.sendCommand(command);
            call.connection.getMany(0); // flushes, reads nothing
            call.maybeSent = true;
        } catch (JedisConnectionException e) {
            call.failure = e;
            call.maybeSent = !causedBy(e, ConnectException.class);
            closeQuietly(call.connection);
            call.connection = null;
        }
        return call;
    }

    /**
     * The arguments of {@code EVALSHA} as {@code CommandObjects} builds them, without its bookkeeping of keys for
     * routing: every call goes to the one server of this pipeline.
     */
    private static CommandArguments evalsha(RedisScripts.Script script, List<byte[]> keys, List<byte[]> args) {
        CommandArguments command = new CommandArguments(Protocol.Command.EVALSHA).add(script.shaBytes())
                .add(keys.size());
        for (byte[] key : keys) {
            command.add(key);
        }
        for (byte[] arg : args) {
            command.add(arg);
        }
        return command;
    }

    /*
     * Spare connections: a pipelined call borrows a connection from the client's pool and gives it back once its
     * answer is read, ten times per Redlock cycle over five masters. The pool's bookkeeping on each borrow and
     * return (a lock, several clock reads for its statistics) was the largest share of the client's own work in a
     * round, and the largest beside the socket in a single server's lock cycle (two calls, made by {@link #call}),
     * so a few healthy connections stay borrowed between calls and are taken from here first. A broken
     * connection is never kept; a failure on any connection gives the spares back to the pool (where the owner's
     * failure handling drops the idle ones), and so does closing. Two are kept, none from a pool of fewer than
     * eight connections.
     */

    /** A spare connection if there is one, else one borrowed from the pool; give it back with {@link #giveBack}. */
    public Connection takeConnection() {
        for (int i = 0; i < spare.length(); i++) {
            if (spare.get(i) != null) {
                Connection c = spare.getAndSet(i, null);
                if (c != null) {
                    return c;
                }
            }
        }
        return pool.getResource();
    }

    /** Keeps a healthy connection as a spare if a slot is free; otherwise back to the pool (destroyed if broken). */
    public void giveBack(Connection connection) {
        if (!closed && !connection.isBroken()) {
            for (int i = 0; i < spare.length(); i++) {
                if (spare.compareAndSet(i, null, connection)) {
                    if (closed) {
                        returnSpareConnections(); // closed meanwhile: none may stay borrowed
                    }
                    return;
                }
            }
        }
        closeQuietly(connection);
    }

    /**
     * Gives {@code connection} back to its pool, never throwing. Returning a broken connection can fail: Jedis 8's
     * pool opens a replacement right there, which fails while the server is down or paused. Thrown from where a
     * call's connection is given back, that failure hid the call's own (a lost answer) and passed for a call that
     * never ran, so an acquisition the server ran later was not cancelled and its key outlived every client.
     */
    private static void closeQuietly(Connection connection) {
        try {
            connection.close();
        } catch (RuntimeException e) {
            log.debug("giving a connection back to the pool failed: {}", e.toString());
        }
    }

    /** Gives every spare connection back to the pool, and every one given back later. */
    public void close() {
        closed = true;
        returnSpareConnections();
    }

    /** Puts back a healthy connection's own socket timeout; one that fails here is broken and gets destroyed. */
    private static void restoreTimeout(Connection connection, int configured) {
        if (!connection.isBroken() && connection.getSoTimeout() != configured) {
            try {
                connection.setSoTimeout(configured);
            } catch (JedisConnectionException e) {
                // setSoTimeout marked it broken
            }
        }
    }

    /** Gives every spare connection back to the pool. */
    private void returnSpareConnections() {
        for (int i = 0; i < spare.length(); i++) {
            Connection c = spare.getAndSet(i, null);
            if (c != null) {
                closeQuietly(c);
            }
        }
    }

    /** Whether {@code e} or one of its causes is a {@code type}. */
    public static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
    }

    /** A script call on the wire and the connection its answer comes on; read by the thread that sent it. */
    public final class Call {
        private Connection connection;
        private JedisException failure;
        private boolean maybeSent;

        private Call() {
        }

        /** Whether the server may have got the call, although it failed. */
        public boolean maybeSent() {
            return maybeSent;
        }

        /**
         * Reads the answer, waiting until {@code deadline} ({@link System#nanoTime}) at the most, and gives the
         * connection back. A connection that failed gives the spare ones back to the pool too: they are likely
         * as stale.
         *
         * @throws JedisConnectionException if the connection failed or no answer came in time
         * @throws JedisException if the server answered with an error ({@code NOSCRIPT} among them), or no
         *     connection could be had from the pool: nothing ran
         */
        public Object read(long deadline) {
            if (connection != null) {
                // Jedis keeps the last timeout set as the connection's own, so the configured one is put back
                // before the connection is used again: a pooled connection left with a round's few milliseconds
                // would time out the client's ordinary calls (renewals, checks) later.
                int configured = connection.getSoTimeout();
                try {
                    long left = deadline - System.nanoTime();
                    connection.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE,
                            TimeUnit.NANOSECONDS.toMillis(left + 999_999))));
                    return BuilderFactory.AGGRESSIVE_ENCODED_OBJECT.build(connection.getOne());
                } catch (JedisConnectionException e) {
                    failure = e;
                } finally {
                    restoreTimeout(connection, configured);
                    giveBack(connection);
                    connection = null;
                }
            }
            if (failure instanceof JedisConnectionException) {
                returnSpareConnections();
            }
            throw failure;
        }
    }
}
