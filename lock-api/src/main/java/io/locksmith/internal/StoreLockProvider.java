package io.locksmith.internal;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedReadWriteLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockHandle;
import io.locksmith.LockListener;
import io.locksmith.LockLostException;
import io.locksmith.LockNames;
import io.locksmith.LockObserver;
import io.locksmith.LockObserver.HoldEnd;
import io.locksmith.LockObserver.Outcome;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.TimeSource;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import io.locksmith.spi.StoreEvents;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The machinery every backend shares: reentrancy, local queuing, waiting, lease renewal, loss handling and
 * closing, around a {@link LockStore} that only knows how to acquire, release, renew and signal.
 *
 * <p>Threads of this provider that want the same name queue on the name's {@link LockEntry#gate}; only the
 * head talks to the store, and the holder keeps the gate until it releases. So the store sees at most one
 * owner per provider and name; each acquisition run has an owner id of its own (see {@link LockStore}).
 *
 * <p>One scheduler thread per provider renews every renewable hold each renew interval, in batches of
 * {@link LockStore#renewBatchSize()} names per call, expires explicit leases, and calls the listener.
 *
 * <p>The store hands back its own record of each acquisition run ({@code H}); the machinery keeps it with the
 * hold and passes it back on release, renewal and the end of a lease, so nothing is looked up by name. Every
 * lease and validity clock is here: the store is told when a lease the machinery ended may still be kept
 * ({@link LockStore#leaseEnded}).
 *
 * <p>When the options name a {@link LockObserver}, each fresh acquisition is followed by an
 * {@link ObservedAcquisition} that travels with its hold; without one, the paths below test one null field.
 */
public final class StoreLockProvider<H> implements LockProvider {

    private static final Logger log = LoggerFactory.getLogger(StoreLockProvider.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int POISON = Integer.MAX_VALUE / 4;
    /**
     * Threads that run asynchronous acquisitions' store calls: each call is short (one attempt, at most the
     * operation timeout), so a few threads serve any number of waiting handles; idle threads end after 30 s.
     */
    private static final int ASYNC_THREADS = 4;

    private final LockStore<H> store;
    /** Whether a release hands the lock to the next local owner in the store call of that owner's attempt. */
    private final boolean handsOver;
    private final LockOptions options;
    private final TimeSource time;
    private final String clientId;
    /** The client id and a dot: each acquisition run's owner id is this and a number never used again. */
    private final String ownerPrefix;
    private final AtomicLong ownerSequence = new AtomicLong();
    private final ConcurrentHashMap<String, LockEntry> entries = new ConcurrentHashMap<>();
    /** How many entries of read holds exist: while none does, taking a write lock looks for no read hold to refuse. */
    private final AtomicInteger readEntries = new AtomicInteger();
    /** Numbers the entries of handle-owned read holds, each of which has one of its own. */
    private final AtomicLong readHandles = new AtomicLong();
    private final Set<Hold> renewing = ConcurrentHashMap.newKeySet();
    private final ScheduledThreadPoolExecutor scheduler;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final PendingReleases<H> releases;
    /** The options' observer, or null when there is none. */
    private final LockObserver observer;
    private volatile ThreadPoolExecutor asyncExecutor;

    /** A provider over {@code store}, which the options' store wrapper has already wrapped. */
    public static <H> StoreLockProvider<H> over(LockStore<H> store, LockOptions options) {
        return new StoreLockProvider<>(store, options);
    }

    private StoreLockProvider(LockStore<H> store, LockOptions options) {
        this.store = Objects.requireNonNull(store, "store");
        this.handsOver = store.takesOver();
        this.options = options;
        this.time = options.timeSource();
        byte[] id = new byte[16];
        RANDOM.nextBytes(id);
        this.clientId = HexFormat.of().formatHex(id);
        this.ownerPrefix = clientId + '.';
        this.releases = new PendingReleases<>(this);
        this.observer = options.observer() == LockObserver.NONE ? null : options.observer();
        String threadName = "locksmith-" + clientId.substring(0, 8);
        this.scheduler = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
        scheduler.setRemoveOnCancelPolicy(true);
        store.start(new Events());
        if (options.renewLeases()) {
            long period = options.renewInterval().toNanos();
            scheduler.scheduleWithFixedDelay(this::renewAll, period, period, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public DistributedLock getLock(String name) {
        LockNames.check(name);
        checkOpen();
        return new StoreLock(this, name, false);
    }

    @Override
    public DistributedReadWriteLock getReadWriteLock(String name) {
        LockNames.check(name);
        checkOpen();
        if (!store.supportsSharedHolds()) {
            throw new UnsupportedOperationException("Read-write lock '" + name + "': " + store.address()
                    + " keeps no read holds (see docs/primitives.md)");
        }
        return new StoreReadWriteLock(new StoreLock(this, name, true), new StoreLock(this, name, false));
    }

    @Override
    public String clientId() {
        return clientId;
    }

    @Override
    public String backend() {
        return store.address();
    }

    @Override
    public LockOptions options() {
        return options;
    }

    @Override
    public String toString() {
        return "LockProvider{" + store.address() + ", client=" + clientId + (closed.get() ? ", closed" : "") + '}';
    }

    // ---------------------------------------------------------------- acquire

    /**
     * Acquires {@code name} for the current thread as {@code request} asks.
     *
     * @return whether the lock was acquired (always true for a request without a wait limit)
     */
    boolean acquire(String name, boolean shared, AcquireRequest request) throws InterruptedException {
        checkOpen();
        // like ReentrantLock: an interruptible acquisition with the flag set throws, even when it would re-enter
        if (request.interruptible && Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquiring lock '" + name + "' on " + store.address());
        }
        Thread me = Thread.currentThread();
        String key = shared ? readKey(name, me) : name;
        LockEntry existing = entries.get(key);
        if (existing != null) {
            Hold hold = existing.hold;
            if (hold != null && hold.owner == me) {
                if (hold.isValid(time.nanoTime())) {
                    hold.count++;
                    return true;
                }
                leaseOver(hold, "lease of " + millis(hold.leaseNanos) + " ms ended before it was renewed");
            }
        }
        H ownWrite = null;
        if (shared) {
            ownWrite = ownWriteHold(name, me);
        } else if (readEntries.get() > 0) {
            refuseUpgrade(name, me);
        }
        return acquireFresh(newRun(key, name, shared, ownWrite, request, me));
    }

    /** The entry key of {@code thread}'s read hold of {@code name}: NUL occurs in no name, so no lock's key. */
    private static String readKey(String name, Thread thread) {
        return name + "\u0000r" + thread.getId();
    }

    /** The store hold of the current thread's valid write hold of {@code name}, or null: a read under it downgrades. */
    private H ownWriteHold(String name, Thread me) {
        LockEntry entry = entries.get(name);
        Hold hold = entry == null ? null : entry.hold;
        return hold != null && hold.owner == me && hold.isValid(time.nanoTime()) ? storeHold(hold) : null;
    }

    /** Refuses the write lock to a thread that holds the read lock of the same name: it would wait for itself. */
    private void refuseUpgrade(String name, Thread me) {
        LockEntry entry = entries.get(readKey(name, me));
        Hold read = entry == null ? null : entry.hold;
        if (read != null && read.owner == me && read.isHeld()) {
            throw new IllegalMonitorStateException("Lock '" + name + "' on " + store.address() + ": thread '"
                    + me.getName() + "' holds its read lock, and the write lock would wait for that read hold for "
                    + "ever: upgrading is not supported; release the read lock first, or take the write lock first "
                    + "and the read lock under it");
        }
    }

    /**
     * Acquires {@code lock} on the calling thread for a new handle that owns the hold: the thread waits as
     * {@code request} asks, but the hold belongs to the handle, which any thread may close, and is not reentrant
     * (what {@link #acquireAsync} grants, without its executor hops, for a caller that blocks anyway).
     *
     * @return the handle, or null if the wait passed first
     */
    LockHandle acquireOwned(StoreLock lock, AcquireRequest request) throws InterruptedException {
        checkOpen();
        if (request.interruptible && Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquiring lock '" + lock.name() + "' on "
                    + store.address());
        }
        OwnedHandle handle = new OwnedHandle(lock, this);
        Run run = newRun(handleKey(lock), lock.name(), lock.shared, null, request, handle);
        if (!acquireFresh(run)) {
            return null;
        }
        handle.granted(run.hold);
        return handle;
    }

    /** The entry key of a new handle's hold of {@code lock}: the name, or for a read hold one of its own. */
    private String handleKey(StoreLock lock) {
        return lock.shared ? lock.name() + "\u0000h" + readHandles.incrementAndGet() : lock.name();
    }

    private Run newRun(String key, String name, boolean shared, H ownWrite, AcquireRequest request, Object owner) {
        ObservedAcquisition watch = observer == null ? null
                : ObservedAcquisition.start(observer, store.address(), name, time.nanoTime());
        return new Run(key, name, shared, ownWrite, request, watch, owner);
    }

    /** One fresh acquisition; a followed one has its outcome reported here unless it was granted. */
    private boolean acquireFresh(Run run) throws InterruptedException {
        ObservedAcquisition watch = run.watch;
        if (watch == null) {
            return acquireUnobserved(run);
        }
        AcquireRequest request = run.request;
        boolean acquired;
        try {
            acquired = acquireUnobserved(run);
        } catch (InterruptedException e) {
            watch.notGranted(Outcome.INTERRUPTED, time.nanoTime(), e);
            throw e;
        } catch (RuntimeException | Error e) {
            watch.notGranted(Outcome.FAILED, time.nanoTime(), e);
            throw e;
        }
        if (!acquired) {
            watch.notGranted(request.waits() ? Outcome.TIMED_OUT : Outcome.BUSY, time.nanoTime(), null);
        }
        return acquired;
    }

    /**
     * One fresh acquisition: what it asked for, its deadline, and what happened on the way (the store's hold of the
     * current attempt run, whether it waited in the store, an interrupt parked for later).
     */
    private class Run {
        /** The key of the run's entry: the name, or for a read hold the name and the owner. */
        final String key;
        final String name;
        /** Whether the run asks for a shared (read) hold. */
        final boolean shared;
        /** For a read run: the owner thread's own write hold of the name, which does not keep it out, or null. */
        final H ownWrite;
        final AcquireRequest request;
        final ObservedAcquisition watch;
        /** The thread or the handle the hold will belong to. */
        final Object owner;
        final long start = time.nanoTime();
        final boolean timed;
        final long deadline;
        /** The store's record of the current run; replaced after an attempt whose outcome is unknown. */
        H storeHold;
        /** Whether an attempt was answered busy, so the store may keep a place in its queue for this run. */
        boolean waited;
        /** An interrupt that lock() parked so that no store client reacts to it; restored at the end. */
        boolean interrupted;
        /** How long to wait before the next attempt, after {@link Step#WAIT} or {@link Step#BACK_OFF}. */
        long pause;
        Backoff backoff;
        /** The pauses of a run whose busy answers keep its claim to the next turn; new at each new claim. */
        Backoff claimPolls;
        /** Whether the run's last busy answer kept its claim to the next turn. */
        boolean claimed;
        /** The latest grant's fencing token as the run's last busy answer read it, or -1. */
        long holderToken = -1;
        /** The hold, once granted and published. */
        Hold hold;

        Run(String key, String name, boolean shared, H ownWrite, AcquireRequest request, ObservedAcquisition watch,
                Object owner) {
            this.key = key;
            this.name = name;
            this.shared = shared;
            this.ownWrite = ownWrite;
            this.request = request;
            this.watch = watch;
            this.owner = owner;
            this.timed = request.timed();
            this.deadline = start + Math.max(0, request.waitNanos);
        }

        long remaining(long now) {
            return timed ? deadline - now : Long.MAX_VALUE;
        }

        /** Whether the store may block this run's thread while the lock is busy (a database lock wait). */
        boolean mayBlock() {
            return true;
        }

        /** Starts a store run under an owner id never used before. */
        void newStoreRun() {
            storeHold = shared ? store.newSharedHold(name, newOwner(), ownWrite) : store.newHold(name, newOwner());
            waited = false;
        }
    }

    private boolean acquireUnobserved(Run run) throws InterruptedException {
        LockEntry entry = retain(run.key, run.name, run.shared);
        forgetLoss(entry, run.owner);
        boolean acquired = false;
        run.interrupted = !run.request.interruptible && Thread.interrupted();
        try {
            if (!enterGate(entry, run)) {
                return false;
            }
            run.newStoreRun();
            try {
                acquired = attempt(entry, run);
                return acquired;
            } finally {
                if (!acquired) {
                    if (run.waited) {
                        // still inside the gate, so no other thread of ours can be queueing for this name
                        abandonQuietly(run.name, run.storeHold);
                    }
                    releaseHanded(entry);
                    entry.gate.leave();
                }
            }
        } finally {
            if (!acquired) {
                if (entry.isSubscribed() && !entry.gate.hasQueued()) {
                    entry.unsubscribe();
                }
                releaseRef(entry);
            }
            if (run.interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private boolean enterGate(LockEntry entry, Run run) throws InterruptedException {
        while (true) {
            long remaining = run.remaining(time.nanoTime());
            try {
                boolean entered = run.timed && remaining <= 0
                        ? entry.gate.tryEnter()
                        : entry.gate.enter(Math.max(0, remaining), !run.timed);
                if (closed.get()) {
                    if (entered) {
                        releaseHanded(entry);
                        entry.gate.leave();
                    }
                    throw closedException();
                }
                if (entered || run.timed) {
                    return entered;
                }
            } catch (InterruptedException e) {
                if (run.request.interruptible) {
                    throw e;
                }
                run.interrupted = true;
            }
        }
    }

    /** What one attempt leaves a run to do next. */
    private enum Step {
        /** The hold is published. */
        GRANTED,
        /** Busy, and the wait is over. */
        TIMED_OUT,
        /** Try again at once. */
        RETRY,
        /** Wait for a wake-up, at most {@link Run#pause}. */
        WAIT,
        /** Wait {@link Run#pause}, whatever wake-ups arrive. */
        BACK_OFF
    }

    private boolean attempt(LockEntry entry, Run run) throws InterruptedException {
        while (true) {
            switch (step(entry, run)) {
                case GRANTED:
                    return true;
                case TIMED_OUT:
                    return false;
                case BACK_OFF:
                    backOff(run, run.pause);
                    break;
                case WAIT:
                    try {
                        entry.signal.tryAcquire(run.pause, TimeUnit.NANOSECONDS);
                    } catch (InterruptedException e) {
                        if (run.request.interruptible) {
                            throw e;
                        }
                        run.interrupted = true;
                    }
                    break;
                default:
                    break;
            }
        }
    }

    /**
     * One attempt in the store by the run inside the gate, and what the run does next. A grant is published before
     * this returns; a busy answer leaves {@link Run#pause} set.
     */
    private Step step(LockEntry entry, Run run) throws InterruptedException {
        String name = entry.name;
        AcquireRequest request = run.request;
        long leaseNanos = request.leaseNanos;
        // the usual lease and store wait are the options' own Durations: an uncontended cycle allocates neither
        Duration lease = leaseNanos == options.leaseTime().toNanos() ? options.leaseTime()
                : Duration.ofNanos(leaseNanos);
        Runnable wakeUp = request.waits() ? entry.waker : null;
        checkOpen();
        long attemptStart = time.nanoTime();
        long remaining = run.remaining(attemptStart);
        long operationTimeout = options.operationTimeout().toNanos();
        Duration storeWait = !run.mayBlock() ? Duration.ZERO
                : remaining >= operationTimeout ? options.operationTimeout()
                : Duration.ofNanos(Math.max(0, remaining));
        entry.signal.drainPermits();
        LockEntry.Handed handed = run.shared ? null : entry.takeHanded();
        Acquisition outcome;
        try {
            outcome = handed == null ? store.tryAcquire(run.storeHold, lease, storeWait, wakeUp)
                    : store.takeOver(handedHold(handed), run.storeHold, lease, wakeUp);
        } catch (LockBackendException e) {
            // an interrupt that landed during the call made the client give up: not a failure of the store
            boolean interruptedNow = Thread.interrupted();
            if (!interruptedNow) {
                backendFailed(name, "acquire", e);
            }
            if (handed != null) {
                // the hold handed over may still be kept, replaced, or released: release it as the run's own
                if (interruptedNow) {
                    releaseQuietly(name, handedHold(handed), handed.validUntil(), "the hand-over was interrupted");
                } else {
                    releases.add(name, handedHold(handed), handed.validUntil() + operationTimeout);
                }
            }
            // The store may have applied the attempt and lost its answer: release its hold (at once when an
            // interrupt ended the call, so that nothing is held when the caller hears of the interrupt; otherwise in
            // the background, since the store is failing), and start a new store run, so that nothing late of this
            // attempt can act on a later hold.
            if (interruptedNow) {
                releaseQuietly(name, run.storeHold, attemptStart + leaseNanos, "the call was interrupted");
            } else {
                releases.add(name, run.storeHold, attemptStart + leaseNanos + operationTimeout);
            }
            run.newStoreRun();
            if (interruptedNow) {
                if (request.interruptible) {
                    throw interruptedWith(name, e);
                }
                // an interrupt that landed during the call made the client give up; lock() ignores it: retry
                run.interrupted = true;
                return Step.RETRY;
            }
            if (closed.get()) {
                // closing the provider closed the connection this call was waiting on: report the close
                IllegalStateException closedNow = closedException();
                closedNow.addSuppressed(e);
                throw closedNow;
            }
            throw new LockBackendException("Lock '" + name + "' on " + store.address() + ": acquire failed after "
                    + millis(time.nanoTime() - run.start) + " ms" + waitLimit(run) + ": " + detail(e), e);
        }
        if (outcome.isAcquired()) {
            granted(entry, run, outcome, attemptStart);
            return Step.GRANTED;
        }
        run.waited = true;
        long now = time.nanoTime();
        remaining = run.remaining(now);
        if (remaining <= 0) {
            return Step.TIMED_OUT;
        }
        if (outcome.isBackOff()) {
            run.pause = Math.min(outcome.retryAfter().orElseThrow().toNanos(), remaining);
            return Step.BACK_OFF;
        }
        if (outcome.isQueued()) {
            // the run waited in the store's own queue (a database lock wait) until its wait ran out: straight back
            // into it, since a pause outside it gives its turns to the waiters behind and to the holder's process
            return Step.RETRY;
        }
        long lastHolderToken = run.holderToken;
        run.holderToken = outcome.holderToken();
        boolean newClaim = outcome.isClaimed() && !run.claimed;
        run.claimed = outcome.isClaimed();
        boolean pushed = outcome.isWatched();
        if (!pushed) {
            if (!entry.isSubscribed()) {
                if (entry.subscribe(store)) {
                    return Step.RETRY; // the holder may have released before we subscribed: look again at once
                }
            } else {
                pushed = entry.subscribe(store);
            }
        }
        long holderLeft = outcome.retryAfter().map(Duration::toNanos).orElse(options.leaseTime().toNanos());
        long pause;
        if (pushed) {
            pause = holderLeft;
        } else if (outcome.isClaimed()) {
            // the next turn is ours: once the holders have had theirs the lock waits for this run alone, idle until
            // it looks again, and the holders' provider learns that their turns are over only when it is refused,
            // which it does not tell us; so look again soon: from a tenth of the shortest backoff, growing to it
            // while one holder keeps the lock, so that a long hold is not polled faster than by any other waiter
            if (newClaim || run.claimPolls == null) {
                long min = options.minBackoff().toNanos();
                run.claimPolls = new Backoff(min / 10, min);
            } else if (outcome.holderToken() >= 0 && lastHolderToken >= 0 && outcome.holderToken() != lastHolderToken) {
                // the lock changed hands since the last look: the others' turns are passing, and ours comes next
                run.claimPolls.restart();
            }
            pause = Math.min(run.claimPolls.next(), Math.max(holderLeft, 0));
        } else {
            if (run.backoff == null) {
                run.backoff = new Backoff(options.minBackoff().toNanos(), options.maxBackoff().toNanos());
            } else if (outcome.holderToken() >= 0 && lastHolderToken >= 0 && outcome.holderToken() != lastHolderToken) {
                // the lock changed hands since the last look: it rotates, so a long pause would lose the next turn
                run.backoff.restart();
            }
            pause = Math.min(run.backoff.next(), Math.max(holderLeft, 0));
        }
        if (outcome.isClaimed()) {
            // a claim lives for one lease from its last refresh, and each attempt refreshes it
            pause = Math.min(pause, leaseNanos / 3);
        }
        run.pause = Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(pause, remaining));
        return Step.WAIT;
    }

    /** Waits out a store's back-off, whatever wake-ups arrive meanwhile. */
    private void backOff(Run run, long nanos) throws InterruptedException {
        long until = time.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = until - time.nanoTime()) {
            LockSupport.parkNanos(this, left);
            if (Thread.interrupted()) {
                if (run.request.interruptible) {
                    throw new InterruptedException("interrupted while acquiring lock '" + run.name + "' on "
                            + store.address());
                }
                run.interrupted = true;
            }
        }
    }

    /** The store granted the lock: publish the hold, or give it back if the caller gave up at that moment. */
    private boolean granted(LockEntry entry, Run run, Acquisition outcome, long attemptStart)
            throws InterruptedException {
        String name = entry.name;
        AcquireRequest request = run.request;
        long validNanos = outcome.validFor().map(Duration::toNanos).orElse(request.leaseNanos);
        if (request.interruptible && Thread.interrupted()) {
            // Granted at the moment of the interrupt: give it back so nothing stays held.
            releaseQuietly(name, run.storeHold, attemptStart + validNanos, "interrupted at the moment of acquisition");
            throw new InterruptedException("interrupted while acquiring lock '" + name + "' on " + store.address()
                    + "; the hold granted at that moment was released");
        }
        if (closed.get()) {
            releaseQuietly(name, run.storeHold, attemptStart + validNanos, "provider closed during acquisition");
            throw closedException();
        }
        Hold hold = new Hold(entry, run.owner, run.storeHold, outcome.fencingToken(), request.renewable,
                request.leaseNanos, attemptStart + validNanos);
        ObservedAcquisition watch = run.watch;
        if (watch != null) {
            // reported before the hold is published, so that a loss cannot be reported ahead of it
            hold.watch = watch;
            watch.granted(time.nanoTime(), hold.token);
        }
        entry.hold = hold;
        run.hold = hold;
        // a new hold ends the thread's claim to retry an earlier, unconfirmed release (which goes on)
        forgetUnconfirmedRelease(entry, run.owner);
        if (request.renewable) {
            renewing.add(hold);
        } else {
            scheduleExpiry(hold);
        }
        if (!entry.gate.hasQueued()) {
            entry.unsubscribe();
        }
        return true;
    }

    private void scheduleExpiry(Hold hold) {
        long delay = hold.validUntil - time.nanoTime();
        try {
            ScheduledFuture<?> future = scheduler.schedule(() -> expire(hold), Math.max(0, delay), TimeUnit.NANOSECONDS);
            synchronized (hold) {
                hold.expiry = future;
            }
        } catch (RejectedExecutionException closing) {
            // the provider is closing; close() releases the hold
        }
    }

    private void expire(Hold hold) {
        if (time.nanoTime() - hold.validUntil >= 0) {
            leaseOver(hold, "its lease of " + millis(hold.leaseNanos) + " ms ended before it was released");
        } else if (hold.isHeld()) {
            scheduleExpiry(hold); // a time source that runs slower than the scheduler's clock
        }
    }

    // ---------------------------------------------------------------- asynchronous acquisition

    /**
     * Starts acquiring {@code lock} for a new handle, without blocking the caller or any thread while the lock is
     * busy: the run queues in the name's gate like a thread, and each attempt is one short store call on the
     * provider's async executor. Cancelling the future abandons the wait and never leaves a hold.
     */
    CompletableFuture<LockHandle> acquireAsync(StoreLock lock, AcquireRequest request) {
        checkOpen();
        OwnedHandle handle = new OwnedHandle(lock, this);
        ObservedAcquisition watch = observer == null ? null
                : ObservedAcquisition.start(observer, store.address(), lock.name(), time.nanoTime());
        AsyncRun run = new AsyncRun(handleKey(lock), lock.name(), lock.shared, request, watch, handle);
        run.start();
        return run.future;
    }

    /**
     * One asynchronous acquisition. Its passes run one at a time: every kick (entering the gate, a wake-up, a
     * timer, a cancellation, the deadline) asks for a pass, and kicks that arrive during a pass ask for one more.
     */
    private final class AsyncRun extends Run {
        final CompletableFuture<LockHandle> future = new CompletableFuture<>();
        private final OwnedHandle handle;
        private final LockEntry entry;
        private final AtomicInteger kicks = new AtomicInteger();
        /** Whether the gate was handed to this run; set by whoever handed it over. */
        private volatile boolean inGate;
        /** Whether the run waits out a store's back-off, ignoring wake-ups. */
        private volatile boolean backingOff;
        // touched by passes only, which never overlap
        private Gate.Waiter place;
        private boolean finished;
        private ScheduledFuture<?> timer;
        private ScheduledFuture<?> deadlineTimer;

        AsyncRun(String key, String name, boolean shared, AcquireRequest request, ObservedAcquisition watch,
                OwnedHandle handle) {
            super(key, name, shared, null, request, watch, handle);
            this.handle = handle;
            this.entry = retain(key, name, shared);
        }

        @Override
        boolean mayBlock() {
            return false;
        }

        void start() {
            future.whenComplete((ignored, failure) -> {
                if (future.isCancelled()) {
                    kick();
                }
            });
            Gate.Waiter waiter = entry.gate.enterLater(this::entered);
            synchronized (this) {
                place = waiter;
            }
            if (timed) {
                deadlineTimer = later(this::kick, deadline - time.nanoTime());
            }
        }

        private void entered() {
            inGate = true;
            entry.asyncWaiter = this::wokenUp;
            kick();
        }

        private void wokenUp() {
            if (!backingOff) {
                kick();
            }
        }

        void kick() {
            if (kicks.getAndIncrement() == 0) {
                try {
                    asyncExecutor().execute(this::drive);
                } catch (RejectedExecutionException closing) {
                    drive(); // the provider closed: this pass only finds that out and gives up
                }
            }
        }

        private void drive() {
            do {
                kicks.set(1);
                if (!finished) {
                    try {
                        pass();
                    } catch (RuntimeException | Error e) {
                        giveUp(Outcome.FAILED, e);
                    }
                }
            } while (!kicks.compareAndSet(1, 0));
        }

        private void pass() {
            if (!inGate) {
                // still in line: only a cancellation, the deadline or the provider's close has anything to do here
                boolean over = future.isDone() || closed.get() || (timed && remaining(time.nanoTime()) <= 0);
                Gate.Waiter waiter;
                synchronized (this) {
                    waiter = place;
                }
                if (over && waiter != null && entry.gate.withdraw(waiter)) {
                    giveUp(future.isCancelled() ? Outcome.CANCELLED : closed.get() ? Outcome.FAILED
                            : Outcome.TIMED_OUT, closed.get() ? closedException() : timedOut());
                }
                return; // handed the gate meanwhile: entered() asks for another pass
            }
            if (future.isCancelled()) {
                giveUp(Outcome.CANCELLED, null);
                return;
            }
            cancelTimer();
            if (storeHold == null) {
                newStoreRun();
            }
            Step next;
            try {
                next = step(entry, this);
            } catch (InterruptedException e) {
                // nothing interrupts the async executor's threads but a failure of ours: report it as one
                Thread.currentThread().interrupt();
                giveUp(Outcome.FAILED, e);
                return;
            }
            switch (next) {
                case GRANTED:
                    succeed();
                    break;
                case TIMED_OUT:
                    giveUp(Outcome.TIMED_OUT, timedOut());
                    break;
                case RETRY:
                    kick();
                    break;
                case BACK_OFF:
                    backingOff = true;
                    timer = later(() -> {
                        backingOff = false;
                        kick();
                    }, pause);
                    break;
                default:
                    backingOff = false;
                    timer = later(this::kick, pause);
                    break;
            }
        }

        private void succeed() {
            finished = true;
            leaveWaiting();
            handle.granted(hold);
            if (!future.complete(handle)) {
                // cancelled at the moment of the grant: give the hold back, so that nothing stays held
                try {
                    handle.close();
                } catch (RuntimeException e) {
                    log.warn("Lock '{}' on {}: could not release the hold granted to a cancelled acquisition: {}",
                            name, store.address(), detail(e));
                }
            }
        }

        /** Not acquired: what acquireFresh's clean-up does for a thread, and the future told why. */
        private void giveUp(Outcome outcome, Throwable failure) {
            finished = true;
            leaveWaiting();
            if (inGate) {
                if (waited) {
                    abandonQuietly(name, storeHold);
                }
                releaseHanded(entry);
                entry.gate.leave();
            }
            if (entry.isSubscribed() && !entry.gate.hasQueued()) {
                entry.unsubscribe();
            }
            releaseRef(entry);
            if (watch != null) {
                watch.notGranted(outcome, time.nanoTime(), failure);
            }
            future.completeExceptionally(failure != null ? failure : new CancellationException());
        }

        private void leaveWaiting() {
            if (inGate) {
                entry.asyncWaiter = null;
            }
            cancelTimer();
            if (deadlineTimer != null) {
                deadlineTimer.cancel(false);
            }
        }

        private void cancelTimer() {
            if (timer != null) {
                timer.cancel(false);
                timer = null;
            }
        }

        private TimeoutException timedOut() {
            return new TimeoutException("Lock '" + name + "' on " + store.address() + " was not acquired within "
                    + millis(request.waitNanos) + " ms");
        }

        /** Runs {@code task} after {@code nanos} on the scheduler, or now if the provider is closing. */
        private ScheduledFuture<?> later(Runnable task, long nanos) {
            try {
                return scheduler.schedule(task, Math.max(0, nanos), TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException closing) {
                task.run();
                return null;
            }
        }
    }

    /** The name prefix of the threads of {@link #asyncExecutor()}. */
    private String asyncThreadPrefix() {
        return "locksmith-" + clientId.substring(0, 8) + "-async-";
    }

    /** The executor that runs asynchronous acquisitions' store calls; made on first use. */
    private Executor asyncExecutor() {
        ThreadPoolExecutor executor = asyncExecutor;
        if (executor == null) {
            synchronized (this) {
                executor = asyncExecutor;
                if (executor == null) {
                    if (closed.get()) {
                        throw new RejectedExecutionException("closed");
                    }
                    String prefix = asyncThreadPrefix();
                    AtomicInteger threads = new AtomicInteger();
                    executor = new ThreadPoolExecutor(ASYNC_THREADS, ASYNC_THREADS, 30, TimeUnit.SECONDS,
                            new LinkedBlockingQueue<>(), r -> {
                                Thread t = new Thread(r, prefix + threads.incrementAndGet());
                                t.setDaemon(true);
                                return t;
                            });
                    executor.allowCoreThreadTimeOut(true);
                    asyncExecutor = executor;
                }
            }
        }
        return executor;
    }

    /** A handle's fencing token, checked: the hold must still be held and within its lease. */
    long tokenOf(Hold hold) {
        if (hold.isValid(time.nanoTime())) {
            return hold.token;
        }
        leaseOver(hold, "lease of " + millis(hold.leaseNanos) + " ms ended before it was renewed");
        throw notReleased(hold);
    }

    /** Whether a hold is held and within its lease now. */
    boolean isValid(Hold hold) {
        return hold.isValid(time.nanoTime());
    }

    /**
     * A future told of the hold's loss (see {@link LockHandle#whenLost()}): a view of the hold's own, so that a
     * caller completing or cancelling it touches nobody else's.
     */
    CompletableFuture<LockLostException> lossFuture(Hold hold) {
        CompletableFuture<LockLostException> view = new CompletableFuture<>();
        hold.lossFuture(store.address()).whenComplete((loss, ended) -> {
            if (ended == null) {
                view.complete(loss);
            } else {
                view.cancel(false);
            }
        });
        return view;
    }

    // ---------------------------------------------------------------- release

    void release(String name, boolean shared) {
        checkOpen();
        Thread me = Thread.currentThread();
        LockEntry entry = entries.get(shared ? readKey(name, me) : name);
        Hold hold = entry == null ? null : entry.hold;
        if (hold == null || hold.owner != me) {
            if (entry != null && retryUnconfirmedRelease(entry, me)) {
                return;
            }
            throw notHeldOrLost(entry, me, name, "unlock");
        }
        if (!hold.isValid(time.nanoTime())) {
            leaseOver(hold, "lease of " + millis(hold.leaseNanos) + " ms ended before it was renewed");
            throw notHeldOrLost(entry, me, name, "unlock");
        }
        if (hold.count > 1) {
            hold.count--;
            return;
        }
        releaseHold(hold);
    }

    /**
     * Releases a handle-owned hold, from any thread; the handle calls this once, or again after a release whose
     * outcome was unknown.
     *
     * @throws LockLostException if the hold was lost first
     * @throws LockBackendException if the store could not be told; closing the handle again retries
     */
    void releaseHandle(Hold hold) {
        checkOpen();
        @SuppressWarnings("unchecked") // every pending release of this provider is of its store's holds
        PendingReleases.Pending<H> pending = (PendingReleases.Pending<H>) hold.unconfirmed;
        if (pending != null) {
            confirmRelease(hold.entry.name, pending);
            return;
        }
        if (!hold.isValid(time.nanoTime())) {
            leaseOver(hold, "lease of " + millis(hold.leaseNanos) + " ms ended before it was renewed");
            throw notReleased(hold);
        }
        releaseHold(hold);
    }

    /** Releases the last acquisition of {@code hold} in the store: the common end of unlock() and a handle's close. */
    private void releaseHold(Hold hold) {
        LockEntry entry = hold.entry;
        if (handsOver && !entry.shared && handedOver(hold)) {
            return;
        }
        String name = entry.name;
        synchronized (hold) {
            if (hold.state != Hold.State.HELD) {
                throw notReleased(hold);
            }
            hold.releasing = true;
        }
        boolean released;
        boolean retried = false;
        long start = time.nanoTime();
        // an interrupted thread must still be able to unlock: hide the flag from the store client
        boolean interrupted = Thread.interrupted();
        try {
            try {
                released = store.release(storeHold(hold));
            } catch (LockBackendException e) {
                if (!Thread.interrupted()) {
                    throw e;
                }
                // an interrupt that landed during the call made the client give up; unlock() ignores it: retry once,
                // knowing that the first attempt may have gone through
                interrupted = true;
                retried = true;
                released = store.release(storeHold(hold));
            }
        } catch (RuntimeException e) {
            backendFailed(name, "release", e);
            throw releaseUnconfirmed(hold, start, e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        // A retried release that finds nothing means the earlier, interrupted attempt went through.
        boolean ok = released || retried;
        boolean lostMeanwhile;
        synchronized (hold) {
            hold.releasing = false;
            lostMeanwhile = hold.state == Hold.State.LOST;
            if (!lostMeanwhile) {
                hold.state = ok ? Hold.State.RELEASED : Hold.State.LOST;
                if (!ok) {
                    hold.lossReason = "the store no longer had it when it was released (expired or deleted)";
                }
            }
        }
        if (lostMeanwhile) {
            // The renewer gave up on the hold while our release was on the wire and left the clean-up to us.
            cleanupLost(hold);
            if (ok) {
                forgetLoss(entry, hold.owner);
                return;
            }
            throw notReleased(hold);
        }
        if (!ok) {
            log.warn("Lock '{}' on {} lost by {} (token {}): {}", name, store.address(), hold.ownerName(),
                    hold.token, hold.lossReason());
            holdEnded(hold, HoldEnd.LOST, hold.lossReason());
            notifyLost(hold);
            finish(hold);
            throw lostException(hold);
        }
        holdEnded(hold, HoldEnd.RELEASED, null);
        finish(hold);
    }

    /**
     * Ends {@code hold} by handing it to the next owner in the gate, when one waits: the store keeps the hold until
     * that owner's attempt replaces it with its own grant in one call ({@link LockStore#takeOver}), so the lock
     * passes between two owners of this provider in one round trip instead of two (the release and the next
     * acquisition), and no other client can take it in between. That grant obeys the claims of other providers'
     * waiters as any grant does, so it never costs them their turn: a refused one releases the hold instead. The
     * owner's unlock() returns without a store call; should the hand-over fail, the provider releases the hold in
     * the background, as after a release whose outcome is unknown. Not while the provider keeps read holds: a write
     * hold whose owner took the read lock under it must reach the store's release.
     *
     * @return false if nobody waits (or the hold is no longer held): release it in the store
     */
    private boolean handedOver(Hold hold) {
        LockEntry entry = hold.entry;
        if (!entry.gate.mayHaveQueued() || readEntries.get() > 0) {
            return false;
        }
        boolean handed = entry.gate.handTo(() -> {
            synchronized (hold) {
                if (hold.state != Hold.State.HELD) {
                    return false;
                }
                hold.state = Hold.State.RELEASED;
            }
            unregister(hold);
            entry.hold = null;
            entry.hand(new LockEntry.Handed(hold.storeHold, hold.validUntil));
            return true;
        });
        if (!handed) {
            return false;
        }
        holdEnded(hold, HoldEnd.RELEASED, null);
        releaseRef(entry);
        hold.settleLossFuture(store.address());
        return true;
    }

    /** Releases the hold handed to the calling owner of {@code entry}'s gate, which leaves without an attempt. */
    private void releaseHanded(LockEntry entry) {
        LockEntry.Handed handed = entry.takeHanded();
        if (handed != null) {
            releaseQuietly(entry.name, handedHold(handed), handed.validUntil(), "handed to an owner that left");
        }
    }

    @SuppressWarnings("unchecked") // only this provider's own store holds are handed over
    private H handedHold(LockEntry.Handed handed) {
        return (H) handed.storeHold();
    }

    /** Why {@code hold} cannot be released: lost (and, for a thread, the loss reported now), or not held. */
    private RuntimeException notReleased(Hold hold) {
        if (hold.owner instanceof Thread thread) {
            return notHeldOrLost(hold.entry, thread, hold.entry.name, "unlock");
        }
        synchronized (hold) {
            if (hold.state != Hold.State.LOST) {
                return new IllegalStateException("Lock '" + hold.entry.name + "' on " + store.address()
                        + ": the handle's hold (token " + hold.token + ") was already released");
            }
        }
        return lostException(hold);
    }

    /**
     * A release whose outcome is unknown: the store may have applied it and lost the answer, so the lock may
     * already be free and another client may hold it. The owner therefore no longer holds the lock: it is not
     * renewed, it cannot re-enter, and the next local owner may go to the store (which answers busy until the
     * release lands, since every hold has an owner id of its own). The provider retries the release in the
     * background until it is answered or the lease has ended; the owner's own retry (unlock() again, or closing
     * the handle again) stays allowed.
     */
    private LockBackendException releaseUnconfirmed(Hold hold, long start, RuntimeException e) {
        LockEntry entry = hold.entry;
        String name = entry.name;
        boolean lostMeanwhile;
        synchronized (hold) {
            hold.releasing = false;
            lostMeanwhile = hold.state == Hold.State.LOST;
            if (!lostMeanwhile) {
                hold.state = Hold.State.RELEASED;
            }
        }
        // what the store may still keep: until the lease ends, plus a renewal applied late (one operation timeout)
        long keptUntil = hold.validUntil + options.operationTimeout().toNanos();
        PendingReleases.Pending<H> pending = releases.add(name, storeHold(hold), keptUntil);
        String message = "Lock '" + name + "' on " + store.address() + ": release failed after "
                + millis(time.nanoTime() - start) + " ms (operation timeout " + options.operationTimeout().toMillis()
                + " ms) and may or may not have been applied; the " + (hold.ownedByThread() ? "thread" : "handle")
                + " no longer holds the lock, and the provider retries the release in the background until it is "
                + "confirmed or the lease ends: " + detail(e);
        if (lostMeanwhile) {
            // The lease ended unrenewed while our release was on the wire: a real loss, already reported.
            cleanupLost(hold);
            return new LockBackendException(message, e);
        }
        holdEnded(hold, HoldEnd.RELEASE_UNCONFIRMED, detail(e));
        hold.settleLossFuture(store.address());
        unregister(hold);
        entry.hold = null;
        if (hold.owner instanceof Thread thread) {
            // the record of the unconfirmed release takes over the hold's reference on the entry
            entry.unconfirmed.put(thread, pending);
        } else {
            hold.unconfirmed = pending;
        }
        entry.gate.leave();
        if (!hold.ownedByThread()) {
            releaseRef(entry);
        }
        return new LockBackendException(message, e);
    }

    /**
     * The thread's own retry of an unlock() whose release was unconfirmed: done if the background retry has
     * confirmed it, otherwise one more attempt now. Never reports a loss: the thread released the lock.
     *
     * @return false if the thread has no unconfirmed release of this lock
     */
    private boolean retryUnconfirmedRelease(LockEntry entry, Thread me) {
        @SuppressWarnings("unchecked") // every pending release of this provider is of its store's holds
        PendingReleases.Pending<H> pending = (PendingReleases.Pending<H>) entry.unconfirmed.remove(me);
        if (pending == null) {
            return false;
        }
        try {
            confirmRelease(entry.name, pending);
        } catch (LockBackendException e) {
            entry.unconfirmed.put(me, pending);
            throw e;
        }
        releaseRef(entry);
        return true;
    }

    /** One more attempt at an unconfirmed release, unless the background retry has confirmed it meanwhile. */
    private void confirmRelease(String name, PendingReleases.Pending<H> pending) {
        if (pending.isDone()) {
            return;
        }
        long start = time.nanoTime();
        try {
            releases.attempt(pending);
        } catch (RuntimeException e) {
            throw new LockBackendException("Lock '" + name + "' on " + store.address() + ": release failed again "
                    + "after " + millis(time.nanoTime() - start) + " ms; the lock is not held any more, and the "
                    + "provider keeps retrying the release in the background: " + detail(e), e);
        }
    }

    /** Drops the thread's record of an unconfirmed release of this lock, if any (the release goes on). */
    private void forgetUnconfirmedRelease(LockEntry entry, Object owner) {
        if (owner instanceof Thread thread && entry.unconfirmed.remove(thread) != null) {
            releaseRef(entry);
        }
    }

    /** Clean-up after a release: unregister, free the gate for the next local owner, drop the reference. */
    private void finish(Hold hold) {
        LockEntry entry = hold.entry;
        unregister(hold);
        entry.hold = null;
        entry.gate.leave();
        releaseRef(entry);
        hold.settleLossFuture(store.address());
    }

    private void unregister(Hold hold) {
        renewing.remove(hold);
        synchronized (hold) {
            if (hold.expiry != null) {
                hold.expiry.cancel(false);
                hold.expiry = null;
            }
        }
    }

    /** Releases a hold nobody uses; if that fails, the release is retried in the background. */
    private void releaseQuietly(String name, H storeHold, long validUntil, String why) {
        boolean interrupted = Thread.interrupted();
        try {
            store.release(storeHold);
        } catch (RuntimeException e) {
            backendFailed(name, "release", e);
            log.warn("Lock '{}' on {}: could not release ({}); retrying in the background: {}", name,
                    store.address(), why, detail(e));
            releases.add(name, storeHold, validUntil + options.operationTimeout().toNanos());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Tells a queueing store that we stopped waiting; failures only cost the store a stale queue entry. */
    private void abandonQuietly(String name, H storeHold) {
        boolean interrupted = Thread.interrupted();
        try {
            store.abandon(storeHold);
        } catch (RuntimeException e) {
            backendFailed(name, "abandon", e);
            log.warn("Lock '{}' on {}: could not withdraw from the wait: {}", name, store.address(), detail(e));
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    // ---------------------------------------------------------------- loss

    /**
     * Marks a hold lost once: the owner's next unlock() reports it, the listener is told once, and the next
     * local thread may enter, unless the owner's release is on the wire, in which case the releasing thread
     * cleans up when it returns.
     */
    boolean markLost(Hold hold, String reason) {
        return markLost(hold, reason, false, false);
    }

    /**
     * The machinery's clock ended {@code hold}: marked lost, and the store told, since it may still keep the hold
     * (a ZooKeeper node, a row lock of an open transaction) while nothing renews it any more.
     */
    private void leaseOver(Hold hold, String reason) {
        markLost(hold, reason, false, true);
    }

    /** Tells the store that the machinery ended {@code storeHold}'s lease; a failure only costs a log line. */
    private void endLease(String name, H storeHold) {
        try {
            store.leaseEnded(storeHold);
        } catch (RuntimeException e) {
            backendFailed(name, "leaseEnded", e);
            log.warn("Lock '{}' on {}: the store could not end the hold whose lease ended: {}", name,
                    store.address(), detail(e));
        }
    }

    /**
     * @param leaseEnded whether the machinery's clock ended the hold: the store is told before the next local
     *     thread may enter, so that it does not find the store still keeping the ended hold
     */
    private boolean markLost(Hold hold, String reason, boolean unlessReleasing, boolean leaseEnded) {
        boolean deferred;
        synchronized (hold) {
            if (hold.state != Hold.State.HELD || (unlessReleasing && hold.releasing)) {
                return false;
            }
            hold.state = Hold.State.LOST;
            hold.lossReason = reason;
            deferred = hold.releasing;
            hold.cleanupDeferred = deferred;
            recordLoss(hold);
        }
        log.warn("Lock '{}' on {} lost by {} (token {}): {}", hold.entry.name, store.address(), hold.ownerName(),
                hold.token, reason);
        holdEnded(hold, HoldEnd.LOST, reason);
        notifyLost(hold);
        if (leaseEnded) {
            endLease(hold.entry.name, storeHold(hold));
        }
        if (!deferred) {
            cleanupLost(hold);
        }
        return true;
    }

    /**
     * A renewal found the hold missing in the store. If the owner's release is on the wire, that release may be
     * what removed it: the release's own answer decides (it reports the loss itself if it finds nothing), so a
     * hold that was simply unlocked is never reported lost. Otherwise the hold is lost.
     */
    private void markGone(Hold hold) {
        markLost(hold, "the store no longer had it when renewing (expired or deleted)", true, false);
    }

    /**
     * Gives up a hold whose owner thread ended without unlocking: released in the store first, while the gate
     * still keeps the provider's other threads out (they would share the owner id).
     */
    private void abandonDeadHold(Hold hold) {
        String reason = "its owner " + hold.ownerName() + " ended without unlocking";
        synchronized (hold) {
            if (hold.state != Hold.State.HELD) {
                return;
            }
            hold.state = Hold.State.LOST;
            hold.lossReason = reason;
        }
        log.warn("Lock '{}' on {} released: {}", hold.entry.name, store.address(), reason);
        releaseQuietly(hold.entry.name, storeHold(hold), hold.validUntil, "owner thread ended");
        holdEnded(hold, HoldEnd.LOST, reason);
        notifyLost(hold);
        cleanupLost(hold);
    }

    /** Under the hold's monitor: the lost record takes over the hold's reference on the entry. */
    private static void recordLoss(Hold hold) {
        if (hold.owner instanceof Thread thread && thread.isAlive()) {
            hold.entry.lost.put(thread, hold);
            hold.recorded = true;
        }
    }

    /** After a loss: unregister and let the next local thread in. */
    private void cleanupLost(Hold hold) {
        LockEntry entry = hold.entry;
        unregister(hold);
        if (entry.hold == hold) {
            entry.hold = null;
        }
        boolean recorded;
        synchronized (hold) {
            recorded = hold.recorded;
        }
        entry.gate.leave();
        if (!recorded) {
            releaseRef(entry);
        }
    }

    private void notifyLost(Hold hold) {
        hold.settleLossFuture(store.address());
        LockListener listener = options.listener();
        String name = hold.entry.name;
        String reason = hold.lossReason();
        Runnable call = () -> {
            try {
                listener.onLost(name, reason);
            } catch (RuntimeException e) {
                log.warn("LockListener failed for lost lock '{}'", name, e);
            }
        };
        try {
            scheduler.execute(call);
        } catch (RejectedExecutionException closing) {
            call.run();
        }
    }

    /** Drops the unreported loss of {@code owner} (a thread), if any, and its reference on the entry. */
    private void forgetLoss(LockEntry entry, Object owner) {
        if (owner instanceof Thread thread && entry.lost.remove(thread) != null) {
            releaseRef(entry);
        }
    }

    private IllegalMonitorStateException notHeldOrLost(LockEntry entry, Thread me, String name, String what) {
        Hold lost = entry == null ? null : entry.lost.remove(me);
        if (lost != null) {
            releaseRef(entry);
            return lostException(lost);
        }
        return new IllegalMonitorStateException("Lock '" + name + "' on " + store.address()
                + " is not held by thread '" + me.getName() + "' (" + what + ")");
    }

    private LockLostException lostException(Hold lost) {
        return new LockLostException(lost.lossMessage(store.address()));
    }

    // ---------------------------------------------------------------- queries

    /** The current thread's valid hold of {@code name}, or null; notices an ended lease on the way. */
    Hold heldByCurrentThread(String name, boolean shared) {
        LockEntry entry = entries.get(shared ? readKey(name, Thread.currentThread()) : name);
        Hold hold = entry == null ? null : entry.hold;
        if (hold == null || hold.owner != Thread.currentThread()) {
            return null;
        }
        if (hold.isValid(time.nanoTime())) {
            return hold;
        }
        leaseOver(hold, "lease of " + millis(hold.leaseNanos) + " ms ended before it was renewed");
        return null;
    }

    long fencingToken(String name, boolean shared) {
        checkOpen();
        Hold hold = heldByCurrentThread(name, shared);
        if (hold != null) {
            return hold.token;
        }
        Thread me = Thread.currentThread();
        LockEntry entry = entries.get(shared ? readKey(name, me) : name);
        Hold lost = entry == null ? null : entry.lost.get(me);
        if (lost != null) {
            throw lostException(lost);
        }
        throw new IllegalMonitorStateException("Lock '" + name + "' on " + store.address()
                + " is not held by thread '" + me.getName() + "' (fencingToken)");
    }

    boolean isLocked(String name) {
        checkOpen();
        long start = time.nanoTime();
        try {
            return store.isLocked(name);
        } catch (LockBackendException e) {
            backendFailed(name, "isLocked", e);
            throw new LockBackendException("Lock '" + name + "' on " + store.address() + ": isLocked failed after "
                    + millis(time.nanoTime() - start) + " ms: " + detail(e), e);
        }
    }

    @Override
    public LockInfo inspect(String name) {
        LockNames.check(name);
        checkOpen();
        long start = time.nanoTime();
        LockInfo info;
        try {
            info = store.inspect(name);
        } catch (LockBackendException e) {
            backendFailed(name, "inspect", e);
            throw new LockBackendException("Lock '" + name + "' on " + store.address() + ": inspect failed after "
                    + millis(time.nanoTime() - start) + " ms: " + detail(e), e);
        }
        return withOwnLease(info);
    }

    /**
     * The store's view of a lock, with the lease this provider keeps for its own hold where the store keeps none
     * (a ZooKeeper node, a row lock of an open transaction): the hold is ours if the store names its fencing token.
     */
    private LockInfo withOwnLease(LockInfo info) {
        if (!info.isLocked() || info.leaseRemaining().isPresent() || info.fencingToken().isEmpty()) {
            return info;
        }
        LockEntry entry = entries.get(info.name());
        Hold hold = entry == null ? null : entry.hold;
        if (hold == null || !hold.isHeld() || hold.token != info.fencingToken().getAsLong()) {
            return info;
        }
        Duration left = Duration.ofNanos(Math.max(0, hold.validUntil - time.nanoTime()));
        return LockInfo.held(info.name(), info.owner().orElseThrow(), info.acquiredAt().orElse(null), left,
                hold.token);
    }

    @Override
    public boolean forceRelease(String name) {
        LockNames.check(name);
        checkOpen();
        long start = time.nanoTime();
        try {
            boolean released = store.forceRelease(name);
            log.warn("Lock '{}' on {} forcibly released by client {} (it was {})", name, store.address(), clientId,
                    released ? "held" : "free");
            return released;
        } catch (LockBackendException e) {
            backendFailed(name, "forceRelease", e);
            throw new LockBackendException("Lock '" + name + "' on " + store.address() + ": forced release failed "
                    + "after " + millis(time.nanoTime() - start) + " ms: " + detail(e), e);
        }
    }

    @Override
    public OptionalInt semaphorePermits(String name) {
        LockNames.check(name);
        checkOpen();
        long start = time.nanoTime();
        try {
            return store.semaphorePermits(name);
        } catch (LockBackendException e) {
            backendFailed(name, "semaphorePermits", e);
            throw new LockBackendException("Semaphore '" + name + "' on " + store.address() + ": reading its permit "
                    + "count failed after " + millis(time.nanoTime() - start) + " ms: " + detail(e), e);
        }
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        SlotSemaphore.checkPermits(this, name, permits);
        checkOpen();
        long start = time.nanoTime();
        try {
            store.setSemaphorePermits(name, permits);
        } catch (LockBackendException e) {
            backendFailed(name, "setSemaphorePermits", e);
            throw new LockBackendException("Semaphore '" + name + "' on " + store.address() + ": setting its permit "
                    + "count to " + permits + " failed after " + millis(time.nanoTime() - start) + " ms (it may be "
                    + "the old count or the new one): " + detail(e), e);
        }
        log.warn("Semaphore '{}' on {} set to {} permits by client {}", name, store.address(), permits, clientId);
    }

    // ---------------------------------------------------------------- renewal

    /** One renewal round; package-private so tests can run a round without waiting for the scheduler. */
    void renewAll() {
        try {
            renewRound();
        } catch (Throwable t) {
            // never let one bad round cancel the periodic task
            log.error("Lease renewal round on {} failed unexpectedly", store.address(), t);
        }
    }

    private void renewRound() {
        if (renewing.isEmpty() || closed.get()) {
            return;
        }
        Round round = new Round(time.nanoTime());
        List<Hold> batch = new ArrayList<>();
        int size = Math.max(1, store.renewBatchSize());
        for (Hold hold : renewing) {
            if (hold.owner instanceof Thread thread && !thread.isAlive()) {
                abandonDeadHold(hold);
                continue;
            }
            batch.add(hold);
            if (batch.size() == size) {
                renew(batch, round);
                batch = new ArrayList<>();
            }
        }
        if (!batch.isEmpty()) {
            renew(batch, round);
        }
        if (round.failure != null) {
            log.warn("Renewing leases on {} failed: {}", store.address(), detail(round.failure));
        }
        if (observer != null) {
            try {
                observer.renewalRound(store.address(), round.holds, round.renewed, round.gone,
                        time.nanoTime() - round.start, round.failure);
            } catch (RuntimeException e) {
                log.warn("Lock observer failed in renewalRound; the locks are not affected", e);
            }
        }
    }

    /** What one renewal round did. */
    private static final class Round {
        final long start;
        int holds;
        int renewed;
        int gone;
        /** The first failed call of the round; the later batches are not sent. */
        RuntimeException failure;

        Round(long start) {
            this.start = start;
        }
    }

    /**
     * Renews one batch, or, once a batch of this round has failed, only accounts for the failure: a store that
     * is down would otherwise cost one operation timeout per batch and starve expiries and listeners.
     */
    private void renew(List<Hold> batch, Round round) {
        RenewResult<H> result = null;
        long sent = time.nanoTime();
        round.holds += batch.size();
        if (round.failure == null) {
            List<H> holds = new ArrayList<>(batch.size());
            for (Hold hold : batch) {
                holds.add(storeHold(hold));
            }
            try {
                result = store.renew(holds, options.leaseTime());
            } catch (RuntimeException e) {
                round.failure = e;
                backendFailed(null, "renew", e);
            }
        }
        if (result == null) {
            long now = time.nanoTime();
            for (Hold hold : batch) {
                if (now - hold.validUntil >= 0) {
                    leaseOver(hold, "renewal failed until its lease of " + millis(hold.leaseNanos) + " ms ended: "
                            + detail(round.failure));
                } else {
                    scheduleValidityCheck(hold);
                }
            }
            return;
        }
        Set<H> gone = result.gone();
        Set<H> kept = result.kept();
        long validUntil = sent + result.validFor().map(Duration::toNanos).orElse(options.leaseTime().toNanos());
        for (Hold hold : batch) {
            if (gone.contains(storeHold(hold))) {
                round.gone++;
                markGone(hold);
            } else if (kept.contains(storeHold(hold))) {
                // neither renewed nor gone: valid as long as it already was, unless the next round renews it
                scheduleValidityCheck(hold);
            } else if (sent - hold.validUntil >= 0) {
                // a renewal counts only within the hold's validity: one sent after it ended (a paused process, a
                // renewer held up) cannot revive a hold another client may have had meanwhile
                round.gone++;
                leaseOver(hold, "its lease of " + millis(hold.leaseNanos) + " ms ended before it was renewed");
            } else {
                round.renewed++;
                hold.extendTo(validUntil);
            }
        }
    }

    private void scheduleValidityCheck(Hold hold) {
        long delay = hold.validUntil - time.nanoTime();
        try {
            scheduler.schedule(() -> {
                if (hold.isHeld() && time.nanoTime() - hold.validUntil >= 0) {
                    leaseOver(hold, "renewal failed until its lease of " + millis(hold.leaseNanos) + " ms ended");
                }
            }, Math.max(0, delay), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closing) {
            // closing: close() releases the hold
        }
    }

    // ---------------------------------------------------------------- entries

    private LockEntry retain(String key, String name, boolean shared) {
        return entries.compute(key, (k, entry) -> {
            LockEntry e = entry;
            if (e == null) {
                e = new LockEntry(k, name, shared);
                if (shared) {
                    readEntries.incrementAndGet();
                }
            }
            e.refs++;
            return e;
        });
    }

    private void releaseRef(LockEntry entry) {
        boolean[] removed = {false};
        entries.computeIfPresent(entry.key, (key, current) -> {
            if (current != entry) {
                return current;
            }
            if (--current.refs == 0) {
                removed[0] = true;
                if (current.shared) {
                    readEntries.decrementAndGet();
                }
                return null;
            }
            return current;
        });
        if (removed[0]) {
            entry.unsubscribe();
        }
    }

    // ---------------------------------------------------------------- close

    private void checkOpen() {
        if (closed.get()) {
            throw closedException();
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException("LockProvider for " + store.address() + " (client " + clientId
                + ") is closed");
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        scheduler.shutdownNow();
        long budget = options.operationTimeout().toNanos() * 2;
        long start = time.nanoTime();
        int released = 0;
        int abandoned = 0;
        for (LockEntry entry : entries.values()) {
            // wake everyone queued or waiting on this name; they see the closed flag and throw
            entry.gate.breakOpen();
            entry.signal.release(POISON);
            entry.wake();
            LockEntry.Handed handed = entry.takeHanded();
            if (handed != null) {
                try {
                    store.release(handedHold(handed));
                } catch (RuntimeException e) {
                    log.warn("Closing {}: could not release lock '{}'; it frees itself when its lease ends: {}",
                            this, entry.name, detail(e));
                }
            }
            Hold hold = entry.hold;
            if (hold == null) {
                continue;
            }
            synchronized (hold) {
                if (hold.state != Hold.State.HELD) {
                    continue;
                }
                hold.state = Hold.State.RELEASED;
            }
            hold.settleLossFuture(store.address());
            if (time.nanoTime() - start > budget) {
                abandoned++;
                holdEnded(hold, HoldEnd.RELEASE_UNCONFIRMED, "provider closed: no time left to release it");
                continue;
            }
            try {
                store.release(storeHold(hold));
                released++;
                holdEnded(hold, HoldEnd.RELEASED, null);
            } catch (RuntimeException e) {
                abandoned++;
                holdEnded(hold, HoldEnd.RELEASE_UNCONFIRMED, "provider closed: " + detail(e));
                log.warn("Closing {}: could not release lock '{}'; it frees itself when its lease ends: {}",
                        this, entry.name, detail(e));
            }
        }
        releases.closing(start + budget);
        ThreadPoolExecutor async = asyncExecutor;
        if (async != null) {
            async.shutdown(); // after the entries woke every asynchronous run: each finds the provider closed
            // An attempt already at the store when the provider closed ends within the operation timeout; wait for
            // it before the store closes, so that a grant it brings back is given back through a store still open
            // rather than left to expire with its lease.
            // (Not when close() runs on one of those threads, from a callback of a future it completed.)
            if (!Thread.currentThread().getName().startsWith(asyncThreadPrefix())) {
                try {
                    async.awaitTermination(Math.max(0, start + budget - time.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        for (LockEntry entry : entries.values()) {
            entry.unsubscribe();
        }
        renewing.clear();
        try {
            store.close();
        } catch (RuntimeException e) {
            log.warn("Closing {}: the store did not close cleanly: {}", this, detail(e));
        }
        if (released > 0 || abandoned > 0) {
            log.info("Closed {}: released {} lock(s), left {} to expire with their lease", this, released,
                    abandoned);
        }
    }

    // ---------------------------------------------------------------- observer

    /** Reports the end of an observed hold; called once per hold, by whoever moved its state. */
    private void holdEnded(Hold hold, HoldEnd end, String reason) {
        ObservedAcquisition watch = hold.watch;
        if (watch != null) {
            watch.holdEnded(end, time.nanoTime(), reason);
        }
    }

    /** Tells the observer, if any, that a store call failed or its outcome is unknown. */
    void backendFailed(String name, String operation, RuntimeException failure) {
        if (observer == null) {
            return;
        }
        try {
            observer.backendFailed(store.address(), name, operation, failure);
        } catch (RuntimeException e) {
            log.warn("Lock observer failed in backendFailed; the lock is not affected", e);
        }
    }

    // ---------------------------------------------------------------- helpers

    private InterruptedException interruptedWith(String name, Exception cause) {
        InterruptedException e = new InterruptedException("interrupted while acquiring lock '" + name + "' on "
                + store.address());
        e.initCause(cause);
        return e;
    }

    private String waitLimit(Run run) {
        return run.timed ? " (wait limit " + millis(run.request.waitNanos) + " ms)" : "";
    }

    /**
     * What a store's failure says, for a message or log line that already names the lock and the store: without
     * the store's own address prefix ({@code "<address> - "}), which stores put on every {@link LockBackendException}
     * because some of theirs reach callers without the machinery (opening, closing). So each message carries one
     * prefix.
     */
    private String detail(Throwable failure) {
        String message = String.valueOf(failure.getMessage());
        String prefix = store.address() + " - ";
        return message.startsWith(prefix) ? message.substring(prefix.length()) : message;
    }

    static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    TimeSource time() {
        return time;
    }

    LockStore<H> store() {
        return store;
    }

    /** A release retried in the background gave up when the lease ended: the store may still keep the hold. */
    void releaseAbandoned(String name, H storeHold) {
        endLease(name, storeHold);
    }

    /** The store's own record of {@code hold}; every hold of this provider carries one of its store's. */
    @SuppressWarnings("unchecked")
    private H storeHold(Hold hold) {
        return (H) hold.storeHold;
    }

    ScheduledThreadPoolExecutor scheduler() {
        return scheduler;
    }

    /** A fresh owner id for one acquisition run; see {@link LockStore}. */
    private String newOwner() {
        return ownerPrefix + Long.toHexString(ownerSequence.incrementAndGet());
    }

    /** How many lock entries are alive, and how many of them are read holds' ({@code [all, read]}); for tests. */
    int[] entryCounts() {
        return new int[] {entries.size(), readEntries.get()};
    }

        /** How many releases whose outcome is unknown are still being retried; for tests. */
    int pendingReleases() {
        return releases.size();
    }

    /** Losses the store detects on its own. */
    private final class Events implements StoreEvents<H> {
        @Override
        public void holdLost(H storeHold, String reason) {
            // losses are rare: a scan of the live entries costs the hot path nothing, where an index would
            for (LockEntry entry : entries.values()) {
                Hold hold = entry.hold;
                if (hold != null && hold.storeHold == storeHold) {
                    markLost(hold, reason);
                    return;
                }
            }
        }

        @Override
        public void allHoldsLost(String reason) {
            for (LockEntry entry : entries.values()) {
                Hold hold = entry.hold;
                if (hold != null) {
                    markLost(hold, reason);
                }
            }
        }
    }

}
