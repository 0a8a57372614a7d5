package io.locksmith.tests;

import org.junit.jupiter.api.Tag;

/**
 * The mutant harness with nothing broken: a provider built by {@code LockStores.newProvider} over the local
 * store. It must pass, which shows that the mutants fail because of their defect and not because of the harness.
 */
@Tag("mutant")
class PassThroughMutant extends LocalMutantContract {
}
