package io.locksmith.jdbc;

import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import java.sql.Connection;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A session-mode store that remembers the holds it granted, so that a test can reach the connection whose open
 * transaction holds a lock (to kill it from the server, as a DBA would). The store keeps no such record itself:
 * each hold carries its connection through the machinery.
 */
final class GrantedHolds extends ForwardingLockStore<SessionStore.SessionHold> {

    private final String namespace;
    private final Queue<SessionStore.SessionHold> granted = new ConcurrentLinkedQueue<>();

    /** Wraps {@code store}, whose locks live in {@code namespace}, if it is a session-mode store; else null. */
    static GrantedHolds wrap(LockStore<?> store, String namespace) {
        return store instanceof SessionStore session ? new GrantedHolds(session, namespace) : null;
    }

    private GrantedHolds(SessionStore store, String namespace) {
        super(store);
        this.namespace = namespace;
    }

    @Override
    public Acquisition tryAcquire(SessionStore.SessionHold hold, Duration lease, Duration wait, Runnable wakeUp) {
        Acquisition acquisition = super.tryAcquire(hold, lease, wait, wakeUp);
        if (acquisition.isAcquired()) {
            granted.removeIf(ended -> ended.connection() == null);
            granted.add(hold);
        }
        return acquisition;
    }

    /** The connection whose transaction holds {@code name} in {@code namespace} through this store, or null. */
    Connection connectionOf(String namespace, String name) {
        if (!namespace.equals(this.namespace)) {
            return null;
        }
        for (SessionStore.SessionHold hold : granted) {
            Connection connection = hold.connection();
            if (connection != null && hold.name.equals(name)) {
                return connection;
            }
        }
        return null;
    }
}
