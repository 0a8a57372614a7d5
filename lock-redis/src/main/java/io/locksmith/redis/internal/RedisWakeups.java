package io.locksmith.redis.internal;

import io.locksmith.spi.LockStore.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.Connection;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.JedisShardedPubSub;
import redis.clients.jedis.UnifiedJedis;

/**
 * One subscriber connection shared by every lock it serves: on a single server (and on a cluster older than
 * Redis 7) the provider's only one, over {@code SUBSCRIBE}; on a Redis 7+ cluster the one of a node, over
 * sharded pub/sub ({@code SSUBSCRIBE}), for the channels whose slots the node owns (see
 * {@link RedisShardedWakeups}). The first waiter of a lock subscribes its channel, the last one to leave
 * unsubscribes it, and the connection goes back to the client's pool when nobody waits at all.
 *
 * <p>One daemon thread runs the blocking subscription loop. Other threads change the set of channels by sending
 * {@code SUBSCRIBE}/{@code UNSUBSCRIBE} on the subscribed connection, always under {@link #lock} and only while
 * the loop runs ({@link State#RUNNING}); while it connects or stops they only change {@link #listeners}, and the
 * thread brings the server up to date when it gets there. So a command is never written to a connection that
 * has already gone back to the pool.
 *
 * <p>A subscription waits until the server confirms it (bounded by the operation timeout), so the waiter's
 * next attempt cannot miss a release published after that attempt; one the server confirms only after that bound
 * wakes the channel's listeners when it does, since an attempt made meanwhile may have missed a release. When the
 * connection breaks (server restarted, killed or dropping clients) every listener is woken, so that waiters find
 * out at once whether the server still answers; the thread reconnects with backoff, subscribes again to every
 * channel still wanted, and wakes every listener once more, since releases may have gone unheard meanwhile.
 * Messages that are missed anyway cost a waiter at most the holder's remaining lease: the machinery re-checks by
 * then.
 */
final class RedisWakeups implements RedisSubscriber {

    private static final Logger log = LoggerFactory.getLogger(RedisWakeups.class);
    private static final long MIN_RECONNECT_MILLIS = 50;
    private static final long MAX_RECONNECT_MILLIS = 2_000;

    private enum State { IDLE, CONNECTING, RUNNING, STOPPING, BACKOFF, CLOSED }

    private final String address;
    private final long confirmNanos;
    private final Link link;
    private final Runnable afterFailure;
    /**
     * Guards the state below and is held while a (un)subscribe is written to the running connection; a lock
     * rather than a monitor, so that a virtual thread blocked on it, or writing under it, does not pin its carrier.
     */
    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled on every change of state, listeners or confirmations. */
    private final Condition changed = lock.newCondition();
    private final Map<String, List<Consumer<String>>> listeners = new HashMap<>();
    /** Channels subscribed or being subscribed on the current connection. */
    private final Set<String> requested = new HashSet<>();
    /** Channels the server confirmed on the current connection. */
    private final Set<String> confirmed = new HashSet<>();
    /** Channels a subscriber stopped waiting for the server to confirm: their confirmation wakes their listeners. */
    private final Set<String> unconfirmed = new HashSet<>();
    private State state = State.IDLE;
    private Thread thread;
    private long failures;
    private boolean recovering;
    /** Whether the current connection got as far as a confirmed subscription. */
    private boolean reached;
    /** Whether an unsubscribe from every channel was sent on the current connection, which then ends. */
    private boolean ending;
    /** Whether the server dropped a channel still wanted (its slot moved to another node). */
    private boolean dropped;

    /** Pub/sub ({@code SUBSCRIBE}) on one connection of {@code jedis}'s pool. */
    RedisWakeups(UnifiedJedis jedis, String address, Duration operationTimeout) {
        this.address = address;
        this.confirmNanos = operationTimeout.toNanos();
        this.link = new Classic(jedis);
        this.afterFailure = () -> { };
    }

    /**
     * Sharded pub/sub ({@code SSUBSCRIBE}) on one cluster node.
     *
     * @param connect a connection to the node, given a channel it should own
     * @param afterFailure run on the loop's thread, outside the lock, after the connection failed or the server
     *     dropped a channel (its slot may have moved)
     */
    RedisWakeups(Function<String, Connection> connect, String address, Duration operationTimeout,
            Runnable afterFailure) {
        this.address = address;
        this.confirmNanos = operationTimeout.toNanos();
        this.link = new Sharded(connect);
        this.afterFailure = afterFailure;
    }

