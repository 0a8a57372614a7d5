package io.locksmith.tests.servers;

/**
 * The faults a fixture can inject into one server: kill it, pause it, bring it back.
 *
 * <p>Each fixture path supplies one: a local process, a container, an in-JVM server, or {@link #none} for a
 * server the tests were given and must not touch. Readiness after {@link #restart()} is the fixture's job.
 */
interface Control extends AutoCloseable {

    /** Stops the server abruptly, as a crash would; its address then refuses connections. */
    void kill();

    /** Starts the server again on the same address, killing it first if it still runs. */
    void restart();

    /** Freezes the server: connections stay open but nothing is answered. */
    default void pause() {
        throw new UnsupportedOperationException("This server cannot be paused (" + describe() + ")");
    }

    /** Unfreezes a paused server. */
    default void resume() {
        throw new UnsupportedOperationException("This server cannot be paused or resumed (" + describe() + ")");
    }

    /**
     * Throws {@link ServerUnavailableException} saying why if the server is known to have died; a fixture calls it
     * while it waits for the server to answer, so a crash fails at once instead of at the time limit.
     */
    default void checkRunning() {
    }

    /** Returns whether kill, restart (and where supported pause) act on the server. */
    default boolean isControllable() {
        return true;
    }

    /** Returns how the server is run, for logs: "own process, pid 1234". */
    String describe();

    /** Stops the server for good and removes what it left on disk. */
    @Override
    void close();

    /**
     * Returns the control of a server the fixture did not start: every fault throws, explaining why.
     *
     * @param address the server's address as given
     * @param source where the address came from, e.g. {@code LOCKSMITH_REDIS_URI}
     */
    static Control none(String address, String source) {
        return none(address, "external, from " + source, "unset " + source + " to let the tests start their own");
    }

    /**
     * Returns the control of a server the fixture did not start: every fault throws, explaining why.
     *
     * @param address the server's address
     * @param origin what it is, e.g. "the machine's shared server"
     * @param advice how to get a server the tests own instead
     */
    static Control none(String address, String origin, String advice) {
        return new Control() {
            @Override
            public void kill() {
                throw refused("kill");
            }

            @Override
            public void restart() {
                throw refused("restart");
            }

            @Override
            public void pause() {
                throw refused("pause");
            }

            @Override
            public void resume() {
                throw refused("resume");
            }

            @Override
            public boolean isControllable() {
                return false;
            }

            @Override
            public String describe() {
                return origin + ": the tests cannot kill, pause or restart it";
            }

            @Override
            public void close() {
                // not ours to stop
            }

            private UnsupportedOperationException refused(String fault) {
                return new UnsupportedOperationException("Cannot " + fault + " " + address + ": it is " + origin
                        + ", not started by the tests (check isControllable() first, or " + advice + ")");
            }
        };
    }
}
