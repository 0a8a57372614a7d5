package io.locksmith;

import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.Objects;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;

/**
 * How a {@link LockProvider} behaves: leases, renewal, key namespace, timeouts, retry backoff, loss listener,
 * observer and time source. Immutable; built and validated by {@link #builder()}.
 *
 * <pre>{@code
 * LockOptions options = LockOptions.builder()
 *         .leaseTime(Duration.ofSeconds(10))
 *         .namespace("orders")
 *         .listener((name, reason) -> log.warn("lost {}: {}", name, reason))
 *         .build();
 * }</pre>
 */
public final class LockOptions {

    /** Default lease of a hold: 30 seconds. */
    public static final Duration DEFAULT_LEASE_TIME = Duration.ofSeconds(30);
    /** Default namespace (key prefix) of every lock: {@value}. */
    public static final String DEFAULT_NAMESPACE = "locksmith";
    /** Default bound on one round trip to the store: 5 seconds. */
    public static final Duration DEFAULT_OPERATION_TIMEOUT = Duration.ofSeconds(5);
    /** Default first retry delay of polling backends: 10 ms. */
    public static final Duration DEFAULT_MIN_BACKOFF = Duration.ofMillis(10);
    /**
     * Default longest retry delay of polling backends: 100 ms. A waiter that polls (JDBC lease mode) competes for
     * the next turn with waiters of other processes; a ceiling of a second made it lose every race for it.
     */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMillis(100);

    private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
    private static final LockOptions DEFAULTS = builder().build();

    private final Duration leaseTime;
    private final boolean renewLeases;
    private final Duration renewInterval;
    private final Duration explicitRenewInterval;
    private final String namespace;
    private final Duration operationTimeout;
    private final Duration minBackoff;
    private final Duration maxBackoff;
    private final LockListener listener;
    private final LockObserver observer;
    private final TimeSource timeSource;
    private final UnaryOperator<LockStore<?>> storeWrapper;

    private LockOptions(Builder b) {
        this.leaseTime = b.leaseTime;
        this.renewLeases = b.renewLeases;
        this.explicitRenewInterval = b.renewInterval;
        this.renewInterval = b.renewInterval != null ? b.renewInterval : b.leaseTime.dividedBy(3);
        this.namespace = b.namespace;
        this.operationTimeout = b.operationTimeout;
        this.minBackoff = b.minBackoff;
        this.maxBackoff = b.maxBackoff;
        this.listener = b.listener;
        this.observer = b.observer;
        this.timeSource = b.timeSource;
        this.storeWrapper = b.storeWrapper;
    }

    /** The options every default applies to. */
    public static LockOptions defaults() {
        return DEFAULTS;
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these options. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.leaseTime = leaseTime;
        b.renewLeases = renewLeases;
        b.renewInterval = explicitRenewInterval;
        b.namespace = namespace;
        b.operationTimeout = operationTimeout;
        b.minBackoff = minBackoff;
        b.maxBackoff = maxBackoff;
        b.listener = listener;
        b.observer = observer;
        b.timeSource = timeSource;
        b.storeWrapper = storeWrapper;
        return b;
    }

    /** How long a hold lasts in the store unless renewed. */
    public Duration leaseTime() {
        return leaseTime;
    }

    /** Whether holds from {@code lock()} and {@code tryLock(time, unit)} are renewed while held. */
    public boolean renewLeases() {
        return renewLeases;
    }

    /** How often held leases are renewed; a third of the lease unless set. */
    public Duration renewInterval() {
        return renewInterval;
    }

    /** The prefix that keeps this application's locks apart from others' in a shared store. */
    public String namespace() {
        return namespace;
    }

    /** The longest one round trip to the store may take before it counts as failed. */
    public Duration operationTimeout() {
        return operationTimeout;
    }

    /** The first delay between attempts of backends that poll. */
    public Duration minBackoff() {
        return minBackoff;
    }

    /** The longest delay between attempts of backends that poll. */
    public Duration maxBackoff() {
        return maxBackoff;
    }

    /** Who is told when a hold is lost. */
    public LockListener listener() {
        return listener;
    }

    /** Who watches acquisitions, holds, failures and renewals; {@link LockObserver#NONE} if nobody. */
    public LockObserver observer() {
        return observer;
    }

    /** The monotonic clock used for lease and timeout arithmetic. */
    public TimeSource timeSource() {
        return timeSource;
    }

    /** What wraps the backend's store before the shared machinery uses it; by default nothing. */
    public UnaryOperator<LockStore<?>> storeWrapper() {
        return storeWrapper;
    }

    @Override
    public String toString() {
        return "LockOptions{leaseTime=" + leaseTime + ", renewLeases=" + renewLeases + ", renewInterval="
                + renewInterval + ", namespace='" + namespace + "', operationTimeout=" + operationTimeout
                + ", backoff=" + minBackoff + ".." + maxBackoff
                + (observer == LockObserver.NONE ? "" : ", observer=" + observer) + '}';
    }

