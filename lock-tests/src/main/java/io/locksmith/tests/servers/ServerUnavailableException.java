package io.locksmith.tests.servers;

/**
 * A test server that could not be had: the one-line message says what to install, start or set.
 *
 * <p>Fixtures throw it instead of skipping, so a run without its servers fails loudly.
 */
public final class ServerUnavailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    ServerUnavailableException(String message) {
        super(message);
    }

    ServerUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
