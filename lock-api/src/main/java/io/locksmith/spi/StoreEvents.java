package io.locksmith.spi;

/**
 * How a {@link LockStore} tells the shared machinery about holds it learns are gone on its own, outside any
 * call: a ZooKeeper session that expired, a connection whose loss freed session locks.
 *
 * @param <H> the store's hold type
 */
public interface StoreEvents<H> {

    /**
     * {@code hold} can no longer be guaranteed. A loss names the store's own hold object, so a late event about
     * an earlier hold never marks a newer hold of the same name lost. An event about a hold the machinery no
     * longer keeps (released, already lost) is ignored.
     */
    void holdLost(H hold, String reason);

    /** Every hold of this provider can no longer be guaranteed. */
    void allHoldsLost(String reason);
}
