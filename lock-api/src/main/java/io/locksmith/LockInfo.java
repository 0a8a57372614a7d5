package io.locksmith;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What a store knows about one lock at one moment, for operators and tools: whether it is held, by which
 * client, since when, how much of its lease is left, and the last fencing token it issued.
 */
public final class LockInfo {

    private final String name;
    private final String owner;
    private final Instant acquiredAt;
    private final Duration leaseRemaining;
    private final Long fencingToken;

    private LockInfo(String name, String owner, Instant acquiredAt, Duration leaseRemaining, Long fencingToken) {
        this.name = Objects.requireNonNull(name, "name");
        this.owner = owner;
        this.acquiredAt = acquiredAt;
        this.leaseRemaining = leaseRemaining;
        this.fencingToken = fencingToken;
    }

    /** A lock nobody holds; {@code lastToken} is the last fencing token issued, or null if none or unknown. */
    public static LockInfo free(String name, Long lastToken) {
        return new LockInfo(name, null, null, null, lastToken);
    }

    /**
     * A held lock.
     *
     * @param owner the holder's client id as the store records it
     * @param acquiredAt when the hold began by the store's clock, or null if the store does not record it
     * @param leaseRemaining how long until the store frees it unless renewed, or null if it has no lease
     * @param token the fencing token of the hold, or null if unknown
     */
    public static LockInfo held(String name, String owner, Instant acquiredAt, Duration leaseRemaining, Long token) {
        return new LockInfo(name, Objects.requireNonNull(owner, "owner"), acquiredAt, leaseRemaining, token);
    }

    /** The lock's name. */
    public String name() {
        return name;
    }

    /** Whether somebody holds the lock. */
    public boolean isLocked() {
        return owner != null;
    }

    /** The holder's client id, if held. */
    public Optional<String> owner() {
        return Optional.ofNullable(owner);
    }

    /** When the current hold began, by the store's clock, if held and recorded. */
    public Optional<Instant> acquiredAt() {
        return Optional.ofNullable(acquiredAt);
    }

    /** How long until the store frees the lock unless its holder renews it, if held and leased. */
    public Optional<Duration> leaseRemaining() {
        return Optional.ofNullable(leaseRemaining);
    }

    /** The fencing token of the current hold, or the last one issued if free; empty if unknown. */
    public OptionalLong fencingToken() {
        return fencingToken == null ? OptionalLong.empty() : OptionalLong.of(fencingToken);
    }

    @Override
    public String toString() {
        return "LockInfo{'" + name + "', " + (owner == null ? "free" : "held by " + owner)
                + (acquiredAt == null ? "" : ", since " + acquiredAt)
                + (leaseRemaining == null ? "" : ", lease left " + leaseRemaining)
                + (fencingToken == null ? "" : ", token " + fencingToken) + '}';
    }
}
