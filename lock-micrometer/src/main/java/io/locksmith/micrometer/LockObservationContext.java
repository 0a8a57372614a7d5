package io.locksmith.micrometer;

import io.micrometer.observation.Observation;

/**
 * The context of a lock's {@link LockObservations#WAIT wait} or {@link LockObservations#HOLD hold} observation,
 * for handlers and filters that want the lock's name or store.
 */
public final class LockObservationContext extends Observation.Context {

    private final String backend;
    private final String lockName;

    LockObservationContext(String backend, String lockName) {
        this.backend = backend;
        this.lockName = lockName;
    }

    /** The provider's store address, without credentials. */
    public String backend() {
        return backend;
    }

    /** The lock's name. */
    public String lockName() {
        return lockName;
    }
}