    /** Builds {@link LockOptions}; {@link #build()} rejects inconsistent values naming them. */
    public static final class Builder {
        private Duration leaseTime = DEFAULT_LEASE_TIME;
        private boolean renewLeases = true;
        private Duration renewInterval;
        private String namespace = DEFAULT_NAMESPACE;
        private Duration operationTimeout = DEFAULT_OPERATION_TIMEOUT;
        private Duration minBackoff = DEFAULT_MIN_BACKOFF;
        private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
        private LockListener listener = LockListener.NONE;
        private LockObserver observer = LockObserver.NONE;
        private TimeSource timeSource = TimeSource.system();
        private UnaryOperator<LockStore<?>> storeWrapper = UnaryOperator.identity();

        private Builder() {
        }

        /** How long a hold lasts in the store unless renewed; positive, default 30 s. */
        public Builder leaseTime(Duration leaseTime) {
            this.leaseTime = Objects.requireNonNull(leaseTime, "leaseTime");
            return this;
        }

        /** Whether {@code lock()} holds are renewed while held; default true. */
        public Builder renewLeases(boolean renewLeases) {
            this.renewLeases = renewLeases;
            return this;
        }

        /** How often held leases are renewed; positive and shorter than the lease, default lease / 3. */
        public Builder renewInterval(Duration renewInterval) {
            this.renewInterval = Objects.requireNonNull(renewInterval, "renewInterval");
            return this;
        }

        /**
         * The key prefix of every lock: 1 to 64 characters of letters, digits, {@code _ . -}, starting with a
         * letter or digit; default {@value LockOptions#DEFAULT_NAMESPACE}.
         */
        public Builder namespace(String namespace) {
            this.namespace = Objects.requireNonNull(namespace, "namespace");
            return this;
        }

        /** The longest one round trip to the store may take; positive, default 5 s. */
        public Builder operationTimeout(Duration operationTimeout) {
            this.operationTimeout = Objects.requireNonNull(operationTimeout, "operationTimeout");
            return this;
        }

        /**
         * The delays between attempts of polling backends: exponential from {@code min} to {@code max}, with
         * jitter. Both positive, {@code min <= max}; default 10 ms to 100 ms.
         */
        public Builder retryBackoff(Duration min, Duration max) {
            this.minBackoff = Objects.requireNonNull(min, "min backoff");
            this.maxBackoff = Objects.requireNonNull(max, "max backoff");
            return this;
        }

        /** Who is told when a hold is lost; default nobody (losses are also logged). */
        public Builder listener(LockListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Who watches acquisitions, holds, failures and renewals (lock-micrometer's meters and observations are
         * one); default {@link LockObserver#NONE}, which costs nothing. Combine several with
         * {@link LockObserver#composite}.
         */
        public Builder observer(LockObserver observer) {
            this.observer = Objects.requireNonNull(observer, "observer");
            return this;
        }

        /** The monotonic clock for lease and timeout arithmetic; default {@link TimeSource#system()}. */
        public Builder timeSource(TimeSource timeSource) {
            this.timeSource = Objects.requireNonNull(timeSource, "timeSource");
            return this;
        }

        /**
         * Wraps the backend's {@link LockStore} before the shared machinery uses it: every call the machinery
         * makes to the store goes through the wrapper. For fault injection in tests (the contract kit makes
         * store calls fail, time out after being applied, or arrive late this way) and for instrumentation;
         * default none. The wrapper must forward every method it does not mean to change.
         */
        public Builder storeWrapper(UnaryOperator<LockStore<?>> storeWrapper) {
            this.storeWrapper = Objects.requireNonNull(storeWrapper, "storeWrapper");
            return this;
        }

        /**
         * Validates and builds the options.
         *
         * @throws IllegalArgumentException naming the first bad value
         */
        public LockOptions build() {
            requirePositive("leaseTime", leaseTime);
            if (leaseTime.toMillis() < 1) {
                throw new IllegalArgumentException("leaseTime must be at least 1 ms, got " + leaseTime);
            }
            if (renewInterval != null) {
                requirePositive("renewInterval", renewInterval);
                if (renewInterval.compareTo(leaseTime) >= 0) {
                    throw new IllegalArgumentException("renewInterval must be shorter than leaseTime " + leaseTime
                            + ", got " + renewInterval);
                }
            }
            if (!NAMESPACE.matcher(namespace).matches()) {
                throw new IllegalArgumentException("namespace must be 1 to 64 characters of letters, digits, "
                        + "'_', '.', '-', starting with a letter or digit, got '" + namespace + "'");
            }
            requirePositive("operationTimeout", operationTimeout);
            requirePositive("min backoff", minBackoff);
            requirePositive("max backoff", maxBackoff);
            if (minBackoff.compareTo(maxBackoff) > 0) {
                throw new IllegalArgumentException("min backoff " + minBackoff + " must not exceed max backoff "
                        + maxBackoff);
            }
            return new LockOptions(this);
        }

        private static void requirePositive(String what, Duration value) {
            if (value.isZero() || value.isNegative()) {
                throw new IllegalArgumentException(what + " must be positive, got " + value);
            }
        }
    }
}
