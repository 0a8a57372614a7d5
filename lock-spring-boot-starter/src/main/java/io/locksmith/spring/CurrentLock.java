package io.locksmith.spring;

import io.locksmith.spring.internal.LockedInterceptor;

/**
 * The lock of the innermost {@link Locked} method running on the calling thread, for code that cannot take a
 * {@link FencingToken} parameter.
 */
public final class CurrentLock {

    private CurrentLock() {
    }

    /**
     * The fencing token of the innermost {@link Locked} method's hold on this thread.
     *
     * @throws IllegalStateException if no {@link Locked} method is running on this thread
     */
    public static long fencingToken() {
        return LockedInterceptor.current("fencingToken").token();
    }

    /**
     * The name of the innermost {@link Locked} method's lock on this thread.
     *
     * @throws IllegalStateException if no {@link Locked} method is running on this thread
     */
    public static String name() {
        return LockedInterceptor.current("name").name();
    }

    /** Whether a {@link Locked} method is running on this thread. */
    public static boolean isPresent() {
        return LockedInterceptor.isPresent();
    }
}
