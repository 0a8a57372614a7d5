package io.locksmith.tests;

import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import org.junit.jupiter.api.Tag;

/** A store whose read holds live apart from the write holds of the same name: readers and writers never meet. */
@Tag("mutant")
class ReadersIgnoreWritersMutant extends LocalMutantContract {

    @Override
    <H> LockStore<H> decorate(LockStore<H> store) {
        return new ForwardingLockStore<>(store) {
            @Override
            public H newSharedHold(String name, String owner, H ownWrite) {
                return delegate.newSharedHold(name + "#readers", owner, null);
            }
        };
    }
}
