package io.locksmith.internal;

/**
 * What one call asks of {@link StoreLockProvider#acquire}: how long to wait, whether an interrupt aborts the wait,
 * and the lease to take. Immutable; a {@link StoreLock} keeps one per {@code Lock} method, so the usual calls
 * allocate nothing.
 */
final class AcquireRequest {

    /** The wait of a request that waits without limit. */
    private static final long FOREVER = -1;

    final long waitNanos;
    final boolean interruptible;
    final long leaseNanos;
    /** Whether the renewer keeps the lease alive; false for an explicit lease, which ends when it ends. */
    final boolean renewable;

    private AcquireRequest(long waitNanos, boolean interruptible, long leaseNanos, boolean renewable) {
        this.waitNanos = waitNanos;
        this.interruptible = interruptible;
        this.leaseNanos = leaseNanos;
        this.renewable = renewable;
    }

    /** {@code lock()} or {@code lockInterruptibly()}: wait as long as it takes. */
    static AcquireRequest untilAcquired(boolean interruptible, long leaseNanos, boolean renewable) {
        return new AcquireRequest(FOREVER, interruptible, leaseNanos, renewable);
    }

    /** {@code tryLock()}: one attempt, interrupts ignored. */
    static AcquireRequest once(long leaseNanos, boolean renewable) {
        return new AcquireRequest(0, false, leaseNanos, renewable);
    }

    /** {@code tryLock(time, unit)}: wait at most {@code waitNanos}, interruptibly. */
    static AcquireRequest within(long waitNanos, long leaseNanos, boolean renewable) {
        return new AcquireRequest(waitNanos, true, leaseNanos, renewable);
    }

    /**
     * An asynchronous acquisition: wait at most {@code waitNanos}, or without limit if negative; nothing to
     * interrupt (cancelling the future ends the wait).
     */
    static AcquireRequest async(long waitNanos, long leaseNanos, boolean renewable) {
        return new AcquireRequest(waitNanos < 0 ? FOREVER : waitNanos, false, leaseNanos, renewable);
    }

    /** Whether the request has a wait limit (a wait too long to add to a nanoTime reading has none). */
    boolean timed() {
        return waitNanos >= 0 && waitNanos < Long.MAX_VALUE / 4;
    }

    /** Whether the request will wait after a busy answer. */
    boolean waits() {
        return waitNanos != 0;
    }

    @Override
    public String toString() {
        return "AcquireRequest{wait=" + (timed() ? waitNanos + "ns" : "unlimited") + ", interruptible="
                + interruptible + ", lease=" + leaseNanos + "ns" + (renewable ? ", renewed" : "") + '}';
    }
}
