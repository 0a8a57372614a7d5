package io.locksmith.tests;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import org.junit.jupiter.api.Tag;

/**
 * A store whose waiting writers never claim the next turn (their attempts are sent as if they would not wait), so
 * that new readers keep passing them.
 */
@Tag("mutant")
class WriterNeverClaimsMutant extends LocalMutantContract {

    @Override
    <H> LockStore<H> decorate(LockStore<H> store) {
        Set<H> shared = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
        return new ForwardingLockStore<>(store) {
            @Override
            public H newSharedHold(String name, String owner, H ownWrite) {
                H hold = delegate.newSharedHold(name, owner, ownWrite);
                shared.add(hold);
                return hold;
            }

            @Override
            public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
                return delegate.tryAcquire(hold, lease, wait, shared.contains(hold) ? wakeUp : null);
            }
        };
    }
}
