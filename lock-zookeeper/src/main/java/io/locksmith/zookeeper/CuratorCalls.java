package io.locksmith.zookeeper;

import io.locksmith.LockBackendException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the ZooKeeper store talks to Curator: each call is started in the background and waited for at most the
 * operation timeout (see {@link #await}), and nodes the store gives up are deleted in the background until a
 * delete is confirmed (see {@link #discard}).
 */
final class CuratorCalls {

    private static final Logger log = LoggerFactory.getLogger(CuratorCalls.class);

    /** Starts one background operation that answers {@code callback}. */
    @FunctionalInterface
    interface Launch {
        void start(BackgroundCallback callback) throws Exception;
    }

    private final CuratorFramework client;
    private final String address;
    private final long timeoutNanos;
    /**
     * Nodes given up whose delete has not been confirmed yet: sent again whenever the client reconnects, and
     * every operation timeout while any is left (a sweep that runs only then).
     */
    private final Set<String> pendingDeletes = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean sweepPlanned = new AtomicBoolean();
    /**
     * Runs the sweeps and the store's timers; its thread exists only while one of them is planned, which is rare
     * (a delete without an answer, a suspended connection).
     */
    private final ScheduledThreadPoolExecutor timers;
    /** Set when the store closes the client it owns: its session, and every node with it, ends. */
    private volatile boolean sessionEnded;

    CuratorCalls(CuratorFramework client, String address, Duration operationTimeout) {
        this.client = client;
        this.address = address;
        this.timeoutNanos = operationTimeout.toNanos();
        this.timers = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "locksmith-zookeeper-timer");
            t.setDaemon(true);
            return t;
        });
        timers.setRemoveOnCancelPolicy(true);
        timers.setKeepAliveTime(Math.max(timeoutNanos, TimeUnit.SECONDS.toNanos(1)), TimeUnit.NANOSECONDS);
        timers.allowCoreThreadTimeOut(true);
    }

    /** The deadline of a call that starts now. */
    long deadline() {
        return System.nanoTime() + timeoutNanos;
    }

    boolean isConnected() {
        return client.getZookeeperClient().isConnected();
    }

    /**
     * Runs {@code task} after {@code delay}.
     *
     * @throws RejectedExecutionException once {@link #close} has been called
     */
    ScheduledFuture<?> schedule(Runnable task, long delay, TimeUnit unit) {
        return timers.schedule(task, delay, unit);
    }

    /**
     * Stops the sweeps and timers; {@code sessionEnds} if the client is closed next, which deletes every node of
     * its session, so no more deletes are needed.
     */
    void close(boolean sessionEnds) {
        sessionEnded = sessionEnds;
        timers.shutdownNow();
    }

    // ---------------------------------------------------------------- waiting for answers

    /**
     * Starts one background operation and waits for its answer until {@code deadline}. An answer that arrives
     * after the caller gave up goes to {@code late}, if given.
     *
     * <p>An interrupt ends the wait at once with {@link LockBackendException}, the interrupt flag left set, like a
     * timeout: the outcome is unknown, and the machinery ends the acquisition run, so {@code lockInterruptibly()}
     * throws {@link InterruptedException} while {@code lock()} tries again with a new run. What the attempt leaves
     * behind is undone before {@code tryAcquire} returns while the client is connected, so that another client can
     * take the lock as soon as the interrupted caller returns: the attempt's node is deleted (one round trip), and
     * the answer of a create on its way is waited for first (its node may exist and be the lowest already). While
     * the client is disconnected nothing can be undone in time: the node is deleted in the background, or when the
     * create's late answer comes. The machinery hides the flag from releases, so {@code unlock()} still waits for
     * its answer.
     */
    CuratorEvent await(String what, long deadline, Launch launch, Consumer<CuratorEvent> late) {
        CompletableFuture<CuratorEvent> answer;
        try {
            answer = launch(launch, late);
        } catch (Exception e) {
            throw failure("could not " + what, e);
        }
        return awaitAnswer(answer, what, deadline);
    }

    /** Starts one background operation; an answer that arrives after its waiter gave up goes to {@code late}. */
    static CompletableFuture<CuratorEvent> launch(Launch launch, Consumer<CuratorEvent> late) throws Exception {
        CompletableFuture<CuratorEvent> answer = new CompletableFuture<>();
        launch.start((c, event) -> {
            if (!answer.complete(event) && late != null) {
                late.accept(event);
            }
        });
        return answer;
    }

    /** Waits for {@code answer} until {@code deadline} or an interrupt; see {@link #await}. */
    <T> T awaitAnswer(CompletableFuture<T> answer, String what, long deadline) {
        return awaitAnswer(answer, what, deadline, false);
    }

    /**
     * Waits for {@code answer} until {@code deadline} or an interrupt; with {@code finishIfConnected}, an interrupt
     * ends the wait only if the client is disconnected at that moment (and is kept for the caller otherwise).
     */
    <T> T awaitAnswer(CompletableFuture<T> answer, String what, long deadline, boolean finishIfConnected) {
        long start = System.nanoTime();
        boolean deferred = false;
        try {
            while (true) {
                try {
                    return answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    if (finishIfConnected && isConnected()) {
                        deferred = true;
                        continue;
                    }
                    Thread.currentThread().interrupt();
                    if (answer.completeExceptionally(new CancellationException("interrupted"))) {
                        throw failure("interrupted after " + millis(System.nanoTime() - start) + " ms waiting for "
                                + "the answer to '" + what + "'", e);
                    }
                    return answer.join();
                } catch (TimeoutException e) {
                    if (answer.completeExceptionally(new CancellationException("timed out"))) {
                        throw failure("no answer to '" + what + "' after " + millis(System.nanoTime() - start)
                                + " ms (operation timeout " + millis(timeoutNanos) + " ms)", null);
                    }
                    return answer.join();
                } catch (ExecutionException e) {
                    throw failure("could not " + what, e.getCause());
                }
            }
        } finally {
            if (deferred) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Throws, the flag left set, if the thread is interrupted: nothing is sent for a caller that gave up. */
    void checkNotInterrupted(String what) {
        if (Thread.currentThread().isInterrupted()) {
            throw failure("interrupted before it could " + what, null);
        }
    }

    void check(CuratorEvent event, String what) {
        int rc = event.getResultCode();
        if (rc != KeeperException.Code.OK.intValue()) {
            throw failure("could not " + what + ": " + describe(rc), null);
        }
    }

    String describe(int rc) {
        KeeperException.Code code = KeeperException.Code.get(rc);
        if (code == KeeperException.Code.NOAUTH) {
            return "NOAUTH - the client is not authenticated for the lock nodes' ACL (give it the same digest "
                    + "credentials as the provider)";
        }
        if (code == KeeperException.Code.CONNECTIONLOSS) {
            return "CONNECTIONLOSS - ZooKeeper is not reachable";
        }
        if (code == KeeperException.Code.SESSIONEXPIRED) {
            return "SESSIONEXPIRED - the ZooKeeper session expired";
        }
        return code == null ? "error " + rc : code.name();
    }

    LockBackendException failure(String message, Throwable cause) {
        return new LockBackendException(address + " - " + message, cause);
    }

    // ---------------------------------------------------------------- retried deletes

    /**
     * Deletes {@code path} waiting until the deadline; if that fails, or the wait is interrupted (the flag stays
     * set), keeps trying in the background.
     */
    void deleteWithin(String path, long deadline, String why) {
        try {
            CuratorEvent event = await(why + ": " + path, deadline,
                    callback -> client.delete().guaranteed().inBackground(callback).forPath(path),
                    late -> deleteAnswered(path, late));
            int rc = event.getResultCode();
            if (rc != KeeperException.Code.OK.intValue() && rc != KeeperException.Code.NONODE.intValue()) {
                log.warn("{} - could not {} ({}); retrying in the background", address, why + " " + path,
                        describe(rc));
                discard(path);
            } else {
                deleted(path);
            }
        } catch (LockBackendException e) {
            keepDeleting(path);
            if (!Thread.currentThread().isInterrupted()) {
                log.warn("{} - could not {} in time; the delete goes on in the background: {}", address, why,
                        e.getMessage());
            }
        }
    }

    /** {@link #deleteWithin} for one operation timeout, the thread's interrupt flag hidden meanwhile. */
    void deleteIgnoringInterrupt(String path, String why) {
        boolean interrupted = Thread.interrupted();
        try {
            deleteWithin(path, deadline(), why);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Deletes {@code path} in the background. Curator's guaranteed delete keeps trying while the client is
     * disconnected, but a node of a session that outlived an outage must not depend on that alone (it once
     * stayed for more than 30 s after the quorum was back, blocking the lock): until a delete is confirmed the
     * path stays pending, and every reconnection sends its delete again.
     */
    void discard(String path) {
        if (sessionEnded) {
            return; // the session ends with the client
        }
        pendingDeletes.add(path);
        sendDelete(path);
        planSweep();
    }

    /**
     * Keeps deleting {@code path} in the background, whose delete is on its way but unanswered: it is sent again
     * on every reconnection and sweep until one is confirmed.
     */
    void keepDeleting(String path) {
        if (sessionEnded) {
            return;
        }
        pendingDeletes.add(path);
        planSweep();
    }

    /** Whether a delete of {@code path} is still being retried: none has been confirmed since it was given up. */
    boolean isPendingDelete(String path) {
        return pendingDeletes.contains(path);
    }

    /** A delete of {@code path} whose answer came after its caller gave up. */
    void deleteAnswered(String path, CuratorEvent late) {
        int rc = late.getResultCode();
        if (rc == KeeperException.Code.OK.intValue() || rc == KeeperException.Code.NONODE.intValue()) {
            deleted(path);
        }
    }

    /** A delete of {@code path} is confirmed: nothing is left to send or to do again. */
    void deleted(String path) {
        pendingDeletes.remove(path);
    }

    /** Sends every pending delete again, as when the client has reconnected. */
    void retryPendingDeletes() {
        for (String path : pendingDeletes) {
            sendDelete(path);
        }
    }

    private void planSweep() {
        if (sweepPlanned.compareAndSet(false, true)) {
            try {
                timers.schedule(this::sweep, timeoutNanos, TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException closing) {
                sweepPlanned.set(false);
            }
        }
    }

    private void sweep() {
        sweepPlanned.set(false);
        if (pendingDeletes.isEmpty() || sessionEnded) {
            return;
        }
        if (isConnected()) {
            retryPendingDeletes();
        }
        planSweep();
    }

    private void sendDelete(String path) {
        try {
            client.delete().guaranteed().inBackground((c, event) -> {
                int rc = event.getResultCode();
                if (rc == KeeperException.Code.OK.intValue() || rc == KeeperException.Code.NONODE.intValue()) {
                    deleted(path);
                } else {
                    log.warn("{} - background delete of {} failed: {}; it is sent again", address, path,
                            describe(rc));
                }
            }).forPath(path);
        } catch (Exception e) {
            log.warn("{} - could not start the background delete of {}: {}", address, path, e.toString());
        }
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }
}
