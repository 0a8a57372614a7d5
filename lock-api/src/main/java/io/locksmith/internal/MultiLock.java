package io.locksmith.internal;

import io.locksmith.DistributedLock;
import io.locksmith.LockHandle;
import io.locksmith.LockLostException;
import io.locksmith.LockProvider;
import io.locksmith.MultiLockHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@link LockProvider#acquireAll}: the locks of a set of names taken one after another in the names' natural order
 * by the calling thread, within one deadline; if one cannot be had in time, the ones taken are
 * released and nothing is held. Every caller takes overlapping names in the same order, so two callers can never
 * each hold a lock the other waits for: no deadlock, whatever order the sets were given in. Unsupported internal
 * API.
 */
public final class MultiLock {

    private MultiLock() {
    }

    /** See {@link LockProvider#acquireAll}. */
    public static Optional<MultiLockHandle> acquireAll(LockProvider provider, Collection<String> names, Duration wait)
            throws InterruptedException {
        Objects.requireNonNull(names, "names");
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative: " + wait);
        }
        if (names.isEmpty()) {
            throw new IllegalArgumentException("acquireAll needs at least one lock name");
        }
        TreeSet<String> ordered = new TreeSet<>();
        for (String name : names) {
            Objects.requireNonNull(name, "names contains null");
            if (!ordered.add(name)) {
                throw new IllegalArgumentException("lock name '" + name + "' is given more than once");
            }
        }
        // every name is checked before anything is taken
        List<DistributedLock> locks = new ArrayList<>(ordered.size());
        for (String name : ordered) {
            locks.add(provider.getLock(name));
        }
        long deadline = System.nanoTime() + Math.min(wait.toNanos(), Long.MAX_VALUE / 2);
        List<LockHandle> held = new ArrayList<>(locks.size());
        try {
            for (DistributedLock lock : locks) {
                long remaining = Math.max(0, deadline - System.nanoTime());
                LockHandle handle = take(lock, held.isEmpty() ? wait : Duration.ofNanos(remaining));
                if (handle == null) {
                    closeAll(held, null);
                    return Optional.empty();
                }
                held.add(handle);
            }
        } catch (InterruptedException | RuntimeException | Error e) {
            closeAll(held, e);
            throw e;
        }
        return Optional.of(new Handle(held));
    }

    /** One lock as the calling thread's handle, or null if the wait elapsed first. */
    private static LockHandle take(DistributedLock lock, Duration wait) throws InterruptedException {
        // like tryLock(time, unit): an interrupt ends the wait with nothing of it held, synchronously
        return lock.tryAcquire(wait).orElse(null);
    }

    /**
     * Closes {@code held} in reverse order, each even if an earlier one failed; adds the failures to {@code cause}
     * if given, else throws the first with the others suppressed.
     */
    private static void closeAll(List<LockHandle> held, Throwable cause) {
        RuntimeException first = null;
        for (int i = held.size() - 1; i >= 0; i--) {
            try {
                held.get(i).close();
            } catch (RuntimeException e) {
                if (cause != null) {
                    cause.addSuppressed(e);
                } else if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** The holds of one {@link LockProvider#acquireAll} call. */
    private static final class Handle implements MultiLockHandle {
        private final List<LockHandle> handles;
        private final AtomicBoolean closed = new AtomicBoolean();

        Handle(List<LockHandle> handles) {
            this.handles = Collections.unmodifiableList(handles);
        }

        @Override
        public List<LockHandle> handles() {
            return handles;
        }

        @Override
        public long fencingToken(String name) {
            Objects.requireNonNull(name, "name");
            if (closed.get()) {
                throw new IllegalStateException("the locks " + names() + " were released by close()");
            }
            for (LockHandle handle : handles) {
                if (handle.lock().name().equals(name)) {
                    return handle.fencingToken();
                }
            }
            throw new IllegalArgumentException("lock '" + name + "' is not one of " + names());
        }

        @Override
        public boolean isValid() {
            for (LockHandle handle : handles) {
                if (!handle.isValid()) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public CompletableFuture<LockLostException> whenLost() {
            CompletableFuture<LockLostException> first = new CompletableFuture<>();
            List<CompletableFuture<LockLostException>> each = new ArrayList<>(handles.size());
            for (LockHandle handle : handles) {
                CompletableFuture<LockLostException> lost = handle.whenLost();
                each.add(lost);
                lost.thenAccept(first::complete);
            }
            CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
                    .whenComplete((ignored, ended) -> first.cancel(false));
            return first;
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                closeAll(handles, null);
            }
        }

        private List<String> names() {
            List<String> names = new ArrayList<>(handles.size());
            for (LockHandle handle : handles) {
                names.add(handle.lock().name());
            }
            return names;
        }

        @Override
        public String toString() {
            return "MultiLockHandle" + names() + (closed.get() ? " (closed)" : "");
        }
    }
}
