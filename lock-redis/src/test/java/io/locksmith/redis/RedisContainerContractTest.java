package io.locksmith.redis;

import io.locksmith.tests.servers.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;

/**
 * The contract on one Redis server in a container started through Testcontainers ({@code docker kill} and
 * {@code docker pause} for the failure tests): the run that proves the Testcontainers path of the fixtures.
 */
@DisplayName("redis:// backend contract (single server, Testcontainers)")
class RedisContainerContractTest extends RedisServerContract {

    private static RedisServer server;
    private static RedisAdmin admin;

    @BeforeAll
    static void startServer() {
        server = RedisServer.startContainer();
        admin = new RedisAdmin(server);
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Override
    RedisServer server() {
        return server;
    }

    @Override
    RedisAdmin admin() {
        return admin;
    }
}
