package io.locksmith.tests;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.local.LocalLockServer;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

/**
 * The contract over a local store that a subclass may break on purpose, by decorating the {@link LockStore} or
 * the finished {@link LockProvider}. Each subclass gets a server of its own.
 */
abstract class LocalMutantContract extends LockProviderContract {

    private final LocalLockServer server = LocalLockServer.named(getClass().getSimpleName() + "-" + UUID.randomUUID());

    /** The store the provider runs on; unchanged unless a mutant overrides it. */
    <H> LockStore<H> decorate(LockStore<H> store) {
        return store;
    }

    /** The provider handed to the kit; unchanged unless a mutant overrides it. */
    LockProvider decorate(LockProvider provider) {
        return provider;
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        return decorate(LockStores.newProvider(decorate(server.newStore(options)), options));
    }

    @Override
    protected long storeOperationCount() {
        return server.operationCount();
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        return server.heldNames(namespace);
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        server.forceRelease(namespace, name);
    }

    @Override
    protected Optional<StoreControl> storeControl() {
        return Optional.of(new LocalContractTest.LocalServerControl(server));
    }
}
