package io.locksmith.internal;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockHandle;
import io.locksmith.LockLostException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What every handle does with its hold: validity, the loss future, and closing exactly once. Subclasses say how the
 * hold is released: by its thread ({@link StoreLock#acquire()}) or by the handle that owns it ({@link OwnedHandle}).
 */
abstract class HoldHandle implements LockHandle {

    final StoreLock lock;
    final StoreLockProvider<?> provider;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set once, when the hold is granted, before the handle is handed out. */
    volatile Hold hold;

    HoldHandle(StoreLock lock, StoreLockProvider<?> provider) {
        this.lock = lock;
        this.provider = provider;
    }

    /** Releases the hold; may throw what {@link #close()} documents. */
    abstract void release();

    @Override
    public final DistributedLock lock() {
        return lock;
    }

    @Override
    public final boolean isValid() {
        return !closed.get() && provider.isValid(hold);
    }

    @Override
    public final CompletableFuture<LockLostException> whenLost() {
        return provider.lossFuture(hold);
    }

    @Override
    public final void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            release();
        } catch (LockLostException gone) {
            throw gone; // nothing left to release
        } catch (IllegalMonitorStateException | LockBackendException notReleased) {
            // the wrong thread, or a release whose outcome is unknown: closing again retries
            closed.set(false);
            throw notReleased;
        }
    }

    void checkNotClosed() {
        if (closed.get()) {
            throw new IllegalStateException("LockHandle of '" + lock.name() + "' on " + provider.backend()
                    + " is closed");
        }
    }

    @Override
    public String toString() {
        Hold current = hold;
        return "LockHandle{'" + lock.name() + "', token=" + (current == null ? "none" : current.token)
                + (closed.get() ? ", closed" : "") + '}';
    }
}
