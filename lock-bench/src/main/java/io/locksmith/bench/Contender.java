package io.locksmith.bench;

import java.util.concurrent.locks.Lock;

/**
 * One client "process" of a subject under test (a Locksmith provider, a Redisson client, a Curator client, a
 * Spring lock registry, or a bare store client for the floor), handing out a {@link Lock} per name.
 */
interface Contender extends AutoCloseable {

    /** The lock for {@code name}; the same name on the same contender gives a lock with the same holds. */
    Lock lock(String name);

    @Override
    void close();
}
