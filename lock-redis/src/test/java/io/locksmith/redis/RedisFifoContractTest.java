package io.locksmith.redis;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.servers.RedisServer;
import org.junit.jupiter.api.DisplayName;

/** The whole contract on one Redis server with FIFO fairness across providers ({@code ?fairness=fifo}). */
@DisplayName("redis:// backend contract, fairness=fifo (single server)")
class RedisFifoContractTest extends RedisServerContract {

    RedisFifoContractTest() {
        super(RedisServer::start);
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        return LockProvider.open(server().uri() + "?fairness=fifo", options);
    }

    @Override
    protected boolean runsPrimitives() {
        return false; // built on the lock API alone: RedisContractTest runs the primitives' groups on this server
    }
}
