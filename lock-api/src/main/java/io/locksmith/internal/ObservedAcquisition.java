package io.locksmith.internal;

import io.locksmith.AcquisitionObserver;
import io.locksmith.LockObserver;
import io.locksmith.LockObserver.HoldEnd;
import io.locksmith.LockObserver.Outcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One observed acquisition and the hold it leads to: passes the machinery's reports to the user's
 * {@link AcquisitionObserver} at most once each, in order, and keeps the observer's failures from the lock.
 *
 * <p>The outcome is reported on the acquiring thread, before the hold is published, so a loss detected on another
 * thread the next moment is reported after it; each hold's end is reported by whoever moved its state (see
 * {@link Hold}), which happens once.
 */
final class ObservedAcquisition {

    private static final Logger log = LoggerFactory.getLogger(ObservedAcquisition.class);

    private final AcquisitionObserver observer;
    private final String name;
    private final long start;
    /** Acquiring thread only, until the hold is published. */
    private boolean outcomeReported;
    private long grantedAt;

    ObservedAcquisition(AcquisitionObserver observer, String name, long start) {
        this.observer = observer;
        this.name = name;
        this.start = start;
    }

    /** Starts following an acquisition of {@code name}, or returns null if the observer follows nothing. */
    static ObservedAcquisition start(LockObserver observer, String backend, String name, long now) {
        try {
            AcquisitionObserver acquisition = observer.acquisitionStarted(backend, name);
            return acquisition == null ? null : new ObservedAcquisition(acquisition, name, now);
        } catch (RuntimeException e) {
            log.warn("Lock observer failed at the start of an acquisition of '{}'; the lock is not affected", name,
                    e);
            return null;
        }
    }

    void granted(long now, long token) {
        outcomeReported = true;
        grantedAt = now;
        try {
            observer.acquisitionEnded(Outcome.ACQUIRED, now - start, token, null);
        } catch (RuntimeException e) {
            failed("acquisitionEnded", e);
        }
    }

    /** Reports an acquisition that ended without a hold, unless its grant was already reported. */
    void notGranted(Outcome outcome, long now, Throwable failure) {
        if (outcomeReported) {
            return;
        }
        outcomeReported = true;
        try {
            observer.acquisitionEnded(outcome, now - start, -1, failure);
        } catch (RuntimeException e) {
            failed("acquisitionEnded", e);
        }
    }

    void holdEnded(HoldEnd end, long now, String reason) {
        try {
            observer.holdEnded(end, now - grantedAt, reason);
        } catch (RuntimeException e) {
            failed("holdEnded", e);
        }
    }

    private void failed(String call, RuntimeException e) {
        log.warn("Lock observer failed in {} of '{}'; the lock is not affected", call, name, e);
    }
}
