package io.locksmith.redis;

import io.locksmith.tests.servers.RedisServer;
import org.junit.jupiter.api.DisplayName;

/**
 * The contract on one Redis server in a container started through Testcontainers ({@code docker kill} and
 * {@code docker pause} for the failure tests): the run that proves the Testcontainers path of the fixtures.
 */
@DisplayName("redis:// backend contract (single server, Testcontainers)")
class RedisContainerContractTest extends RedisServerContract {

    RedisContainerContractTest() {
        super(RedisServer::startContainer);
    }

    @Override
    protected boolean runsCallFaults() {
        return false; // the same server binary as RedisContractTest, which runs the call-fault group
    }

    @Override
    protected boolean runsPrimitives() {
        return false; // the same server binary as RedisContractTest, which runs the primitives' groups
    }
}
