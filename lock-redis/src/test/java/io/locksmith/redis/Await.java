package io.locksmith.redis;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Bounded polling for things that happen asynchronously. */
final class Await {

    private Await() {
    }

    /** Waits until {@code condition} holds, failing with {@code what} after {@code limit}. */
    static void until(String what, Duration limit, BooleanSupplier condition) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within " + limit.toMillis() + " ms: " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for: " + what, e);
            }
        }
    }
}
