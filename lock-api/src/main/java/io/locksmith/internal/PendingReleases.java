package io.locksmith.internal;

import io.locksmith.spi.LockStore;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Releases whose outcome is unknown, retried in the background until the store answers or the hold has
 * certainly ended: a release whose answer was lost, an acquisition attempt that failed but may have been applied,
 * a hold given up while the store could not be reached.
 *
 * <p>Each pending release names the store's own hold, whose owner id no other hold ever uses, so a retry that lands after
 * the lock changed hands changes nothing. Retries run on the provider's scheduler thread, all due releases in one
 * pass, and a pass stops at the first failure: a store that is down costs one operation timeout per pass, not one
 * per pending release, and the renewals sharing the thread keep their turn. Passes back off like a polling waiter.
 */
final class PendingReleases<H> {

    private static final Logger log = LoggerFactory.getLogger(PendingReleases.class);

    private final StoreLockProvider<H> provider;
    private final Set<Pending<H>> pending = ConcurrentHashMap.newKeySet();
    // guarded by this
    private boolean scheduled;
    private Backoff backoff;

    PendingReleases(StoreLockProvider<H> provider) {
        this.provider = provider;
    }

    /**
     * Starts retrying the release of {@code storeHold} (a hold of {@code name}) in the background.
     *
     * @param keptUntil time source nanos after which the store certainly no longer keeps the hold: retrying stops
     */
    Pending<H> add(String name, H storeHold, long keptUntil) {
        Pending<H> release = new Pending<>(name, storeHold, keptUntil);
        pending.add(release);
        schedule();
        return release;
    }

    /** One attempt now; marks the release done when the store answers, throws when it does not. */
    void attempt(Pending<H> release) {
        store().release(release.storeHold);
        done(release);
    }

    int size() {
        return pending.size();
    }

    /** On close: one last attempt for each, until {@code deadline}; the rest end with their lease. */
    void closing(long deadline) {
        for (Pending<H> release : pending) {
            if (provider.time().nanoTime() - deadline >= 0) {
                break;
            }
            try {
                attempt(release);
            } catch (RuntimeException e) {
                break;
            }
        }
        if (!pending.isEmpty()) {
            log.info("Closing {}: {} release(s) with unknown outcome left to end with their lease", provider,
                    pending.size());
        }
        pending.clear();
    }

    private LockStore<H> store() {
        return provider.store();
    }

    private void done(Pending<H> release) {
        release.done = true;
        pending.remove(release);
    }

    private void schedule() {
        long delay;
        synchronized (this) {
            if (scheduled || pending.isEmpty()) {
                return;
            }
            if (backoff == null) {
                backoff = new Backoff(provider.options().minBackoff().toNanos(),
                        provider.options().maxBackoff().toNanos());
            }
            delay = backoff.next();
            scheduled = true;
        }
        try {
            provider.scheduler().schedule(this::pass, delay, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closing) {
            // the provider is closing: closing() makes the last attempts
            synchronized (this) {
                scheduled = false;
            }
        }
    }

    /** One pass over the due releases; stops at the first failure and schedules the next while any remain. */
    private void pass() {
        RuntimeException failure = null;
        Pending<H> failed = null;
        try {
            for (Pending<H> release : pending) {
                if (provider.time().nanoTime() - release.keptUntil >= 0) {
                    log.info("Lock '{}' on {}: stopped retrying the release of hold {}: its lease has ended",
                            release.name, store().address(), release.storeHold);
                    done(release);
                    provider.releaseAbandoned(release.name, release.storeHold);
                    continue;
                }
                try {
                    attempt(release);
                } catch (RuntimeException e) {
                    failure = e;
                    failed = release;
                    break;
                }
            }
        } finally {
            synchronized (this) {
                scheduled = false;
                if (failure == null) {
                    backoff = null;
                }
            }
        }
        if (failure != null) {
            provider.backendFailed(failed.name, "release", failure);
            log.debug("Lock '{}' on {}: release of hold {} still unconfirmed: {}", failed.name, store().address(),
                    failed.storeHold, failure.getMessage());
        }
        schedule();
    }

    /** One release whose outcome is not known yet. */
    static final class Pending<H> {
        final String name;
        final H storeHold;
        final long keptUntil;
        volatile boolean done;

        Pending(String name, H storeHold, long keptUntil) {
            this.name = name;
            this.storeHold = storeHold;
            this.keptUntil = keptUntil;
        }

        /** Whether the store answered the release (or the hold has certainly ended). */
        boolean isDone() {
            return done;
        }

        @Override
        public String toString() {
            return "PendingRelease{" + name + ", " + storeHold + (done ? ", done" : "") + '}';
        }
    }
}
