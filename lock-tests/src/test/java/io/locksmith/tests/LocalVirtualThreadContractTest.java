package io.locksmith.tests;

import org.junit.jupiter.api.DisplayName;

/**
 * The virtual-thread contract on the in-JVM reference store; needs JDK 21+, so only the {@code virtual-threads}
 * Maven profile runs it.
 */
@DisplayName("local:// backend with thousands of virtual threads")
class LocalVirtualThreadContractTest extends VirtualThreadContract {

    LocalVirtualThreadContractTest() {
        super(new LocalContractTest());
    }

    @Override
    protected int threads() {
        return 5000;
    }
}
