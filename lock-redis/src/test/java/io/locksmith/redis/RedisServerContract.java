package io.locksmith.redis;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.LockProviderContract;
import io.locksmith.tests.StoreControl;
import io.locksmith.tests.servers.RedisServer;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;

/**
 * The contract on one Redis server the tests own, through the URI form ({@code LockProvider.open("redis://…")}),
 * with the server killed, paused and its connections dropped for the failure tests. A subclass says where the
 * server comes from.
 */
abstract class RedisServerContract extends LockProviderContract {

    /** The server of each running contract class, started by its first test and stopped after its last. */
    private static final Map<Class<?>, Started> STARTED = new ConcurrentHashMap<>();

    private final Supplier<RedisServer> start;

    /** Takes how to start the class's server. */
    RedisServerContract(Supplier<RedisServer> start) {
        this.start = start;
    }

    @AfterAll
    static void stopServers() {
        STARTED.values().forEach(started -> started.server().close());
        STARTED.clear();
    }

    /** The server under test, started for the class's first test. */
    final RedisServer server() {
        return started().server();
    }

    /** The admin connection to {@link #server()}. */
    final RedisAdmin admin() {
        return started().admin();
    }

    private Started started() {
        return STARTED.computeIfAbsent(getClass(), c -> {
            RedisServer server = start.get();
            return new Started(server, new RedisAdmin(server));
        });
    }

    private record Started(RedisServer server, RedisAdmin admin) {
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        return LockProvider.open(server().uri(), options);
    }

    @Override
    protected long storeOperationCount() {
        return admin().commandsExceptInfo();
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        return admin().heldNames(namespace);
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        admin().forceRelease(namespace, name);
    }

    @Override
    protected Optional<StoreControl> storeControl() {
        return server().isControllable() ? Optional.of(new ServerControl(server(), admin())) : Optional.empty();
    }

    /** Kills and restarts, pauses and resumes a Redis server (a process or a container), or drops its clients. */
    static final class ServerControl implements StoreControl {
        private final RedisServer server;
        private final RedisAdmin admin;

        ServerControl(RedisServer server, RedisAdmin admin) {
            this.server = server;
            this.admin = admin;
        }

        @Override
        public Set<Fault> faults() {
            return EnumSet.of(Fault.KILL, Fault.PAUSE, Fault.DROP_CONNECTIONS);
        }

        @Override
        public void kill() {
            server.kill();
        }

        @Override
        public void restart() {
            server.restart();
        }

        @Override
        public void pause() {
            server.pause();
        }

        @Override
        public void resume() {
            server.resume();
        }

        @Override
        public void dropConnections() {
            admin.dropConnections();
        }
    }
}
