package io.locksmith.local;

import io.locksmith.LockInfo;
import io.locksmith.LockOptions;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;

/** The {@link LockStore} of a {@link LocalLockServer}, one per provider. */
final class LocalLockStore implements LockStore<LocalLockStore.LocalHold> {

    private final LocalLockServer server;
    private final String namespace;
    private final Duration timeout;

    LocalLockStore(LocalLockServer server, LockOptions options) {
        this.server = server;
        this.namespace = options.namespace();
        this.timeout = options.operationTimeout();
    }

    @Override
    public String address() {
        return server.toString();
    }

    @Override
    public LocalHold newHold(String name, String owner) {
        return new LocalHold(key(name), owner, false, null);
    }

    @Override
    public boolean supportsSharedHolds() {
        return true;
    }

    @Override
    public LocalHold newSharedHold(String name, String owner, LocalHold ownWrite) {
        return new LocalHold(key(name), owner, true, ownWrite == null ? null : ownWrite.owner);
    }

    @Override
    public Acquisition tryAcquire(LocalHold hold, Duration lease, Duration wait, Runnable wakeUp) {
        return server.acquire(hold.key, hold.owner, hold.shared, hold.ownWrite, lease.toNanos(), wakeUp != null,
                timeout);
    }

    @Override
    public boolean takesOver() {
        return true;
    }

    @Override
    public Acquisition takeOver(LocalHold previous, LocalHold hold, Duration lease, Runnable wakeUp) {
        Acquisition outcome = server.takeOver(hold.key, previous.owner, hold.owner, lease.toNanos(), wakeUp != null,
                timeout);
        if (!outcome.isAcquired()) {
            release(previous);
        }
        return outcome;
    }

    @Override
    public void abandon(LocalHold hold) {
        server.abandon(hold.key, hold.owner, timeout);
    }

    @Override
    public boolean release(LocalHold hold) {
        return server.release(hold.key, hold.owner, timeout);
    }

    @Override
    public RenewResult<LocalHold> renew(List<LocalHold> holds, Duration lease) {
        Set<LocalHold> gone = new HashSet<>();
        for (LocalHold hold : holds) {
            if (!server.renew(hold.key, hold.owner, lease.toNanos(), timeout)) {
                gone.add(hold);
            }
        }
        return RenewResult.gone(gone);
    }

    @Override
    public boolean isLocked(String name) {
        return server.isLocked(key(name), timeout);
    }

    @Override
    public LockInfo inspect(String name) {
        return server.inspect(key(name), name, timeout);
    }

    @Override
    public boolean forceRelease(String name) {
        return server.forceRelease(key(name), timeout);
    }

    @Override
    public OptionalInt semaphorePermits(String name) {
        return server.semaphorePermits(key(name), timeout);
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        server.setSemaphorePermits(key(name), permits, timeout);
    }

    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        Runnable unsubscribe = server.subscribe(key(name), onRelease);
        return unsubscribe::run;
    }

    @Override
    public void close() {
    }

    private String key(String name) {
        return LocalLockServer.key(namespace, name);
    }

    /**
     * One acquisition run: the server key, the run's owner id, whether it asks for a shared hold, and the owner
     * of the exclusive hold it may be granted beside (a downgrade), or null.
     */
    record LocalHold(String key, String owner, boolean shared, String ownWrite) {
    }
}
