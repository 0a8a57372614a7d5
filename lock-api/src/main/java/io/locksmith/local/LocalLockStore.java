package io.locksmith.local;

import io.locksmith.LockInfo;
import io.locksmith.LockOptions;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/** The {@link LockStore} of a {@link LocalLockServer}, one per provider. */
final class LocalLockStore implements LockStore {

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
    public Acquisition tryAcquire(String name, String owner, Duration lease, Duration wait) {
        long answer = server.acquire(key(name), owner, lease.toNanos(), timeout);
        return answer > 0 ? Acquisition.acquired(answer) : Acquisition.busy(Duration.ofNanos(-answer));
    }

    @Override
    public boolean release(String name, String owner) {
        return server.release(key(name), owner, timeout);
    }

    @Override
    public Set<String> renew(Map<String, String> holds, Duration lease) {
        Map<String, String> keys = new LinkedHashMap<>(holds.size() * 2);
        holds.forEach((name, owner) -> keys.put(key(name), owner));
        Set<String> gone = new HashSet<>();
        int prefix = namespace.length() + 1;
        for (String key : server.renew(keys, lease.toNanos(), timeout)) {
            gone.add(key.substring(prefix));
        }
        return gone;
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
}
