package io.locksmith.tests;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;

/** A store that grants every acquisition, with ever larger tokens, whoever holds the lock. */
@Tag("mutant")
class BrokenExclusionMutant extends LocalMutantContract {

    private static final AtomicLong TOKENS = new AtomicLong();

    @Override
    <H> LockStore<H> decorate(LockStore<H> store) {
        return new ForwardingStore<>(store) {
            @Override
            public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
                delegate.tryAcquire(hold, lease, wait, wakeUp);
                return Acquisition.acquired(TOKENS.incrementAndGet());
            }
        };
    }

    /** Forwards every call to another store, and remembers the name and owner id of each hold it made. */
    static class ForwardingStore<H> extends ForwardingLockStore<H> {

        private final Map<H, String[]> made = Collections.synchronizedMap(new WeakHashMap<>());

        ForwardingStore(LockStore<H> delegate) {
            super(delegate);
        }

        @Override
        public H newHold(String name, String owner) {
            H hold = delegate.newHold(name, owner);
            made.put(hold, new String[] {name, owner});
            return hold;
        }

        String name(H hold) {
            return made.get(hold)[0];
        }

        String owner(H hold) {
            return made.get(hold)[1];
        }
    }
}
