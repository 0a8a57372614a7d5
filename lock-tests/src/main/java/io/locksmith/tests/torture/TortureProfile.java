package io.locksmith.tests.torture;

import java.util.Locale;

/**
 * How hard a torture test works: {@link #SHORT} in every build, {@link #LONG} when the system property
 * {@code locksmith.torture} is {@code long} (the {@code torture} Maven profile sets it).
 *
 * <pre>{@code
 * TortureProfile profile = TortureProfile.current();
 * builder.operationsPerThread(profile.pick(150, 40_000));
 * }</pre>
 */
public enum TortureProfile {
    /** A few tens of seconds per run; part of the normal test command. */
    SHORT,
    /** About a million guarded increments per backend over its runs; results go to {@code results.jsonl}. */
    LONG;

    /** The system property that selects the profile: {@value}. */
    public static final String PROPERTY = "locksmith.torture";

    /**
     * The profile the system property selects; {@link #SHORT} when it is unset or empty.
     *
     * @throws IllegalArgumentException if the property holds anything but {@code short} or {@code long}
     */
    public static TortureProfile current() {
        String value = System.getProperty(PROPERTY, "").strip().toLowerCase(Locale.ROOT);
        return switch (value) {
            case "", "short" -> SHORT;
            case "long" -> LONG;
            default -> throw new IllegalArgumentException("-D" + PROPERTY + " must be 'short' or 'long', got '"
                    + value + "'");
        };
    }

    /** {@code ifShort} in the short profile, {@code ifLong} in the long one. */
    public int pick(int ifShort, int ifLong) {
        return this == SHORT ? ifShort : ifLong;
    }
}
