package io.locksmith.spring.internal;

import io.locksmith.DistributedLock;
import io.locksmith.LockException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Threads that hold the locks of {@code @Locked(atLeast = …)} methods, so that a hold can outlast the call that
 * took it: a lock is owned by the thread that acquired it, and the calling thread (a scheduler's) moves on when
 * the method returns. A holder takes the lock, hands the fencing token to the caller, waits for the method to end,
 * keeps the lock until {@code atLeast} after it was granted, and releases it. One thread per hold in progress;
 * idle threads end after a minute.
 */
public final class HolderThreads implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(HolderThreads.class);

    private final ExecutorService executor;

    public HolderThreads() {
        AtomicInteger count = new AtomicInteger();
        this.executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "locksmith-holder-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Has a holder thread take {@code lock} with {@code acquire} and waits for the outcome.
     *
     * @return the hold, or null if the lock stayed held by somebody else
     * @throws LockException if the calling thread was interrupted while waiting (its flag is set again), or the
     *     holders are closed
     * @throws RuntimeException whatever {@code acquire} threw
     */
    Hold hold(DistributedLock lock, Predicate<DistributedLock> acquire, Duration atLeast, String method) {
        Hold hold = new Hold(lock, acquire, atLeast.toNanos(), method);
        try {
            executor.execute(hold::run);
        } catch (RejectedExecutionException closed) {
            throw new LockException("Lock '" + lock.name() + "' of " + method + ": the application is shutting down",
                    closed);
        }
        Long token;
        try {
            token = hold.granted.get();
        } catch (InterruptedException e) {
            hold.abandon();
            Thread.currentThread().interrupt();
            throw new LockException("Interrupted while waiting for lock '" + lock.name() + "' of " + method, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new LockException("Lock '" + lock.name() + "' of " + method + " failed", cause);
        }
        return token == null ? null : hold;
    }

    /** Stops the holders: each releases its lock now, whatever is left of its {@code atLeast}. */
    @Override
    public void close() {
        executor.shutdownNow();
    }

    /** One hold kept by a holder thread. */
    static final class Hold {
        private final DistributedLock lock;
        private final Predicate<DistributedLock> acquire;
        private final long atLeastNanos;
        private final String method;
        /** The fencing token, or null if the lock was busy. */
        final CompletableFuture<Long> granted = new CompletableFuture<>();
        private final CountDownLatch ended = new CountDownLatch(1);
        private volatile Thread holder;
        private volatile boolean abandoned;

        Hold(DistributedLock lock, Predicate<DistributedLock> acquire, long atLeastNanos, String method) {
            this.lock = lock;
            this.acquire = acquire;
            this.atLeastNanos = atLeastNanos;
            this.method = method;
        }

        long fencingToken() {
            return granted.join();
        }

        /** The method returned or threw: the holder keeps the lock until {@code atLeast} after the grant. */
        void methodEnded() {
            ended.countDown();
        }

        /** The caller stopped waiting: the holder gives up, and releases the lock if it got it. */
        void abandon() {
            abandoned = true;
            granted.cancel(false);
            Thread thread = holder;
            if (thread != null) {
                thread.interrupt();
            }
            ended.countDown();
        }

        private void run() {
            holder = Thread.currentThread();
            try {
                if (!abandoned) {
                    acquireAndHold();
                }
            } finally {
                holder = null; // the pool reuses the thread: a late abandon() must not interrupt the next hold
                Thread.interrupted();
            }
        }

        private void acquireAndHold() {
            boolean acquired;
            try {
                acquired = acquire.test(lock);
            } catch (RuntimeException | Error e) {
                granted.completeExceptionally(e);
                return;
            }
            if (!acquired) {
                granted.complete(null);
                return;
            }
            long grantedAt = System.nanoTime();
            try {
                if (!granted.complete(lock.fencingToken())) {
                    return; // abandoned while it was being granted
                }
                ended.await();
                long left = grantedAt + atLeastNanos - System.nanoTime();
                if (left > 0 && !abandoned) {
                    // nothing counts this latch down: it waits out the rest of atLeast, or until an interrupt
                    new CountDownLatch(1).await(left, TimeUnit.NANOSECONDS);
                }
            } catch (InterruptedException shuttingDown) {
                log.debug("Releasing lock '{}' of {} before its atLeast: the holders are closing", lock.name(),
                        method);
            } catch (RuntimeException e) {
                granted.completeExceptionally(e); // the hold was lost before its token could be read
            } finally {
                release(); // the lock is this thread's: nobody else can release it
            }
        }

        private void release() {
            boolean interrupted = Thread.interrupted();
            try {
                lock.unlock();
            } catch (RuntimeException e) {
                log.warn("Lock '{}' of {} could not be released by its holder thread: {}", lock.name(), method,
                        e.getMessage());
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
