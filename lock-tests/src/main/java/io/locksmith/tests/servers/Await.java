package io.locksmith.tests.servers;

import java.time.Duration;

/** Bounded waiting for a server to become ready. */
final class Await {

    /**
     * One readiness check: returns true when ready; a checked exception means "not yet", an unchecked one
     * means "give up now" (the process died, say).
     */
    @FunctionalInterface
    interface Check {
        boolean ready() throws Exception;
    }

    private static final long POLL_MILLIS = 50;

    private Await() {
    }

    /**
     * Polls {@code check} until it passes or {@code limit} has passed.
     *
     * @param failure what went wrong if the limit passes, e.g. "redis-server on 127.0.0.1:6380 did not answer PING"
     * @throws ServerUnavailableException with {@code failure}, the limit and the last error
     */
    static void until(String failure, Duration limit, Check check) {
        long deadline = System.nanoTime() + limit.toNanos();
        Exception last = null;
        while (true) {
            try {
                if (check.ready()) {
                    return;
                }
            } catch (RuntimeException e) {
                throw e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ServerUnavailableException("Interrupted while waiting: " + failure, e);
            } catch (Exception e) {
                last = e;
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new ServerUnavailableException(failure + " within " + limit.toSeconds() + " s"
                        + (last == null ? "" : " (last error: " + describe(last) + ")"), last);
            }
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ServerUnavailableException("Interrupted while waiting: " + failure, e);
            }
        }
    }

    /** Returns an error as one line, its type and the first line of its message, for one-line failure messages. */
    static String describe(Throwable error) {
        String message = error.getMessage();
        if (message == null || message.isBlank()) {
            return error.getClass().getSimpleName();
        }
        String firstLine = message.strip().lines().findFirst().orElse("");
        return error.getClass().getSimpleName() + ": " + firstLine;
    }
}
