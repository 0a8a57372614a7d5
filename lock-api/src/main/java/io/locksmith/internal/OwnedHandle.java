package io.locksmith.internal;

/**
 * A handle that owns its hold, from an asynchronous acquisition: no thread owns the hold, so any thread may use
 * and close the handle, and it is released exactly once. Not reentrant: every acquisition is a hold of its own.
 */
final class OwnedHandle extends HoldHandle {

    OwnedHandle(StoreLock lock, StoreLockProvider<?> provider) {
        super(lock, provider);
    }

    void granted(Hold granted) {
        this.hold = granted;
    }

    @Override
    public long fencingToken() {
        checkNotClosed();
        return provider.tokenOf(hold);
    }

    @Override
    void release() {
        provider.releaseHandle(hold);
    }
}
