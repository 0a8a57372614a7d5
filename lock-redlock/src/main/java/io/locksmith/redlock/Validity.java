package io.locksmith.redlock;

/**
 * The Redlock time arithmetic, in nanoseconds of the provider's {@link io.locksmith.TimeSource}.
 *
 * <p>A hold taken (or renewed) by a round that started at {@code start} and whose quorum had answered at
 * {@code end} is valid until {@code start + lease - drift}: its remaining validity at {@code end} is
 * {@code lease - (end - start) - drift}. The keys were set with the full lease some time after {@code start},
 * so they live at least that long on each server's clock; {@code drift = lease / 100 + 2 ms} covers servers
 * whose clocks run up to 1 % faster than ours plus the granularity of Redis expiry. A round whose remaining
 * validity is not positive failed, however many servers said yes.
 */
final class Validity {

    private static final long DRIFT_CONSTANT_NANOS = 2_000_000L;

    private Validity() {
    }

    /** The clock drift allowance for {@code leaseNanos}: 1 % of it plus 2 ms. */
    static long drift(long leaseNanos) {
        return leaseNanos / 100 + DRIFT_CONSTANT_NANOS;
    }

    /** The remaining validity at {@code end} of a round that started at {@code start}; not positive = failed. */
    static long remaining(long leaseNanos, long start, long end) {
        return leaseNanos - (end - start) - drift(leaseNanos);
    }

    /** The time-source reading at which a hold from a round that started at {@code start} stops being valid. */
    static long validUntil(long leaseNanos, long start) {
        return start + validFor(leaseNanos);
    }

    /**
     * How long a hold from a round is valid counted from the round's start, which is how the machinery counts a
     * validity a store reports: {@code lease - drift}. At the round's end this leaves
     * {@link #remaining lease - elapsed - drift}.
     */
    static long validFor(long leaseNanos) {
        return leaseNanos - drift(leaseNanos);
    }

    /** The votes a decision needs out of {@code nodes}: a strict majority. */
    static int quorum(int nodes) {
        return nodes / 2 + 1;
    }
}
