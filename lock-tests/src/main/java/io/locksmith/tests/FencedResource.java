package io.locksmith.tests;

import java.util.Optional;
import java.util.OptionalLong;

/**
 * A stand-in for a storage service that protects itself with fencing tokens: it accepts a write only if its
 * token is at least the highest token it has already seen, so a holder whose lock ended without it noticing
 * cannot overwrite the work of a later holder.
 *
 * <pre>{@code
 * try (LockHandle held = lock.acquire()) {
 *     resource.writeOrThrow(held.fencingToken(), newValue);
 * }
 * }</pre>
 *
 * <p>Equal tokens are accepted because one hold may write several times. Thread-safe.
 *
 * @param <T> the type of the stored value
 */
public final class FencedResource<T> {

    private T value;
    private long highestToken;
    private boolean written;
    private long accepted;
    private long rejected;

    /** An empty resource that has seen no token yet. */
    public FencedResource() {
    }

    /**
     * Stores {@code newValue} if {@code token} is not below the highest token seen so far, and remembers the
     * token.
     *
     * @return true if the write was accepted, false if the token was stale
     */
    public synchronized boolean write(long token, T newValue) {
        if (written && token < highestToken) {
            rejected++;
            return false;
        }
        value = newValue;
        highestToken = token;
        written = true;
        accepted++;
        return true;
    }

    /**
     * Stores {@code newValue} like {@link #write}, but throws instead of returning false.
     *
     * @throws StaleTokenException if {@code token} is below the highest token seen so far
     */
    public void writeOrThrow(long token, T newValue) {
        long highest;
        synchronized (this) {
            if (write(token, newValue)) {
                return;
            }
            highest = highestToken;
        }
        throw new StaleTokenException(token, highest);
    }

    /** The last accepted value, if any write was accepted. */
    public synchronized Optional<T> read() {
        return Optional.ofNullable(value);
    }

    /** The highest token an accepted write carried, if any. */
    public synchronized OptionalLong highestToken() {
        return written ? OptionalLong.of(highestToken) : OptionalLong.empty();
    }

    /** How many writes were accepted. */
    public synchronized long acceptedWrites() {
        return accepted;
    }

    /** How many writes were rejected for a stale token. */
    public synchronized long rejectedWrites() {
        return rejected;
    }

    @Override
    public synchronized String toString() {
        return "FencedResource{highestToken=" + (written ? highestToken : "none") + ", accepted=" + accepted
                + ", rejected=" + rejected + '}';
    }

    /** A write to a {@link FencedResource} carried a token older than one the resource already accepted. */
    public static final class StaleTokenException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** The stale token of the rejected write. */
        private final long token;
        /** The highest token the resource had accepted. */
        private final long highestToken;

        /** An exception for a write with {@code token} after a write with {@code highestToken}. */
        public StaleTokenException(long token, long highestToken) {
            super("write rejected: fencing token " + token + " is older than token " + highestToken
                    + " already accepted");
            this.token = token;
            this.highestToken = highestToken;
        }

        /** The stale token of the rejected write. */
        public long token() {
            return token;
        }

        /** The highest token the resource had accepted. */
        public long highestToken() {
            return highestToken;
        }
    }
}
