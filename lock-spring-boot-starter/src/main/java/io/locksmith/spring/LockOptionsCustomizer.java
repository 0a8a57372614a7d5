package io.locksmith.spring;

import io.locksmith.LockOptions;

/**
 * Adjusts the {@link LockOptions} of the providers the starter builds, after the {@code locksmith.*} properties
 * (a {@link io.locksmith.LockListener}, say). Declare it as a bean.
 */
@FunctionalInterface
public interface LockOptionsCustomizer {

    /** Changes {@code builder} in place. */
    void customize(LockOptions.Builder builder);
}
