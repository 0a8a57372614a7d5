package io.locksmith;

import java.util.concurrent.locks.ReadWriteLock;

/**
 * A read-write lock shared by every process of a namespace, from {@link LockProvider#getReadWriteLock}: many
 * readers at once, or one writer.
 *
 * <pre>{@code
 * DistributedReadWriteLock prices = locks.getReadWriteLock("prices");
 * prices.readLock().lock();
 * try {
 *     return readPrices();
 * } finally {
 *     prices.readLock().unlock();
 * }
 * }</pre>
 *
 * <ul>
 *   <li>Both locks are {@link DistributedLock}s with the lock's rules: reentrant for the thread that holds them,
 *       leased and renewed, reported lost, released by their handles where taken as handles.</li>
 *   <li>The write lock <em>is</em> the lock of the same name: {@code writeLock()} and
 *       {@link LockProvider#getLock getLock(name)} exclude each other and share their fencing counter. Each write
 *       hold gets a fencing token greater than every earlier write's and read's; a read hold's token is at least
 *       that of the last write granted before it and below every later write's (on local:// and Redis exactly the
 *       last write's, 0 if none ever was; on ZooKeeper the creation zxid of the reader's own node), so a resource
 *       can tell which write a reader saw, and refuse a writer older than a read it served.</li>
 *   <li>A writer waiting for the readers to leave is not starved by new readers: once it has asked (claimed the
 *       next turn), readers that do not hold the lock yet wait behind it, in every process.</li>
 *   <li>Downgrade: a thread that holds the write lock may take the read lock, then release the write lock, and
 *       keep reading. Upgrade (asking for the write lock while holding the read lock) would wait for the
 *       thread's own read hold: it is refused with an {@link IllegalMonitorStateException}.</li>
 *   <li>{@link DistributedLock#isLocked()} of either lock tells whether anybody holds the lock in either mode.</li>
 * </ul>
 *
 * <p>Not every backend keeps read holds: {@link LockProvider#getReadWriteLock} says so with an
 * {@link UnsupportedOperationException} (see docs/primitives.md).
 */
public interface DistributedReadWriteLock extends ReadWriteLock {

    /** The lock's name. */
    String name();

    /** The shared side: many holders at once, none while somebody holds the write lock. */
    @Override
    DistributedLock readLock();

    /** The exclusive side: the same lock as {@link LockProvider#getLock getLock(name())}. */
    @Override
    DistributedLock writeLock();
}
