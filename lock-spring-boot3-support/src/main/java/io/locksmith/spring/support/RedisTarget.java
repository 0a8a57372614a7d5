package io.locksmith.spring.support;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * The Redis server the application's Spring Boot connection details name, as a lock-redis URI: a bean the
 * starter's per-line adapters make from Boot's {@code RedisConnectionDetails} (3.x) or
 * {@code DataRedisConnectionDetails} (4.x), which Testcontainers' {@code @ServiceConnection} and Docker Compose
 * support provide as well as {@code spring.data.redis.*}.
 */
@FunctionalInterface
public interface RedisTarget {

    /** The lock-redis URI of the server, credentials percent-encoded. */
    String uri();

    /**
     * A lock-redis URI from its parts; user and password may be null.
     *
     * @throws IllegalStateException for settings the URI cannot express: a cluster or a Sentinel set-up
     */
    static String uri(boolean ssl, String user, String password, String host, int port, int database) {
        StringBuilder uri = new StringBuilder(ssl ? "rediss://" : "redis://");
        if (password != null && !password.isEmpty()) {
            uri.append(user == null ? "" : encode(user)).append(':').append(encode(password)).append('@');
        }
        uri.append(host.indexOf(':') >= 0 ? '[' + host + ']' : host).append(':').append(port).append('/')
                .append(database);
        return uri.toString();
    }

    /** The refusal of a cluster connection: the starter builds providers for a single server. */
    static IllegalStateException cluster(String where) {
        return new IllegalStateException("locksmith: " + where + " names a Redis cluster; the starter builds a"
                + " provider for a single Redis server only. Declare a LockProvider bean built with"
                + " RedisLockProviders.builder(new RedisClusterClient(...)) (docs/spring.md), or set locksmith.uri");
    }

    /** The refusal of a Sentinel set-up. */
    static IllegalStateException sentinel(String where) {
        return new IllegalStateException("locksmith: " + where + " names a Sentinel set-up; Locksmith does not"
                + " follow Sentinel fail-overs (a hold may be lost with the old master). Set locksmith.uri to the"
                + " master's redis:// address, or use Redlock (docs/redlock.md)");
    }

    private static String encode(String text) {
        return URLEncoder.encode(text, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
