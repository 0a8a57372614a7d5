package io.locksmith.spring.autoconfigure;

import io.locksmith.spring.support.RedisTarget;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * The application's {@code spring.data.redis.*} settings, read the same way on every Spring Boot line (the
 * properties class moved between 3.x and 4.x, the property names did not), turned into a lock-redis URI.
 */
final class RedisSettings {

    private String url;
    private String host = "localhost";
    private int port = 6379;
    private int database;
    private String username;
    private String password;
    private boolean ssl;
    private List<String> clusterNodes;
    private String sentinelMaster;

    static RedisSettings from(Environment environment) {
        Binder binder = Binder.get(environment);
        RedisSettings settings = new RedisSettings();
        binder.bind("spring.data.redis.url", String.class).ifBound(v -> settings.url = v);
        binder.bind("spring.data.redis.host", String.class).ifBound(v -> settings.host = v);
        binder.bind("spring.data.redis.port", Integer.class).ifBound(v -> settings.port = v);
        binder.bind("spring.data.redis.database", Integer.class).ifBound(v -> settings.database = v);
        binder.bind("spring.data.redis.username", String.class).ifBound(v -> settings.username = v);
        binder.bind("spring.data.redis.password", String.class).ifBound(v -> settings.password = v);
        binder.bind("spring.data.redis.ssl.enabled", Boolean.class).ifBound(v -> settings.ssl = v);
        binder.bind("spring.data.redis.cluster.nodes", Bindable.listOf(String.class))
                .ifBound(v -> settings.clusterNodes = v);
        binder.bind("spring.data.redis.sentinel.master", String.class).ifBound(v -> settings.sentinelMaster = v);
        return settings;
    }

    /** Whether the application configured Redis at all (rather than leaving Boot's localhost default). */
    static boolean isConfigured(Environment environment) {
        return environment.containsProperty("spring.data.redis.url")
                || environment.containsProperty("spring.data.redis.host")
                || environment.containsProperty("spring.data.redis.port")
                || environment.containsProperty("spring.data.redis.cluster.nodes")
                || environment.containsProperty("spring.data.redis.sentinel.master");
    }

    /**
     * The lock-redis URI of these settings, credentials percent-encoded.
     *
     * @throws IllegalStateException for settings a URI cannot express (cluster, sentinel)
     */
    String uri() {
        if (clusterNodes != null && !clusterNodes.isEmpty()) {
            throw RedisTarget.cluster("spring.data.redis.cluster.nodes");
        }
        if (sentinelMaster != null) {
            throw RedisTarget.sentinel("spring.data.redis.sentinel.master");
        }
        if (url != null && !url.isBlank()) {
            return fromUrl(url);
        }
        return RedisTarget.uri(ssl, username, password, host, port, database);
    }

    /** Boot's url form: redis[s]://[user:password@]host:port[/db]; lock-redis reads the same. */
    private String fromUrl(String value) {
        try {
            URI parsed = new URI(value);
            String scheme = parsed.getScheme();
            if (!"redis".equalsIgnoreCase(scheme) && !"rediss".equalsIgnoreCase(scheme)) {
                throw new IllegalStateException("locksmith: spring.data.redis.url must start with redis:// or"
                        + " rediss://");
            }
            if (ssl && "redis".equalsIgnoreCase(scheme)) {
                return "rediss" + value.substring(scheme.length());
            }
            return value;
        } catch (URISyntaxException e) {
            // the reason and index only: the input may hold a password
            throw new IllegalStateException("locksmith: spring.data.redis.url is not a URI: " + e.getReason()
                    + " at index " + e.getIndex());
        }
    }
}
