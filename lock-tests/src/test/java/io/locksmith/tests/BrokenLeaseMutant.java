package io.locksmith.tests;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;

/** A store that ignores the requested lease and takes (and renews) every hold for an hour. */
@Tag("mutant")
class BrokenLeaseMutant extends LocalMutantContract {

    private static final Duration HOUR = Duration.ofHours(1);

    @Override
    <H> LockStore<H> decorate(LockStore<H> store) {
        return new BrokenExclusionMutant.ForwardingStore<>(store) {
            @Override
            public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
                return delegate.tryAcquire(hold, HOUR, wait, wakeUp);
            }

            @Override
            public RenewResult<H> renew(List<H> holds, Duration lease) {
                return delegate.renew(holds, HOUR);
            }
        };
    }
}
