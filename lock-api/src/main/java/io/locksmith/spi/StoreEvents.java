package io.locksmith.spi;

/**
 * How a {@link LockStore} tells the shared machinery about holds it learns are gone on its own, outside any
 * call: a ZooKeeper session that expired, a connection whose loss freed session locks.
 */
public interface StoreEvents {

    /** The hold of {@code name} by this provider can no longer be guaranteed. */
    void holdLost(String name, String reason);

    /** Every hold of this provider can no longer be guaranteed. */
    void allHoldsLost(String reason);
}
