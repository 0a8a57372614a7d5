package io.locksmith.tests;

import io.locksmith.spi.LockStore;
import org.junit.jupiter.api.Tag;

/**
 * A store that releases any hold of the releasing client, as a store keyed by client id instead of by owner id
 * would: a late release of an earlier hold then frees the client's newer hold.
 */
@Tag("mutant")
class OwnerBlindMutant extends LocalMutantContract {

    @Override
    <H> LockStore<H> decorate(LockStore<H> store) {
        return new BrokenExclusionMutant.ForwardingStore<>(store) {
            @Override
            public boolean release(H hold) {
                String name = name(hold);
                String owner = owner(hold);
                String client = owner.substring(0, owner.indexOf('.') + 1);
                String holder = delegate.inspect(name).owner().orElse(owner);
                return delegate.release(holder.startsWith(client) ? delegate.newHold(name, holder) : hold);
            }
        };
    }
}
