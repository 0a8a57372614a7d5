package io.locksmith.spi;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.net.URI;
import java.util.Set;

/**
 * Creates providers for the URI schemes of one backend; found by {@link LockProvider#open(String)} through
 * {@link java.util.ServiceLoader}, so register implementations in
 * {@code META-INF/services/io.locksmith.spi.LockProviderFactory}.
 */
public interface LockProviderFactory {

    /** The lower-case URI schemes this backend serves, such as {@code redis} and {@code rediss}. */
    Set<String> schemes();

    /**
     * Opens a provider for the store the URI names; the provider owns whatever client it creates.
     *
     * @throws IllegalArgumentException if the URI is not a valid address for this backend, naming what is wrong
     * @throws io.locksmith.LockBackendException if the store cannot be reached
     */
    LockProvider create(URI uri, LockOptions options);
}
