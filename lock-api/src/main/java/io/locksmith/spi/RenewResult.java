package io.locksmith.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * What one {@link LockStore#renew} call found: the holds the store no longer keeps, the holds it could neither
 * renew nor declare gone (kept as they are: valid until their validity ends, unless a later round renews them),
 * and, where the store knows it better than the lease (Redlock subtracts clock drift), how long the renewed ones
 * stay valid.
 *
 * @param <H> the store's hold type
 */
public final class RenewResult<H> {

    private static final RenewResult<?> ALL_RENEWED = new RenewResult<>(Set.of(), Set.of(), null);

    private final Set<H> gone;
    private final Set<H> kept;
    private final Duration validFor;

    private RenewResult(Set<H> gone, Set<H> kept, Duration validFor) {
        this.gone = gone;
        this.kept = kept;
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
        return gone.isEmpty() ? allRenewed() : new RenewResult<>(Set.copyOf(gone), Set.of(), null);
    }

    /**
     * The store no longer keeps the holds in {@code gone}; the others are valid for {@code validFor}, counted
     * from when the call was made.
     */
    public static <H> RenewResult<H> gone(Set<H> gone, Duration validFor) {
        return new RenewResult<>(Set.copyOf(gone), Set.of(), Objects.requireNonNull(validFor, "validFor"));
    }

    /**
     * The store no longer keeps the holds in {@code gone}; those in {@code kept} were neither renewed nor found
     * gone (too few answers), so they stay valid only as long as they already were; the others are valid for
     * {@code validFor}, counted from when the call was made. A hold may be in one of the two sets at most.
     *
     * @throws IllegalArgumentException if a hold is in both sets
     */
    public static <H> RenewResult<H> of(Set<H> gone, Set<H> kept, Duration validFor) {
        for (H hold : kept) {
            if (gone.contains(hold)) {
                throw new IllegalArgumentException("a hold cannot be both gone and kept as it is: " + hold);
            }
        }
        return new RenewResult<>(Set.copyOf(gone), Set.copyOf(kept), Objects.requireNonNull(validFor, "validFor"));
    }

    /** The holds the store no longer keeps. */
    public Set<H> gone() {
        return gone;
    }

    /** The holds neither renewed nor found gone: their validity stays as it was. */
    public Set<H> kept() {
        return kept;
    }

    /** How long the renewed holds stay valid, counted from when the call was made, if not the lease. */
    public Optional<Duration> validFor() {
        return Optional.ofNullable(validFor);
    }

    @Override
    public String toString() {
        return "RenewResult{gone=" + gone.size() + (kept.isEmpty() ? "" : ", kept=" + kept.size()) + (validFor == null ? "" : ", validFor=" + validFor) + '}';
    }
}
