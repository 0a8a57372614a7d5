package io.locksmith.spi;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.internal.StoreLockProvider;
import java.util.Objects;

/** Turns a backend's {@link LockStore} into a full {@link LockProvider}. */
public final class LockStores {

    private LockStores() {
    }

    /**
     * A provider that runs the shared lock machinery (reentrancy, local queuing, waiting with wake-ups or
     * backoff, one lease renewer, loss handling, close) over {@code store}. The provider owns the store and
     * closes it when it is closed.
     */
    public static LockProvider newProvider(LockStore<?> store, LockOptions options) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(options, "options");
        LockStore<?> wrapped = Objects.requireNonNull(options.storeWrapper().apply(store),
                "the store wrapper returned null");
        return StoreLockProvider.over(wrapped, options);
    }
}
