package io.locksmith.tests;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.local.LocalLockServer;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;

/** The contract run against the in-JVM reference store, through {@code LockProvider.open("local://…")}. */
@DisplayName("local:// backend contract")
class LocalContractTest extends LockProviderContract {

    private static final LocalLockServer SERVER = LocalLockServer.named("contract-" + UUID.randomUUID());

    @Override
    protected LockProvider newProvider(LockOptions options) {
        return LockProvider.open("local://" + SERVER.name(), options);
    }

    @Override
    protected long storeOperationCount() {
        return SERVER.operationCount();
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        return SERVER.heldNames(namespace);
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        SERVER.forceRelease(namespace, name);
    }

    @Override
    protected Optional<StoreControl> storeControl() {
        return Optional.of(new LocalServerControl(SERVER));
    }

    /** Kills, restarts, pauses and resumes a {@link LocalLockServer}. */
    static final class LocalServerControl implements StoreControl {
        private final LocalLockServer server;

        LocalServerControl(LocalLockServer server) {
            this.server = server;
        }

        @Override
        public Set<Fault> faults() {
            return EnumSet.of(Fault.KILL, Fault.PAUSE);
        }

        @Override
        public void kill() {
            server.kill();
        }

        @Override
        public void restart() {
            server.start();
        }

        @Override
        public void pause() {
            server.pause();
        }

        @Override
        public void resume() {
            server.resume();
        }
    }
}