    @Override
    public Subscription subscribe(String channel, Consumer<String> onMessage) {
        lock.lock();
        try {
            if (state == State.CLOSED) {
                return () -> { };
            }
            awaitConfirmation(channel, add(channel, onMessage));
        } finally {
            lock.unlock();
        }
        return () -> remove(channel, onMessage);
    }

    /**
     * Starts calling {@code onMessage} on each message on {@code channel} without waiting for the server.
     *
     * @return the ticket to pass to {@link #awaitConfirmation}
     */
    long add(String channel, Consumer<String> onMessage) {
        lock.lock();
        try {
            if (state != State.CLOSED) {
                List<Consumer<String>> list = listeners.computeIfAbsent(channel, k -> new ArrayList<>(1));
                list.add(onMessage);
                if (list.size() == 1) {
                    if (state == State.RUNNING) {
                        requested.add(channel);
                        send(() -> link.join(channel));
                    } else if (state == State.IDLE) {
                        startLoop();
                    }
                }
            }
            return failures;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until the server confirms {@code channel}, the connection fails (after {@code ticket} from
     * {@link #add}), the channel is no longer wanted here, or time is up.
     */
    void awaitConfirmation(String channel, long ticket) {
        lock.lock();
        try {
            long deadline = System.nanoTime() + confirmNanos;
            while (!confirmed.contains(channel) && failures == ticket && state != State.BACKOFF
                    && state != State.CLOSED && listeners.containsKey(channel)) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    // the caller's next look may come before the server subscribes, and miss a release then:
                    // the confirmation, when it comes, wakes the channel's listeners
                    unconfirmed.add(channel);
                    log.debug("{}: subscription to {} not confirmed within {} ms; its listeners are woken when it is",
                            address, channel, TimeUnit.NANOSECONDS.toMillis(confirmNanos));
                    break;
                }
                try {
                    changed.awaitNanos(remaining);
                } catch (InterruptedException e) {
                    // lockInterruptibly() must react at once: stop waiting and let the machinery see the flag
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops calling {@code onMessage} for {@code channel}.
     *
     * @return whether nobody here listens to {@code channel} any more
     */
    boolean remove(String channel, Consumer<String> onMessage) {
        lock.lock();
        try {
            List<Consumer<String>> list = listeners.get(channel);
            if (list == null) {
                return true;
            }
            if (!list.remove(onMessage) || !list.isEmpty()) {
                return false;
            }
            drop(channel);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Takes every listener of {@code channel} off this connection, to move them to another one. */
    List<Consumer<String>> removeAll(String channel) {
        lock.lock();
        try {
            List<Consumer<String>> list = listeners.get(channel);
            if (list == null) {
                return List.of();
            }
            drop(channel);
            return list;
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: nobody listens to {@code channel} any more. */
    private void drop(String channel) {
        listeners.remove(channel);
        if (state == State.RUNNING) {
            if (listeners.isEmpty()) {
                stopRunning();
            } else {
                requested.remove(channel);
                confirmed.remove(channel);
                send(() -> link.leave(channel));
            }
        }
        changed.signalAll();
    }

    /** Under the lock, while running: unsubscribes everything, which ends the subscription loop. */
    private void stopRunning() {
        state = State.STOPPING;
        endConnection();
    }

    /** Under the lock: unsubscribes from every channel once, so the loop ends and the connection is clean. */
    private void endConnection() {
        if (!ending) {
            ending = true;
            send(link::leaveAll);
        }
    }

    /** Under the lock: the server confirmed a subscription, so the loop runs; catch up on changes meanwhile. */
    private boolean onConfirmed(String channel) {
        if (listeners.containsKey(channel)) {
            confirmed.add(channel);
        }
        boolean wakeAll = false;
        if (state == State.CONNECTING) {
            state = State.RUNNING;
            reached = true;
            wakeAll = recovering;
            recovering = false;
            if (listeners.isEmpty()) {
                stopRunning();
            } else {
                List<String> missing = new ArrayList<>();
                for (String wanted : listeners.keySet()) {
                    if (requested.add(wanted)) {
                        missing.add(wanted);
                    }
                }
                List<String> unwanted = new ArrayList<>();
                for (String had : requested) {
                    if (!listeners.containsKey(had)) {
                        unwanted.add(had);
                    }
                }
                requested.removeAll(unwanted);
                if (!missing.isEmpty()) {
                    send(() -> link.join(missing.toArray(String[]::new)));
                }
                if (!unwanted.isEmpty()) {
                    send(() -> link.leave(unwanted.toArray(String[]::new)));
                }
            }
        } else if (state == State.CLOSED) {
            endConnection();
        }
        changed.signalAll();
        return wakeAll;
    }

    private void startLoop() {
        if (thread == null) {
            thread = new Thread(this::loop, "locksmith-redis-wakeups");
            thread.setDaemon(true);
            thread.start();
        } else {
            changed.signalAll();
        }
    }

    private void loop() {
        long reconnectMillis = MIN_RECONNECT_MILLIS;
        while (true) {
            String[] channels;
            lock.lock();
            try {
                while (state != State.CLOSED && listeners.isEmpty()) {
                    state = State.IDLE;
                    recovering = false; // nobody waited through the outage
                    try {
                        changed.await();
                    } catch (InterruptedException e) {
                        // only close() interrupts; the state says what to do
                    }
                }
                if (state == State.CLOSED) {
                    return;
                }
                state = State.CONNECTING;
                reached = false;
                ending = false;
                dropped = false;
                requested.clear();
                confirmed.clear();
                if (link.oneSlotPerCommand()) {
                    // the others follow once the first is confirmed (see onConfirmed)
                    requested.add(listeners.keySet().iterator().next());
                } else {
                    requested.addAll(listeners.keySet());
                }
                channels = requested.toArray(String[]::new);
            } finally {
                lock.unlock();
            }
            RuntimeException failure = null;
            try {
                link.run(channels);
            } catch (RuntimeException e) {
                failure = e;
            }
            lock.lock();
            try {
                requested.clear();
                confirmed.clear();
                if (state == State.CLOSED) {
                    return;
                }
                if (reached) {
                    reconnectMillis = MIN_RECONNECT_MILLIS;
                }
                if (failure == null && state == State.STOPPING && !dropped) {
                    state = State.IDLE;
                    reconnectMillis = MIN_RECONNECT_MILLIS;
                    continue;
                }
                failures++;
                recovering = true;
                state = State.BACKOFF;
                changed.signalAll();
                log.warn("{}: wake-up subscription failed, reconnecting in {} ms: {}", address, reconnectMillis,
                        failure != null ? failure.getMessage()
                                : dropped ? "the server dropped a channel whose slot it gave away"
                                : "the server ended it");
            } finally {
                lock.unlock();
            }
            // Waiters look at the store now: a dead server fails their attempt instead of leaving them parked
            // until the holder's lease would have ended, and a live one may have released meanwhile.
            wakeAll();
            try {
                afterFailure.run();
            } catch (RuntimeException e) {
                log.warn("{}: rerouting wake-up channels failed", address, e);
            }
            lock.lock();
            try {
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(reconnectMillis);
                long remaining;
                while (state != State.CLOSED && (remaining = until - System.nanoTime()) > 0) {
                    try {
                        changed.awaitNanos(remaining);
                    } catch (InterruptedException e) {
                        // only close() interrupts
                    }
                }
                if (state == State.CLOSED) {
                    return;
                }
                state = State.IDLE;
                reconnectMillis = Math.min(MAX_RECONNECT_MILLIS, reconnectMillis * 2);
            } finally {
                lock.unlock();
            }
        }
    }

    /** Sends a (un)subscribe on the subscribed connection; a broken connection ends the loop by itself. */
    private void send(Runnable command) {
        try {
            command.run();
        } catch (RuntimeException e) {
            log.debug("{}: could not change wake-up subscriptions: {}", address, e.getMessage());
        }
    }

    /** Runs the listeners of {@code channel} with {@code message} (null: one may have been missed). */
    private void deliver(String channel, String message) {
        List<Consumer<String>> targets;
        lock.lock();
        try {
            List<Consumer<String>> list = listeners.get(channel);
            if (list == null) {
                return;
            }
            targets = List.copyOf(list);
        } finally {
            lock.unlock();
        }
        targets.forEach(listener -> hear(listener, message));
    }

    /** Runs every listener with no message: releases may have gone unheard. */
    private void wakeAll() {
        List<Consumer<String>> targets = new ArrayList<>();
        lock.lock();
        try {
            listeners.values().forEach(targets::addAll);
        } finally {
            lock.unlock();
        }
        targets.forEach(listener -> hear(listener, null));
    }

    private static void hear(Consumer<String> listener, String message) {
        try {
            listener.accept(message);
        } catch (RuntimeException e) {
            log.warn("wake-up listener failed", e);
        }
    }

    @Override
    public boolean idle() {
        lock.lock();
        try {
            return state == State.IDLE && listeners.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        Thread running;
        lock.lock();
        try {
            if (state == State.CLOSED) {
                return;
            }
            if (state == State.RUNNING) {
                endConnection();
            }
            state = State.CLOSED;
            listeners.clear();
            changed.signalAll();
            running = thread;
        } finally {
            lock.unlock();
        }
        if (running != null && running != Thread.currentThread()) {
            try {
                running.join(TimeUnit.NANOSECONDS.toMillis(confirmNanos) + 1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (running.isAlive()) {
                log.debug("{}: wake-up thread still waits for the server; it ends when the connection does", address);
            }
        }
    }

    private void confirmedByServer(String channel) {
        boolean wakeAll;
        boolean late;
        lock.lock();
        try {
            wakeAll = onConfirmed(channel);
            late = unconfirmed.remove(channel);
        } finally {
            lock.unlock();
        }
        if (wakeAll) {
            wakeAll();
        } else if (late) {
            deliver(channel, null);
        }
    }

    /** How the loop talks to the server: plain or sharded pub/sub. */
    private interface Link {
        /** Subscribes {@code channels}, then dispatches until nothing is subscribed or the connection fails. */
        void run(String[] channels);

        /** Subscribes more channels on the running connection. */
        void join(String... channels);

        /** Unsubscribes some channels on the running connection. */
        void leave(String... channels);

        /** Unsubscribes every channel, which ends {@link #run}. */
        void leaveAll();

        /** Whether one command may name only channels of one slot (sharded pub/sub on a cluster). */
        boolean oneSlotPerCommand();
    }

    /** {@code SUBSCRIBE} on a connection of the client's pool, which the client gives back when it ends. */
    private final class Classic extends JedisPubSub implements Link {
        private final UnifiedJedis jedis;

        Classic(UnifiedJedis jedis) {
            this.jedis = jedis;
        }

        @Override
        public void run(String[] channels) {
            jedis.subscribe(this, channels);
        }

        @Override
        public void join(String... channels) {
            subscribe(channels);
        }

        @Override
        public void leave(String... channels) {
            unsubscribe(channels);
        }

        @Override
        public void leaveAll() {
            unsubscribe();
        }

        @Override
        public boolean oneSlotPerCommand() {
            return false;
        }

        @Override
        public void onSubscribe(String channel, int subscribedChannels) {
            confirmedByServer(channel);
        }

        @Override
        public void onUnsubscribe(String channel, int subscribedChannels) {
            lock.lock();
            try {
                if (channel != null) {
                    confirmed.remove(channel);
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void onMessage(String channel, String message) {
            deliver(channel, message);
        }
    }

    /**
     * {@code SSUBSCRIBE} on a connection to one cluster node, one channel per command since a command may name
     * channels of one slot only. A node that gives a slot away (resharding, failover) unsubscribes its channels
     * by itself; the loop then ends and starts over, after {@link #afterFailure} moved them to their new node.
     */
    private final class Sharded extends JedisShardedPubSub implements Link {
        private final Function<String, Connection> connect;

        Sharded(Function<String, Connection> connect) {
            this.connect = connect;
        }

        @Override
        public void run(String[] channels) {
            Connection connection = connect.apply(channels[0]);
            boolean clean = false;
            try {
                proceed(connection, channels);
                clean = true;
            } finally {
                if (!clean) {
                    // it may still be subscribed (an error reply such as MOVED ends the loop): never reuse it
                    connection.setBroken();
                }
                connection.close();
            }
        }

        @Override
        public void join(String... channels) {
            for (String channel : channels) {
                ssubscribe(channel);
            }
        }

        @Override
        public void leave(String... channels) {
            for (String channel : channels) {
                sunsubscribe(channel);
            }
        }

        @Override
        public void leaveAll() {
            sunsubscribe();
        }

        @Override
        public boolean oneSlotPerCommand() {
            return true;
        }

        @Override
        public void onSSubscribe(String channel, int subscribedChannels) {
            confirmedByServer(channel);
        }

        @Override
        public void onSUnsubscribe(String channel, int subscribedChannels) {
            lock.lock();
            try {
                if (channel == null) {
                    return;
                }
                confirmed.remove(channel);
                if (state == State.RUNNING && !ending && requested.contains(channel)
                        && listeners.containsKey(channel)) {
                    // not asked for: the node no longer owns the channel's slot
                    dropped = true;
                    if (subscribedChannels > 0) {
                        endConnection();
                    }
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void onSMessage(String channel, String message) {
            deliver(channel, message);
        }
    }
}
