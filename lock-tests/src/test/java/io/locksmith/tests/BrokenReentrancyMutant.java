package io.locksmith.tests;

import io.locksmith.DistributedLock;
import io.locksmith.LockHandle;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import org.junit.jupiter.api.Tag;

/** A provider whose {@code unlock()} releases every acquisition at once, whatever the hold count. */
@Tag("mutant")
class BrokenReentrancyMutant extends LocalMutantContract {

    @Override
    LockProvider decorate(LockProvider provider) {
        return new LockProvider() {
            @Override
            public DistributedLock getLock(String name) {
                return new FullyUnlocking(provider.getLock(name));
            }

            @Override
            public String clientId() {
                return provider.clientId();
            }

            @Override
            public String backend() {
                return provider.backend();
            }

            @Override
            public LockOptions options() {
                return provider.options();
            }

            @Override
            public void close() {
                provider.close();
            }
        };
    }

    /** Forwards to a lock, except that one unlock() undoes every acquisition. */
    private static final class FullyUnlocking implements DistributedLock {
        private final DistributedLock delegate;

        FullyUnlocking(DistributedLock delegate) {
            this.delegate = delegate;
        }

        @Override
        public void unlock() {
            int holds = Math.max(1, delegate.getHoldCount());
            for (int i = 0; i < holds; i++) {
                delegate.unlock();
            }
        }

        @Override
        public String name() {
            return delegate.name();
        }

        @Override
        public void lock() {
            delegate.lock();
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            delegate.lockInterruptibly();
        }

        @Override
        public boolean tryLock() {
            return delegate.tryLock();
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            return delegate.tryLock(time, unit);
        }

        @Override
        public boolean tryLock(Duration wait, Duration lease) throws InterruptedException {
            return delegate.tryLock(wait, lease);
        }

        @Override
        public boolean isHeldByCurrentThread() {
            return delegate.isHeldByCurrentThread();
        }

        @Override
        public int getHoldCount() {
            return delegate.getHoldCount();
        }

        @Override
        public boolean isLocked() {
            return delegate.isLocked();
        }

        @Override
        public long fencingToken() {
            return delegate.fencingToken();
        }

        @Override
        public LockHandle acquire() {
            return delegate.acquire();
        }

        @Override
        public Optional<LockHandle> tryAcquire(Duration wait) throws InterruptedException {
            return delegate.tryAcquire(wait);
        }

        @Override
        public CompletableFuture<LockHandle> acquireAsync() {
            return delegate.acquireAsync();
        }

        @Override
        public CompletableFuture<LockHandle> tryAcquireAsync(Duration wait) {
            return delegate.tryAcquireAsync(wait);
        }

        @Override
        public Condition newCondition() {
            return delegate.newCondition();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof FullyUnlocking other && delegate.equals(other.delegate);
        }

        @Override
        public int hashCode() {
            return delegate.hashCode();
        }
    }
}
