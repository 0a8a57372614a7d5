package io.locksmith;

/** Base type of Locksmith's own failures. Unchecked. */
public class LockException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An exception with a message that names the lock, the backend and the limits involved. */
    public LockException(String message) {
        super(message);
    }

    /** An exception with a message and the failure that caused it. */
    public LockException(String message, Throwable cause) {
        super(message, cause);
    }
}
