package io.locksmith.spi;

/**
 * How a {@link LockStore} tells the shared machinery about holds it learns are gone on its own, outside any
 * call: a ZooKeeper session that expired, a connection whose loss freed session locks.
 */
public interface StoreEvents {

    /**
     * The hold of {@code name} by {@code owner} can no longer be guaranteed. A loss names its owner id, so a late
     * event about an earlier hold never marks a newer hold of the same name lost.
     */
    void holdLost(String name, String owner, String reason);

    /** Every hold of this provider can no longer be guaranteed. */
    void allHoldsLost(String reason);
}
