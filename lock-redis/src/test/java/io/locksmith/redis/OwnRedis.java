package io.locksmith.redis;

import io.locksmith.tests.servers.RedisServer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A Redis server of a test class's own, started before its first test and stopped after its last, with an admin
 * connection to look into it: {@code @RegisterExtension static final OwnRedis REDIS = new OwnRedis();}.
 */
final class OwnRedis implements BeforeAllCallback, AfterAllCallback {

    private RedisServer server;
    private RedisAdmin admin;

    @Override
    public void beforeAll(ExtensionContext context) {
        server = RedisServer.start();
        admin = new RedisAdmin(server);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (server != null) {
            server.close();
        }
    }

    RedisServer server() {
        return server;
    }

    RedisAdmin admin() {
        return admin;
    }
}
