package io.locksmith;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Observers called one after the other; one that throws is logged and does not keep the call from the others.
 */
final class CompositeLockObserver implements LockObserver {

    private static final Logger log = LoggerFactory.getLogger(CompositeLockObserver.class);

    private final LockObserver[] parts;

    CompositeLockObserver(LockObserver[] parts) {
        this.parts = parts;
    }

    @Override
    public AcquisitionObserver acquisitionStarted(String backend, String lockName) {
        List<AcquisitionObserver> started = new ArrayList<>(parts.length);
        for (LockObserver part : parts) {
            try {
                AcquisitionObserver observer = part.acquisitionStarted(backend, lockName);
                if (observer != null) {
                    started.add(observer);
                }
            } catch (RuntimeException e) {
                failed(part, e);
            }
        }
        if (started.isEmpty()) {
            return null;
        }
        return started.size() == 1 ? started.get(0) : new Acquisitions(started.toArray(new AcquisitionObserver[0]));
    }

    @Override
    public void backendFailed(String backend, String lockName, String operation, RuntimeException failure) {
        for (LockObserver part : parts) {
            try {
                part.backendFailed(backend, lockName, operation, failure);
            } catch (RuntimeException e) {
                failed(part, e);
            }
        }
    }

    @Override
    public void renewalRound(String backend, int holds, int renewed, int gone, long nanos, RuntimeException failure) {
        for (LockObserver part : parts) {
            try {
                part.renewalRound(backend, holds, renewed, gone, nanos, failure);
            } catch (RuntimeException e) {
                failed(part, e);
            }
        }
    }

    @Override
    public String toString() {
        return "LockObserver.composite" + Arrays.toString(parts);
    }

    private static void failed(Object part, RuntimeException e) {
        log.warn("Lock observer {} failed; the others were called", part, e);
    }

    /** The acquisition observers of the parts that followed one acquisition. */
    static final class Acquisitions implements AcquisitionObserver {
        private final AcquisitionObserver[] parts;

        Acquisitions(AcquisitionObserver[] parts) {
            this.parts = parts;
        }

        @Override
        public void acquisitionEnded(LockObserver.Outcome outcome, long waitedNanos, long fencingToken,
                Throwable failure) {
            for (AcquisitionObserver part : parts) {
                try {
                    part.acquisitionEnded(outcome, waitedNanos, fencingToken, failure);
                } catch (RuntimeException e) {
                    failed(part, e);
                }
            }
        }

        @Override
        public void holdEnded(LockObserver.HoldEnd end, long heldNanos, String reason) {
            for (AcquisitionObserver part : parts) {
                try {
                    part.holdEnded(end, heldNanos, reason);
                } catch (RuntimeException e) {
                    failed(part, e);
                }
            }
        }
    }
}
