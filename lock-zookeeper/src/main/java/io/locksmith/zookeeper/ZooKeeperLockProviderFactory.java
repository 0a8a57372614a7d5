package io.locksmith.zookeeper;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.LockProviderFactory;
import java.net.URI;
import java.util.Objects;
import java.util.Set;

/**
 * Opens providers for {@code zookeeper://[user:password@]host1:2181,host2:2181[/chroot][?parameters]}, each with
 * a Curator client of its own; see {@link ZooKeeperLockProviders} for the client's timeouts and the parameters.
 */
public final class ZooKeeperLockProviderFactory implements LockProviderFactory {

    /** A factory; {@link java.util.ServiceLoader} creates it. */
    public ZooKeeperLockProviderFactory() {
    }

    @Override
    public Set<String> schemes() {
        return Set.of("zookeeper");
    }

    @Override
    public LockProvider create(URI uri, LockOptions options) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        return ZooKeeperLockProviders.open(ZooKeeperUri.parse(uri), options, null);
    }
}
