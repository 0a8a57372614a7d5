package io.locksmith.local;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.LockProviderFactory;
import io.locksmith.spi.LockStores;
import java.net.URI;
import java.util.Set;

/**
 * Opens providers for {@code local://} and {@code local://name}: in-JVM {@link LocalLockServer}s, the
 * default one when no name is given.
 */
public final class LocalLockProviderFactory implements LockProviderFactory {

    /** The server {@code local://} without a name uses. */
    public static final String DEFAULT_SERVER = "default";

    @Override
    public Set<String> schemes() {
        return Set.of("local");
    }

    @Override
    public LockProvider create(URI uri, LockOptions options) {
        if (uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/")) {
            throw new IllegalArgumentException("local:// URI takes only a server name, as in local://orders; got '"
                    + uri + "'");
        }
        String name = uri.getAuthority() == null || uri.getAuthority().isEmpty() ? DEFAULT_SERVER : uri.getAuthority();
        return LockStores.newProvider(LocalLockServer.named(name).newStore(options), options);
    }
}
