package io.locksmith.redis;

import io.locksmith.tests.VirtualThreadContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;

/**
 * The virtual-thread contract on one Redis server of our own, the one {@link RedisContractTest} uses; needs
 * JDK 21+, so only the {@code virtual-threads} Maven profile runs it.
 */
@DisplayName("redis:// backend (single server) with thousands of virtual threads")
class RedisVirtualThreadContractTest extends VirtualThreadContract {

    RedisVirtualThreadContractTest() {
        super(new RedisContractTest());
    }

    @AfterAll
    static void stopServer() {
        RedisServerContract.stopServers();
    }
}
