package io.locksmith;

/**
 * The current thread's hold ended without it releasing the lock: the lease expired, the store dropped the
 * lock, or a session expired. The thread no longer holds the lock and may acquire it again.
 */
public class LockLostException extends IllegalMonitorStateException {
    private static final long serialVersionUID = 1L;

    /** An exception whose message names the lock, the backend and why the hold was lost. */
    public LockLostException(String message) {
        super(message);
    }
}
