package io.locksmith.internal;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedReadWriteLock;

/** A read-write lock of a {@link StoreLockProvider}: its two sides; all state lives in the provider. */
final class StoreReadWriteLock implements DistributedReadWriteLock {

    private final StoreLock read;
    private final StoreLock write;

    StoreReadWriteLock(StoreLock read, StoreLock write) {
        this.read = read;
        this.write = write;
    }

    @Override
    public String name() {
        return write.name();
    }

    @Override
    public DistributedLock readLock() {
        return read;
    }

    @Override
    public DistributedLock writeLock() {
        return write;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoreReadWriteLock other && other.write.equals(write);
    }

    @Override
    public int hashCode() {
        return write.hashCode();
    }

    @Override
    public String toString() {
        return "DistributedReadWriteLock{'" + name() + "' on " + write.provider().backend() + '}';
    }
}
