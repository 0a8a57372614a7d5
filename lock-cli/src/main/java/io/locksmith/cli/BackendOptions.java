package io.locksmith.cli;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.Uris;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Option;

/** The options every subcommand shares: which store, which namespace, how long to wait for it. */
final class BackendOptions {

    /** The embedded default: an H2 database in this process, no server needed. */
    static final String DEFAULT_BACKEND = "jdbc:h2:mem:locksmith-demo;DB_CLOSE_DELAY=-1";

    @Option(names = {"-b", "--backend"}, paramLabel = "URI",
            description = "Lock store URI: redis://host:6379, zookeeper://host:2181, jdbc:mariadb://host/db, "
                    + "jdbc:postgresql://host/db, redlock://h1,h2,h3, local:// (default: ${DEFAULT-VALUE})")
    String uri = DEFAULT_BACKEND;

    @Option(names = "--namespace", paramLabel = "NAME", description = "Key namespace of the locks (default: "
            + "${DEFAULT-VALUE})")
    String namespace = LockOptions.DEFAULT_NAMESPACE;

    @Option(names = "--timeout", paramLabel = "DURATION",
            description = "Longest wait for one store operation, ISO-8601 or e.g. 5s, 200ms (default: 5s)")
    String timeout = "5s";

    /** The longest {@code --timeout}: a store that has not answered in a day will not. */
    static final Duration MAX_TIMEOUT = Duration.ofDays(1);

    LockOptions.Builder options() {
        return LockOptions.builder().namespace(namespace)
                .operationTimeout(Durations.parse("--timeout", timeout, MAX_TIMEOUT));
    }

    LockProvider open(LockOptions options) {
        return LockProvider.open(uri, options);
    }

    /**
     * The URI without credentials, for printing: everything up to the last {@code @} (of the part before the
     * parameters, for {@code jdbc:} URLs) and {@code password=} parameters become {@code ***}.
     */
    String shownUri() {
        return Uris.redact(uri);
    }

    /**
     * The passwords in the URI as given, raw and percent-decoded, longest first: messages from client libraries
     * are searched for them before they are printed.
     */
    List<String> secrets() {
        Set<String> found = new HashSet<>();
        int from = uri.indexOf("//");
        int at = uri.lastIndexOf('@');
        if (from >= 0 && at > from + 2) {
            for (String node : uri.substring(from + 2, at).split(",")) {
                int nodeAt = node.lastIndexOf('@');
                String credentials = nodeAt < 0 ? node : node.substring(0, nodeAt);
                int colon = credentials.indexOf(':');
                if (colon >= 0) {
                    found.add(credentials.substring(colon + 1));
                }
            }
        }
        Matcher parameter = Pattern.compile("(?i)password=([^&;]*)").matcher(uri);
        while (parameter.find()) {
            found.add(parameter.group(1));
        }
        Set<String> forms = new HashSet<>(found);
        for (String secret : found) {
            try {
                forms.add(URLDecoder.decode(secret, StandardCharsets.UTF_8));
            } catch (IllegalArgumentException notEncoded) {
                // a bad escape: the raw form is all there is
            }
        }
        // shorter strings would hide ordinary words of a message, and a password that short is no secret
        forms.removeIf(secret -> secret.length() < 3);
        List<String> secrets = new ArrayList<>(forms);
        secrets.sort(Comparator.comparingInt(String::length).reversed());
        return secrets;
    }

    /** Parses the short duration forms people type. */
    static final class Durations {
        private Durations() {
        }

        /** A positive duration of at most {@code max}, or an {@link IllegalArgumentException} naming the option. */
        static Duration parse(String option, String text, Duration max) {
            Duration d = positive(option, text, parseAny(option, text));
            if (d.compareTo(max) > 0) {
                throw new IllegalArgumentException(option + " must be at most " + max.toString().substring(2)
                        .toLowerCase(java.util.Locale.ROOT) + "; got '" + text + "'");
            }
            return d;
        }

        private static Duration parseAny(String option, String text) {
            String t = text.strip().toLowerCase(java.util.Locale.ROOT);
            try {
                if (t.startsWith("p") || t.startsWith("-p")) {
                    return Duration.parse(text.strip());
                }
                if (t.endsWith("ms")) {
                    return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
                }
                if (t.endsWith("s")) {
                    return Duration.ofSeconds(Long.parseLong(t.substring(0, t.length() - 1)));
                }
                if (t.endsWith("m")) {
                    return Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 1)));
                }
            } catch (RuntimeException e) {
                // falls through to the message below
            }
            throw new IllegalArgumentException(option + " takes a duration such as 500ms, 5s, 2m or PT5S; got '"
                    + text + "'");
        }

        private static Duration positive(String option, String text, Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(option + " must be positive; got '" + text + "'");
            }
            return d;
        }
    }
}
