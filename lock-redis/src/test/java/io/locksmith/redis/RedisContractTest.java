package io.locksmith.redis;

import io.locksmith.tests.servers.RedisServer;
import org.junit.jupiter.api.DisplayName;

/**
 * The contract on one Redis server of our own (a local {@code redis-server} process, unless the fixture is told
 * otherwise), killed with SIGKILL and paused with SIGSTOP for the failure tests.
 */
@DisplayName("redis:// backend contract (single server)")
class RedisContractTest extends RedisServerContract {

    RedisContractTest() {
        super(RedisServer::start);
    }
}
