package io.locksmith.redis.internal;

/**
 * The Redis keys and channel of each lock name in one namespace. Unsupported internal API, shared by the Redis
 * and Redlock backends and the benchmarks; applications never need it.
 *
 * <p>For namespace {@code ns} and lock name {@code n}:
 * <ul>
 *   <li>{@code ns:{e}}: the lock hash, field = owner id, value = the id of the attempt that took it, with the
 *       lease as its expiry;</li>
 *   <li>{@code ns:{e}:fence}: the fencing counter, incremented on each fresh acquisition; it never expires, so
 *       tokens keep growing across holds;</li>
 *   <li>{@code ns:{e}:cancelled}: a short-lived set of this lock's acquisition attempts that their clients gave
 *       up on after a lost answer (see {@link RedisScripts}); it expires by itself;</li>
 *   <li>{@code ns:{e}:claim}: a waiting run's claim to the next turn (see {@link RedisScripts}); it expires with
 *       the claimant's lease;</li>
 *   <li>{@code ns:{e}:queue} and {@code ns:{e}:queue-deadlines}: with FIFO fairness, the waiting runs in order of
 *       arrival and the time each stops counting as waiting unless it looks again; both expire by
 *       themselves;</li>
 *   <li>{@code ns:{e}:permits}: the permit count of semaphore {@code n}, where the store keeps it (see
 *       {@link io.locksmith.LockProvider#getSemaphore(String)}); it never expires;</li>
 *   <li>{@code ns:{e}:released}: the channel a release publishes on, so waiters retry at once.</li>
 * </ul>
 * where {@code e} is {@code n} with {@code %}, <code>{</code> and <code>}</code> written as {@code %25},
 * {@code %7B} and {@code %7D}. The escaping is injective (decoding is unambiguous, so two names never share a
 * key) and leaves no brace inside the tag, so the hash tag is exactly {@code e}: the three keys of one lock
 * live in one cluster slot, and the channel hashes to that slot too for sharded pub/sub. A namespace holds only
 * letters, digits, {@code _ . -} (see {@link io.locksmith.LockOptions.Builder#namespace}), so no name can leave
 * it, and {@code ns:{*}} matches exactly the lock hashes of the namespace.
 */
public final class RedisKeys {

    private static final String FENCE_SUFFIX = ":fence";
    private static final String CANCELLED_SUFFIX = ":cancelled";
    private static final String CHANNEL_SUFFIX = ":released";
    private static final String CLAIM_SUFFIX = ":claim";
    private static final String QUEUE_SUFFIX = ":queue";
    private static final String QUEUE_DEADLINES_SUFFIX = ":queue-deadlines";
    private static final String PERMITS_SUFFIX = ":permits";

    private final String namespace;

    /** The keys of {@code namespace}. */
    public RedisKeys(String namespace) {
        this.namespace = namespace;
    }

    /** The hash that holds the owner of {@code name}. */
    public String lock(String name) {
        return namespace + ":{" + encode(name) + '}';
    }

    /** The fencing counter of {@code name}, in the lock's slot. */
    public String fence(String name) {
        return fenceOf(lock(name));
    }

    /** The set of cancelled acquisition attempts of {@code name}, in the lock's slot. */
    public String cancelled(String name) {
        return cancelledOf(lock(name));
    }

    /** The claim of a waiting run to the next turn of {@code name}, in the lock's slot. */
    public String claim(String name) {
        return claimOf(lock(name));
    }

    /** The FIFO queue of waiting runs of {@code name}, in the lock's slot. */
    public String queue(String name) {
        return queueOf(lock(name));
    }

    /** The deadlines of the queued runs of {@code name}, in the lock's slot. */
    public String queueDeadlines(String name) {
        return queueDeadlinesOf(lock(name));
    }

    /** The permit count of semaphore {@code name}, in the slot of a lock of that name. */
    public String permits(String name) {
        return lock(name) + PERMITS_SUFFIX;
    }

    /** The channel a release of {@code name} publishes on, in the lock's slot. */
    public String channel(String name) {
        return channelOf(lock(name));
    }

    /** The fencing counter beside the lock hash {@code lock} (from {@link #lock}). */
    public static String fenceOf(String lock) {
        return lock + FENCE_SUFFIX;
    }

    /** The set of cancelled acquisition attempts beside the lock hash {@code lock}. */
    public static String cancelledOf(String lock) {
        return lock + CANCELLED_SUFFIX;
    }

    /** The claim to the next turn beside the lock hash {@code lock}. */
    public static String claimOf(String lock) {
        return lock + CLAIM_SUFFIX;
    }

    /** The FIFO queue of waiting runs beside the lock hash {@code lock}. */
    public static String queueOf(String lock) {
        return lock + QUEUE_SUFFIX;
    }

    /** The deadlines of the queued runs beside the lock hash {@code lock}. */
    public static String queueDeadlinesOf(String lock) {
        return lock + QUEUE_DEADLINES_SUFFIX;
    }

    /** The channel of the lock hash {@code lock}. */
    public static String channelOf(String lock) {
        return lock + CHANNEL_SUFFIX;
    }

    /** A {@code SCAN MATCH} pattern for every lock hash of this namespace. */
    public String lockPattern() {
        return namespace + ":{*}";
    }

    /** The lock name whose hash is {@code key}, or null if {@code key} is not a lock hash of this namespace. */
    public String nameOfLock(String key) {
        String prefix = namespace + ":{";
        if (!key.startsWith(prefix) || !key.endsWith("}") || key.length() <= prefix.length() + 1) {
            return null;
        }
        String encoded = key.substring(prefix.length(), key.length() - 1);
        if (encoded.indexOf('}') >= 0 || encoded.indexOf('{') >= 0) {
            return null;
        }
        try {
            return decode(encoded);
        } catch (IllegalArgumentException notOurs) {
            return null;
        }
    }

    /** {@code name} with {@code %}, <code>{</code> and <code>}</code> escaped: the hash tag of its keys. */
    static String encode(String name) {
        StringBuilder b = null;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            String escape = switch (c) {
                case '%' -> "%25";
                case '{' -> "%7B";
                case '}' -> "%7D";
                default -> null;
            };
            if (escape != null && b == null) {
                b = new StringBuilder(name.length() + 8).append(name, 0, i);
            }
            if (b != null) {
                if (escape != null) {
                    b.append(escape);
                } else {
                    b.append(c);
                }
            }
        }
        return b == null ? name : b.toString();
    }

    /** The name {@link #encode} made {@code encoded} from. */
    static String decode(String encoded) {
        if (encoded.indexOf('%') < 0) {
            return encoded;
        }
        StringBuilder b = new StringBuilder(encoded.length());
        for (int i = 0; i < encoded.length(); i++) {
            char c = encoded.charAt(i);
            if (c == '%' && i + 2 < encoded.length()) {
                String code = encoded.substring(i + 1, i + 3);
                switch (code) {
                    case "25" -> b.append('%');
                    case "7B" -> b.append('{');
                    case "7D" -> b.append('}');
                    default -> throw new IllegalArgumentException("not an encoded lock name: " + encoded);
                }
                i += 2;
            } else if (c == '%') {
                throw new IllegalArgumentException("not an encoded lock name: " + encoded);
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
