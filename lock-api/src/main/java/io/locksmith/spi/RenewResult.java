package io.locksmith.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * What one {@link LockStore#renew} call found: the holds the store no longer keeps and, where the store knows it
 * better than the lease (Redlock subtracts clock drift), how long the renewed ones stay valid.
 *
 * @param <H> the store's hold type
 */
public final class RenewResult<H> {

    private static final RenewResult<?> ALL_RENEWED = new RenewResult<>(Set.of(), null);

    private final Set<H> gone;
    private final Duration validFor;

    private RenewResult(Set<H> gone, Duration validFor) {
        this.gone = gone;
        this.validFor = validFor;
    }

    /** Every hold was renewed for the full lease, counted from when the call was made. */
    @SuppressWarnings("unchecked")
    public static <H> RenewResult<H> allRenewed() {
        return (RenewResult<H>) ALL_RENEWED;
    }

    /**
     * The store no longer keeps the holds in {@code gone} (the same objects it was given); the others were renewed
     * for the full lease, counted from when the call was made.
     */
    public static <H> RenewResult<H> gone(Set<H> gone) {
        return gone.isEmpty() ? allRenewed() : new RenewResult<>(Set.copyOf(gone), null);
    }

    /**
     * The store no longer keeps the holds in {@code gone}; the others are valid for {@code validFor}, counted
     * from when the call was made.
     */
    public static <H> RenewResult<H> gone(Set<H> gone, Duration validFor) {
        return new RenewResult<>(Set.copyOf(gone), Objects.requireNonNull(validFor, "validFor"));
    }

    /** The holds the store no longer keeps. */
    public Set<H> gone() {
        return gone;
    }

    /** How long the renewed holds stay valid, counted from when the call was made, if not the lease. */
    public Optional<Duration> validFor() {
        return Optional.ofNullable(validFor);
    }

    @Override
    public String toString() {
        return "RenewResult{gone=" + gone.size() + (validFor == null ? "" : ", validFor=" + validFor) + '}';
    }
}
