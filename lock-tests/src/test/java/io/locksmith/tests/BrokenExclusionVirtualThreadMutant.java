package io.locksmith.tests;

import org.junit.jupiter.api.Tag;

/** The virtual-thread contract on {@link BrokenExclusionMutant}'s store, which grants every acquisition. */
@Tag("mutant")
class BrokenExclusionVirtualThreadMutant extends VirtualThreadContract {

    BrokenExclusionVirtualThreadMutant() {
        super(new BrokenExclusionMutant());
    }
}
