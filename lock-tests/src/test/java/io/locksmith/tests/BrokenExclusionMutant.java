package io.locksmith.tests;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;

/** A store that grants every acquisition, with ever larger tokens, whoever holds the lock. */
@Tag("mutant")
class BrokenExclusionMutant extends LocalMutantContract {

    private static final AtomicLong TOKENS = new AtomicLong();

    @Override
    LockStore decorate(LockStore store) {
        return new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
                delegate.tryAcquire(name, owner, lease, wait);
                return Acquisition.acquired(TOKENS.incrementAndGet());
            }
        };
    }

    /** Forwards every call to another store. */
    static class ForwardingStore implements LockStore {
        final LockStore delegate;

        ForwardingStore(LockStore delegate) {
            this.delegate = delegate;
        }

        @Override
        public String address() {
            return delegate.address();
        }

        @Override
        public void start(io.locksmith.spi.StoreEvents events) {
            delegate.start(events);
        }

        @Override
        public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
            return delegate.tryAcquire(name, owner, lease, wait);
        }

        @Override
        public boolean release(String name, String owner) {
            return delegate.release(name, owner);
        }

        @Override
        public Set<String> renew(Map<String, String> holds, Duration lease) {
            return delegate.renew(holds, lease);
        }

        @Override
        public int renewBatchSize() {
            return delegate.renewBatchSize();
        }

        @Override
        public boolean isLocked(String name) {
            return delegate.isLocked(name);
        }

        @Override
        public Subscription subscribe(String name, Runnable onRelease) {
            return delegate.subscribe(name, onRelease);
        }

        @Override
        public void abandon(String name, String owner) {
            delegate.abandon(name, owner);
        }

        @Override
        public void close() {
            delegate.close();
        }
    }
}
