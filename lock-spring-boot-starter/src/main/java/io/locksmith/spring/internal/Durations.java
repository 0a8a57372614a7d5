package io.locksmith.spring.internal;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the durations of {@code @Locked}: {@code 500ms}, {@code 5s}, {@code 10m}, {@code 1h}, or ISO-8601. */
final class Durations {

    private static final Pattern SIMPLE = Pattern.compile("([0-9]+)\\s*(ns|us|ms|s|m|h|d)?");

    private Durations() {
    }

    /**
     * The duration {@code text} names, or null if it is empty.
     *
     * @throws IllegalArgumentException naming {@code what} and the text if it is not a non-negative duration
     */
    static Duration parse(String text, String what) {
        String value = text.trim();
        if (value.isEmpty()) {
            return null;
        }
        Duration parsed;
        Matcher simple = SIMPLE.matcher(value.toLowerCase(Locale.ROOT));
        if (simple.matches()) {
            long amount;
            try {
                amount = Long.parseLong(simple.group(1));
            } catch (NumberFormatException tooLong) {
                throw bad(what, text, "too large");
            }
            String unit = simple.group(2) == null ? "ms" : simple.group(2);
            parsed = switch (unit) {
                case "ns" -> Duration.ofNanos(amount);
                case "us" -> Duration.ofNanos(amount).multipliedBy(1000);
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> Duration.ofDays(amount);
            };
        } else {
            try {
                parsed = Duration.parse(value);
            } catch (DateTimeParseException e) {
                throw bad(what, text, "expected a duration such as 500ms, 5s, 10m, 1h or PT5S");
            }
        }
        if (parsed.isNegative()) {
            throw bad(what, text, "must not be negative");
        }
        return parsed;
    }

    private static IllegalArgumentException bad(String what, String text, String problem) {
        return new IllegalArgumentException(what + " '" + text + "': " + problem);
    }
}
