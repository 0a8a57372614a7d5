package io.locksmith.micrometer;

import io.locksmith.AcquisitionObserver;
import io.locksmith.LockObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.LongTaskTimer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * Micrometer meters of what a provider's locks do, fed by lock-api's {@link LockObserver} hook:
 *
 * <pre>{@code
 * LockOptions options = LockOptions.builder()
 *         .observer(LockMetrics.builder(registry).build())
 *         .build();
 * }</pre>
 *
 * <table>
 * <caption>Meters</caption>
 * <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 * <tr><td>{@code locksmith.acquisitions}</td><td>timer</td><td>backend, outcome, [lock]</td>
 *     <td>time from the start of an acquisition to its outcome: acquired, busy, timed_out, interrupted,
 *     failed</td></tr>
 * <tr><td>{@code locksmith.holds.active}</td><td>long task timer</td><td>backend, [lock]</td>
 *     <td>holds in progress and how long they have lasted</td></tr>
 * <tr><td>{@code locksmith.holds}</td><td>timer</td><td>backend, end, [lock]</td>
 *     <td>time held, by how the hold ended: released, release_unconfirmed, lost</td></tr>
 * <tr><td>{@code locksmith.losses}</td><td>counter</td><td>backend, [lock]</td><td>holds lost</td></tr>
 * <tr><td>{@code locksmith.backend.failures}</td><td>counter</td><td>backend, operation</td>
 *     <td>store calls that failed or whose outcome is unknown</td></tr>
 * <tr><td>{@code locksmith.locks.held}</td><td>gauge</td><td>backend</td><td>holds this application has now</td></tr>
 * <tr><td>{@code locksmith.renewals}</td><td>timer</td><td>backend, result</td>
 *     <td>renewal rounds: ok, or failed when a call of the round failed</td></tr>
 * </table>
 *
 * <p>{@code backend} is the kind of store ({@code redis}, {@code redlock}, {@code zookeeper},
 * {@code jdbc-postgresql-lease}, {@code local}, ...). Lock names become tags only through
 * {@link Builder#lockTag}: names are unbounded (an order id, a SKU) and every distinct tag value is a time series
 * kept for the life of the registry, so map them to a small set ({@code name -> name.split(":")[0]}).
 */
public final class LockMetrics implements LockObserver {

    /** The tag key of the lock-name mapping. */
    public static final String LOCK_TAG = "lock";

    private final MeterRegistry registry;
    private final Function<String, String> lockTag;
    private final Tags commonTags;
    private final Map<String, Backend> backends = new ConcurrentHashMap<>();

    private LockMetrics(Builder builder) {
        this.registry = builder.registry;
        this.lockTag = builder.lockTag;
        this.commonTags = builder.tags;
    }

    /** A builder binding the meters to {@code registry}. */
    public static Builder builder(MeterRegistry registry) {
        return new Builder(registry);
    }

    @Override
    public AcquisitionObserver acquisitionStarted(String backend, String lockName) {
        return new Acquisition(backend(backend).meters(lockName));
    }

    @Override
    public void backendFailed(String backend, String lockName, String operation, RuntimeException failure) {
        Backend meters = backend(backend);
        meters.failures.computeIfAbsent(operation, op -> Counter.builder("locksmith.backend.failures")
                .description("Store calls that failed or whose outcome is unknown")
                .tags(meters.tags).tag("operation", op)
                .register(registry)).increment();
    }

    @Override
    public void renewalRound(String backend, int holds, int renewed, int gone, long nanos, RuntimeException failure) {
        Backend meters = backend(backend);
        (failure == null ? meters.renewalsOk : meters.renewalsFailed).record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public String toString() {
        return "LockMetrics{" + registry.getClass().getSimpleName() + (lockTag == null ? "" : ", lock tags") + '}';
    }

    private Backend backend(String address) {
        Backend meters = backends.get(address);
        return meters != null ? meters : backends.computeIfAbsent(address, Backend::new);
    }

    /**
     * The kind of store an address names, for the {@code backend} tag: its scheme (or first word) in lower case,
     * without TLS suffix, with the mode for JDBC; one value per kind of store, not per server.
     */
    static String backendKind(String address) {
        int end = address.indexOf("://");
        if (end < 0) {
            end = 0;
            while (end < address.length() && Character.isLetterOrDigit(address.charAt(end))) {
                end++;
            }
        }
        String kind = address.substring(0, end).toLowerCase(Locale.ROOT).replace(':', '-');
        if (address.endsWith("[lease mode]")) {
            return kind + "-lease";
        }
        if (address.endsWith("[session mode]")) {
            return kind + "-session";
        }
        return switch (kind) {
            case "rediss" -> "redis";
            case "redlocks" -> "redlock";
            case "" -> "unknown";
            default -> kind;
        };
    }

    /** The meters of one backend (provider address). */
    private final class Backend {
        final Tags tags;
        final AtomicInteger held = new AtomicInteger();
        final Map<String, Counter> failures = new ConcurrentHashMap<>();
        final Timer renewalsOk;
        final Timer renewalsFailed;
        /** Per lock tag value; one entry under "" when lock names are not tagged. */
        final Map<String, LockMeters> byLockTag = new ConcurrentHashMap<>();

        Backend(String address) {
            this.tags = commonTags.and("backend", backendKind(address));
            Gauge.builder("locksmith.locks.held", held, AtomicInteger::get)
                    .description("Holds this application has now")
                    .tags(tags).strongReference(true).register(registry);
            this.renewalsOk = renewals("ok");
            this.renewalsFailed = renewals("failed");
        }

        private Timer renewals(String result) {
            return Timer.builder("locksmith.renewals").description("Lease renewal rounds")
                    .tags(tags).tag("result", result).register(registry);
        }

        LockMeters meters(String lockName) {
            String value = "";
            if (lockTag != null) {
                value = lockTag.apply(lockName);
                if (value == null || value.isEmpty()) {
                    value = "other";
                }
            }
            LockMeters meters = byLockTag.get(value);
            return meters != null ? meters : byLockTag.computeIfAbsent(value, this::newLockMeters);
        }

        private LockMeters newLockMeters(String lockTagValue) {
            Tags lockTags = lockTag == null ? tags : tags.and(LOCK_TAG, lockTagValue);
            return new LockMeters(this, lockTags);
        }
    }

    /** The meters that carry the lock tag, if any. */
    private final class LockMeters {
        final Backend backend;
        final Map<Outcome, Timer> acquisitions = new EnumMap<>(Outcome.class);
        final Map<HoldEnd, Timer> holds = new EnumMap<>(HoldEnd.class);
        final LongTaskTimer active;
        final Counter losses;

        LockMeters(Backend backend, Tags tags) {
            this.backend = backend;
            for (Outcome outcome : Outcome.values()) {
                acquisitions.put(outcome, Timer.builder("locksmith.acquisitions")
                        .description("Time from the start of an acquisition to its outcome")
                        .tags(tags).tag("outcome", lower(outcome)).register(registry));
            }
            for (HoldEnd end : HoldEnd.values()) {
                holds.put(end, Timer.builder("locksmith.holds").description("Time a lock was held, by how it ended")
                        .tags(tags).tag("end", lower(end)).register(registry));
            }
            this.active = LongTaskTimer.builder("locksmith.holds.active").description("Holds in progress")
                    .tags(tags).register(registry);
            this.losses = Counter.builder("locksmith.losses").description("Holds lost")
                    .tags(tags).register(registry);
        }
    }

    private static String lower(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT);
    }

    /** One acquisition and its hold. */
    private static final class Acquisition implements AcquisitionObserver {
        private final LockMeters meters;
        private LongTaskTimer.Sample holding;

        Acquisition(LockMeters meters) {
            this.meters = meters;
        }

        @Override
        public void acquisitionEnded(Outcome outcome, long waitedNanos, long fencingToken, Throwable failure) {
            meters.acquisitions.get(outcome).record(waitedNanos, TimeUnit.NANOSECONDS);
            if (outcome == Outcome.ACQUIRED) {
                holding = meters.active.start();
                meters.backend.held.incrementAndGet();
            }
        }

        @Override
        public void holdEnded(HoldEnd end, long heldNanos, String reason) {
            meters.backend.held.decrementAndGet();
            holding.stop();
            meters.holds.get(end).record(heldNanos, TimeUnit.NANOSECONDS);
            if (end == HoldEnd.LOST) {
                meters.losses.increment();
            }
        }
    }

    /** Builds {@link LockMetrics}. */
    public static final class Builder {
        private final MeterRegistry registry;
        private Function<String, String> lockTag;
        private Tags tags = Tags.empty();

        private Builder(MeterRegistry registry) {
            this.registry = Objects.requireNonNull(registry, "registry");
        }

        /**
         * Tags the per-lock meters with {@code lock}, the value {@code mapping} gives for the lock's name (null or
         * empty: {@code other}). Keep the set of values small: each is a time series for the life of the registry.
         */
        public Builder lockTag(Function<String, String> mapping) {
            this.lockTag = Objects.requireNonNull(mapping, "mapping");
            return this;
        }

        /** Tags added to every meter (an application or store name, say). */
        public Builder tags(Iterable<Tag> tags) {
            this.tags = this.tags.and(Objects.requireNonNull(tags, "tags"));
            return this;
        }

        /** The meters, registered as locks are used. */
        public LockMetrics build() {
            return new LockMetrics(this);
        }
    }
}
