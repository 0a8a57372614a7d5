package io.locksmith.spring;

import io.locksmith.LockException;

/** A {@link Locked} method did not run: its lock stayed held by somebody else ({@link Locked.OnBusy#FAIL}). */
public class LockBusyException extends LockException {
    private static final long serialVersionUID = 1L;

    /** An exception naming the lock, the method and how long it waited. */
    public LockBusyException(String message) {
        super(message);
    }
}
