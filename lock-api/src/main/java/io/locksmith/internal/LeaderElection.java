package io.locksmith.internal;

import io.locksmith.DistributedLock;
import io.locksmith.Leadership;
import io.locksmith.LeadershipListener;
import io.locksmith.LeadershipListener.Reason;
import io.locksmith.LockBackendException;
import io.locksmith.LockHandle;
import io.locksmith.LockLostException;
import io.locksmith.LockProvider;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link LockProvider#leadership}: a thread that takes the lock of a name with {@link DistributedLock#tryAcquire},
 * is the leader while it holds it, and steps down on a relinquish, a loss or a close. Built on the public lock API,
 * so every backend has it with the lock's own guarantees: the epoch is the hold's fencing token, the lease is
 * renewed by the provider's watchdog, and a loss reaches the candidacy through {@link LockHandle#whenLost()}.
 * Unsupported internal API.
 */
public final class LeaderElection implements Leadership {

    private static final Logger log = LoggerFactory.getLogger(LeaderElection.class);

    /** One wait of the contending thread; it simply waits again. Bounded so that no arithmetic nears overflow. */
    private static final Duration CONTEND_WAIT = Duration.ofMinutes(10);
    private static final long FIRST_RETRY_MILLIS = 50;

    private final DistributedLock lock;
    private final LeadershipListener listener;
    private final Duration pauseAfterRelinquish;
    private final Duration maxRetryPause;
    private final Thread thread;

    // guarded by this
    private boolean closed;
    /** The current term while this process leads, else null. */
    private Term term;

    private LeaderElection(DistributedLock lock, LeadershipListener listener, Duration pauseAfterRelinquish,
            Duration maxRetryPause) {
        this.lock = lock;
        this.listener = listener;
        this.pauseAfterRelinquish = pauseAfterRelinquish;
        this.maxRetryPause = maxRetryPause;
        this.thread = new Thread(this::contend, "locksmith-leadership-" + lock.name());
        this.thread.setDaemon(true);
    }

