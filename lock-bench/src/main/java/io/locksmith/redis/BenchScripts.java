package io.locksmith.redis;

import java.util.List;

/**
 * The Redis backend's acquire and release scripts, for the benchmarks' protocol floor ({@code redis-floor-scripts}):
 * the bare client running exactly the scripts Locksmith runs. Lives in lock-bench, in the backend's package, only
 * to read them; never shipped.
 */
public final class BenchScripts {

    private BenchScripts() {
    }

    /** The acquire script: KEYS lock, fence, cancelled; ARGV owner, lease ms, attempt id. */
    public static String acquire() {
        return RedisScripts.ACQUIRE.text;
    }

    /** The release script: KEYS lock; ARGV owner, attempt id, channel. */
    public static String release() {
        return RedisScripts.RELEASE.text;
    }

    /** The keys of {@code name} in {@code namespace}: lock hash, fencing counter, cancelled attempts, channel. */
    public static List<String> keys(String namespace, String name) {
        String lock = new RedisKeys(namespace).lock(name);
        return List.of(lock, RedisKeys.fenceOf(lock), RedisKeys.cancelledOf(lock), RedisKeys.channelOf(lock));
    }
}
