package io.locksmith.tests;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import java.time.Duration;
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
    static class ForwardingStore extends ForwardingLockStore {

        ForwardingStore(LockStore delegate) {
            super(delegate);
        }
    }
}