    /** See {@link LockProvider#leadership}. */
    public static Leadership start(LockProvider provider, String name, LeadershipListener listener) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(listener, "listener");
        DistributedLock lock = provider.getLock(name); // checks the name, and that the provider is open
        // one operation timeout: time for a candidacy waiting on any backend (woken, or polling) to take the lock
        LeaderElection election = new LeaderElection(lock, listener, provider.options().operationTimeout(),
                provider.options().operationTimeout());
        election.thread.start();
        return election;
    }

    /** One leadership: its hold, its epoch, and how it ends. */
    private static final class Term {
        final LockHandle handle;
        final long epoch;
        /** Completed with the reason the term ends; the first reason wins. */
        final CompletableFuture<Reason> end = new CompletableFuture<>();
        /**
         * Completed when the step-down is over: revoked() called and the lock given back; exceptionally with what
         * the give-back threw (the hold found lost, the store not told).
         */
        final CompletableFuture<Void> over = new CompletableFuture<>();

        Term(LockHandle handle, long epoch) {
            this.handle = handle;
            this.epoch = epoch;
        }
    }

    @Override
    public String name() {
        return lock.name();
    }

    @Override
    public boolean isLeader() {
        Term current = current();
        return current != null && !current.end.isDone() && current.handle.isValid();
    }

    @Override
    public OptionalLong epoch() {
        Term current = current();
        return current != null && !current.end.isDone() && current.handle.isValid() ? OptionalLong.of(current.epoch)
                : OptionalLong.empty();
    }

    private synchronized Term current() {
        return term;
    }

    @Override
    public void relinquish() {
        Term current;
        synchronized (this) {
            current = term;
            if (current == null) {
                return;
            }
            current.end.complete(Reason.RELINQUISHED);
        }
        if (Thread.currentThread() != thread) {
            awaitOver(current);
        }
    }

    /** Waits for the step-down of {@code current}, and throws what its give-back threw. */
    private static void awaitOver(Term current) {
        try {
            current.over.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException failure) {
                throw failure;
            }
            throw e;
        }
    }

    @Override
    public void close() {
        Term stepping;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            stepping = term;
            if (term != null) {
                term.end.complete(Reason.CLOSED);
            } else {
                thread.interrupt(); // ends a wait for the lock (nothing of it is then held) or a pause
            }
        }
        if (Thread.currentThread() == thread) {
            return;
        }
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (stepping != null) {
            awaitOver(stepping); // over by now, the thread having ended
        }
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    // ------------------------------------------------------------------------------------------------------
    // The candidacy's thread
    // ------------------------------------------------------------------------------------------------------

    private void contend() {
        int failures = 0;
        while (!isClosed()) {
            LockHandle handle;
            try {
                handle = lock.tryAcquire(CONTEND_WAIT).orElse(null);
                failures = 0;
            } catch (InterruptedException e) {
                continue; // only close() interrupts this thread while it waits for the lock
            } catch (IllegalStateException e) {
                log.debug("Leadership of '{}' stops contending: {}", lock.name(), e.getMessage());
                break; // the provider was closed
            } catch (LockBackendException e) {
                failures++;
                log.warn("Leadership of '{}': the store failed ({}), contending again in {} ms", lock.name(),
                        e.getMessage(), retryPause(failures).toMillis());
                pause(retryPause(failures));
                continue;
            }
            if (handle != null) {
                lead(handle);
            }
        }
        synchronized (this) {
            closed = true;
        }
    }

    private void lead(LockHandle handle) {
        long epoch;
        try {
            epoch = handle.fencingToken();
        } catch (LockLostException lostAtOnce) {
            return; // lost before it could lead: contend again
        }
        Term current = new Term(handle, epoch);
        boolean elected;
        synchronized (this) {
            term = current;
            // once the term is visible (isLeader()), the listener hears of it, whatever ends it
            elected = !closed;
            if (closed) {
                current.end.complete(Reason.CLOSED);
            }
        }
        // close() interrupts only while no term is set; an interrupt it sent just before is spent here
        Thread.interrupted();
        handle.whenLost().whenComplete((loss, cancelled) ->
                // cancelled: the hold ended otherwise, which (before this thread gives it back) is the provider's close
                current.end.complete(cancelled == null ? Reason.LOST : Reason.CLOSED));
        if (elected) {
            try {
                listener.elected(epoch);
            } catch (RuntimeException | Error e) {
                log.warn("Leadership of '{}': elected({}) threw; stepping down", lock.name(), epoch, e);
                current.end.complete(Reason.RELINQUISHED);
            }
        }
        Reason reason = awaitEnd(current);
        RuntimeException giveBackFailure = null;
        try {
            if (elected) {
                notifyRevoked(epoch, reason);
            }
            if (reason != Reason.LOST) {
                giveBackFailure = giveBack(handle, epoch);
            }
        } finally {
            synchronized (this) {
                term = null;
            }
            if (giveBackFailure == null) {
                current.over.complete(null);
            } else {
                current.over.completeExceptionally(giveBackFailure);
            }
        }
        if (reason == Reason.RELINQUISHED) {
            pause(pauseAfterRelinquish);
        }
    }

    private static Reason awaitEnd(Term current) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return current.end.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    throw new IllegalStateException(e); // never completed exceptionally
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void notifyRevoked(long epoch, Reason reason) {
        try {
            listener.revoked(epoch, reason);
        } catch (RuntimeException | Error e) {
            log.warn("Leadership of '{}': revoked({}, {}) threw", lock.name(), epoch, reason, e);
        }
    }

    /**
     * Gives the lock back; returns what relinquish() or close() must throw to their caller: the hold found lost
     * (the term was not exclusive to its end), or the store not told (the provider retries the release).
     */
    private RuntimeException giveBack(LockHandle handle, long epoch) {
        Thread.interrupted(); // a stray interrupt must not cut the release short
        try {
            handle.close();
            return null;
        } catch (LockLostException gone) {
            // revoked() was told the step-down's reason; the hold had already ended in the store (a pause past the
            // lease, say), so another process may have led meanwhile: only the epoch fenced that off
            log.warn("Leadership of '{}' (epoch {}): the lock had been lost before it was given back", lock.name(),
                    epoch);
            return new LockLostException("The leadership of '" + lock.name() + "' (epoch " + epoch + ") had been"
                    + " lost before it was given back; another process may have led meanwhile: " + gone.getMessage());
        } catch (LockBackendException e) {
            log.warn("Leadership of '{}': giving the lock back failed ({}); the provider retries it", lock.name(),
                    e.getMessage());
            return new LockBackendException("The store could not be told that the leadership of '" + lock.name()
                    + "' (epoch " + epoch + ") ended; the provider retries the release", e);
        } catch (IllegalStateException providerClosed) {
            log.debug("Leadership of '{}': {}", lock.name(), providerClosed.getMessage());
            return null;
        }
    }

    private Duration retryPause(int failures) {
        long millis = FIRST_RETRY_MILLIS << Math.min(failures - 1, 16);
        return Duration.ofMillis(Math.min(millis, Math.max(FIRST_RETRY_MILLIS, maxRetryPause.toMillis())));
    }

    /** Sleeps for {@code pause} unless closed first. */
    private void pause(Duration pause) {
        long deadline = System.nanoTime() + pause.toNanos();
        synchronized (this) {
            while (!closed) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                } catch (InterruptedException e) {
                    // close() interrupts; the loop sees closed
                }
            }
        }
    }

    @Override
    public String toString() {
        Term current = current();
        return "Leadership{'" + lock.name() + "', " + (isClosed() ? "closed" : current == null ? "contending"
                : "leader, epoch " + current.epoch) + '}';
    }
}
