package io.locksmith.spring.support;

import io.locksmith.LockProvider;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The health of the application's lock stores, the same on every Spring Boot line: each provider's store is asked
 * about one lock ({@value #PROBE}), which it answers within the provider's operation timeout or not at all.
 */
public final class StoreProbe {

    /** The lock the probe asks about; nobody needs to hold it. */
    public static final String PROBE = "locksmith-health-probe";

    private final Map<String, LockProvider> providers;

    public StoreProbe(Map<String, LockProvider> providers) {
        this.providers = providers;
    }

    /** Asks every provider's store once. */
    public Result check() {
        boolean up = true;
        Map<String, Object> details = new LinkedHashMap<>();
        for (Map.Entry<String, LockProvider> entry : providers.entrySet()) {
            LockProvider provider = entry.getValue();
            Map<String, Object> detail = new LinkedHashMap<>();
            detail.put("backend", provider.backend());
            long start = System.nanoTime();
            try {
                provider.inspect(PROBE);
                detail.put("status", "UP");
            } catch (RuntimeException e) {
                up = false;
                detail.put("status", "DOWN");
                detail.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            detail.put("responseMs", (System.nanoTime() - start) / 1_000_000);
            details.put(entry.getKey(), detail);
        }
        return new Result(up, details);
    }

    /** Whether every store answered, and what each said. */
    public record Result(boolean up, Map<String, Object> details) {
    }
}
