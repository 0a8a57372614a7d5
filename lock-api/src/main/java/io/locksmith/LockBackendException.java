package io.locksmith;

/** The lock store could not be reached, did not answer in time, or failed. */
public class LockBackendException extends LockException {
    private static final long serialVersionUID = 1L;

    /** An exception with a message that names the lock, the backend and the elapsed time against the limit. */
    public LockBackendException(String message) {
        super(message);
    }

    /** An exception with a message and the store client's failure. */
    public LockBackendException(String message, Throwable cause) {
        super(message, cause);
    }
}
