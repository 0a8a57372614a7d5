package io.locksmith.tests;

import java.util.Optional;
import org.junit.jupiter.api.Tag;

/** The local store seen by a backend test that offers no store control: its failure group has no tests. */
@Tag("mutant")
class NoStoreControlMutant extends LocalMutantContract {

    @Override
    protected Optional<StoreControl> storeControl() {
        return Optional.empty();
    }
}
