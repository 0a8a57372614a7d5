package io.locksmith.bench;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A {@link Lock} that only locks and unlocks: the floor's bare store calls, or a peer whose API is not a
 * {@code Lock}.
 */
abstract class LockAdapter implements Lock {

    @Override
    public void lockInterruptibly() {
        lock();
    }

    @Override
    public boolean tryLock() {
        throw new UnsupportedOperationException("only lock() and unlock() are benchmarked");
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) {
        throw new UnsupportedOperationException("only lock() and unlock() are benchmarked");
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("only lock() and unlock() are benchmarked");
    }
}
