package io.locksmith.cli;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.time.Duration;
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

    LockOptions.Builder options() {
        return LockOptions.builder().namespace(namespace).operationTimeout(Durations.parse("--timeout", timeout));
    }

    LockProvider open(LockOptions options) {
        return LockProvider.open(uri, options);
    }

    /** The URI without credentials, for printing. */
    String shownUri() {
        return uri.replaceAll("//[^/@]*@", "//***@").replaceAll("(?i)(password=)[^&;]*", "$1***");
    }

    /** Parses the short duration forms people type. */
    static final class Durations {
        private Durations() {
        }

        static Duration parse(String option, String text) {
            return positive(option, text, parseAny(option, text));
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
