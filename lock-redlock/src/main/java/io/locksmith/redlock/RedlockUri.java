package io.locksmith.redlock;

import io.locksmith.redis.internal.RedisUri;
import io.locksmith.spi.Uris;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A parsed {@code redlock://[user:password@]host[:port],[user:password@]host[:port],…[/db][?nodeTimeout=50ms]}
 * address; {@code redlocks://} uses TLS to every node. Each node is parsed exactly like a {@code redis://} URI
 * by the Redis backend; the database applies to every node.
 */
record RedlockUri(List<RedisUri> nodes, Duration nodeTimeout) {

    static RedlockUri parse(URI uri) {
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("redlock") && !scheme.equals("redlocks")) {
            throw bad(uri, "scheme must be redlock or redlocks");
        }
        String authority = uri.getRawAuthority();
        if (uri.isOpaque() || authority == null || authority.isEmpty()) {
            throw bad(uri, "the nodes are missing");
        }
        if (uri.getRawFragment() != null) {
            throw bad(uri, "a fragment is not supported");
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        Duration nodeTimeout = null;
        if (uri.getRawQuery() != null) {
            for (String parameter : uri.getRawQuery().split("&")) {
                int eq = parameter.indexOf('=');
                String key = eq < 0 ? parameter : parameter.substring(0, eq);
                String value = eq < 0 ? "" : parameter.substring(eq + 1);
                if (!key.equals("nodeTimeout")) {
                    throw bad(uri, "unknown parameter '" + key + "' (supported: nodeTimeout)");
                }
                if (!value.matches("[0-9]{1,9}(ms)?")) {
                    throw bad(uri, "nodeTimeout must be milliseconds such as 50ms, got '" + value + "'");
                }
                nodeTimeout = Duration.ofMillis(Long.parseLong(value.replace("ms", "")));
            }
        }
        String nodeScheme = scheme.equals("redlocks") ? "rediss" : "redis";
        List<RedisUri> nodes = new ArrayList<>();
        for (String node : authority.split(",", -1)) {
            if (node.isEmpty()) {
                throw bad(uri, "empty node in the list");
            }
            URI nodeUri;
            try {
                nodeUri = new URI(nodeScheme + "://" + node + path);
            } catch (URISyntaxException e) {
                throw bad(uri, "node '" + hide(node) + "' is not host:port");
            }
            try {
                nodes.add(RedisUri.parse(nodeUri));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("Invalid Redlock URI '" + redact(uri) + "': node " + (nodes.size() + 1)
                        + ": " + e.getMessage(), e);
            }
        }
        return new RedlockUri(List.copyOf(nodes), nodeTimeout);
    }

    /** The address for messages: every node's host and port, never the credentials. */
    String address() {
        StringBuilder b = new StringBuilder(nodes.get(0).tls() ? "redlocks://" : "redlock://");
        for (int i = 0; i < nodes.size(); i++) {
            RedisUri node = nodes.get(i);
            b.append(i == 0 ? "" : ",").append(node.host().indexOf(':') >= 0 ? '[' + node.host() + ']' : node.host())
                    .append(':').append(node.port());
        }
        return b.append('/').append(nodes.get(0).database()).toString();
    }

    /**
     * The URI as text with every node's credentials replaced by {@code ***}; if an {@code @} follows the node list
     * (a password with a character it should have percent-encoded, {@code / ? #}), everything between {@code //}
     * and the last {@code @}.
     */
    static String redact(URI uri) {
        return Uris.redact(uri.toString());
    }

    private static String hide(String node) {
        int at = node.lastIndexOf('@');
        return at < 0 ? node : "***" + node.substring(at);
    }

    private static IllegalArgumentException bad(URI uri, String problem) {
        return new IllegalArgumentException("Invalid Redlock URI '" + redact(uri) + "': " + problem
                + " (expected redlock://[user:password@]host[:port],host[:port],…[/database][?nodeTimeout=50ms] "
                + "or redlocks://… for TLS)");
    }
}
