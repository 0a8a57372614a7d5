package io.locksmith.tests;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Tag;

/** A store that ignores the requested lease and takes (and renews) every hold for an hour. */
@Tag("mutant")
class BrokenLeaseMutant extends LocalMutantContract {

    private static final Duration HOUR = Duration.ofHours(1);

    @Override
    LockStore decorate(LockStore store) {
        return new BrokenExclusionMutant.ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
                return delegate.tryAcquire(name, owner, HOUR, wait);
            }

            @Override
            public Set<String> renew(Map<String, String> holds, Duration lease) {
                return delegate.renew(holds, HOUR);
            }
        };
    }
}
