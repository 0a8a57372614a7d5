package io.locksmith.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.tests.LockProviderContract;
import io.locksmith.tests.StoreControl;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.Optional;
import java.util.Set;

/**
 * The lock-tests contract on one database in one mode. Every provider gets its own HikariCP pool, as if it were
 * another process; round trips are counted on the client side (every statement, commit, rollback and validity
 * check is one), because the servers are shared and their own counters see everybody's traffic, and only those of
 * the test's own providers, because providers of earlier tests in the same JVM may still be at work. The store
 * control drops connections by killing, from the server side, every connection the test's providers opened.
 */
abstract class JdbcContract extends LockProviderContract {

    private final TrackedDataSource tracked = new TrackedDataSource(target());
    private final List<GrantedHolds> sessionStores = new CopyOnWriteArrayList<>();

    /** The database under test. */
    abstract JdbcTarget target();

    /** The mode under test. */
    abstract Mode mode();

    /**
     * Whether the providers' pools hand out connections in autocommit, as the pools of the jdbc: URI form do.
     * By default they do not: the contract on each dialect and mode runs over a pool configured like a Spring or
     * Hibernate application's ({@code autoCommit=false}), which the store must set and restore itself. The runs
     * through MySQL Connector/J and through Testcontainers keep autocommit on, so both kinds of pool are covered
     * without running the whole contract twice per dialect.
     */
    boolean autoCommitPool() {
        return false;
    }

    /** The lock table of this mode's contract runs. */
    final String table() {
        return "locksmith_contract_" + mode().name().toLowerCase();
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        // session mode keeps a connection per held lock: the kit holds up to 27 names at once on one provider
        HikariDataSource pool = target().pool(options.operationTimeout(), mode() == Mode.SESSION ? 40 : 8,
                config -> config.setAutoCommit(autoCommitPool()));
        connectOnce(pool);
        LockStore<?> store = JdbcLockProviders.builder(tracked.wrap(pool))
                .mode(mode())
                .table(table())
                .options(options)
                .closing(pool, target().jdbcUrl())
                .buildStore();
        GrantedHolds session = GrantedHolds.wrap(store, options.namespace());
        if (session != null) {
            sessionStores.add(session);
            store = session;
        }
        return LockStores.newProvider(store, options);
    }

    /**
     * Lets a new pool make its first connection before the provider is handed to a test, as an application's pool
     * has connected long before its first lock: a fresh pool connects on first use, and on a loaded machine that
     * connection (a server process forked behind a container's port) can take longer than the kit's one-second
     * operation timeout, which would fail the test's first lock for a reason it does not test. Best effort: a store
     * that is down or paused now is the test's business, and the pool goes on connecting in the background.
     */
    private static void connectOnce(HikariDataSource pool) {
        try (Connection ignored = pool.getConnection()) {
            // connected
        } catch (SQLException notNow) {
            // down, paused or slow: the test's own operations meet that state
        }
    }

    /**
     * Kills, from the server side, the connection whose open transaction holds the session-mode row lock of
     * {@code name}, as a DBA killing a session would; the database rolls back and frees the row at once.
     */
    final void killHolder(String namespace, String name) throws SQLException {
        for (GrantedHolds store : sessionStores) {
            Connection holder = store.connectionOf(namespace, name);
            if (holder != null) {
                tracked.kill(holder);
                return;
            }
        }
        throw new IllegalStateException("no provider of this test holds '" + name + "' in " + namespace);
    }

    @Override
    protected long storeOperationCount() {
        return tracked.roundTrips(); // this test's providers only
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        return target().heldNames(table(), mode(), namespace);
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        try {
            if (mode() == Mode.LEASE) {
                target().clearOwner(table(), namespace, name);
            } else if (target().deleteReaders(table(), namespace, name) == 0) {
                killHolder(namespace, name); // no read hold: a write hold's connection
            }
        } catch (Exception e) {
            throw new IllegalStateException("could not force the release of '" + name + "'", e);
        }
    }

    @Override
    protected Optional<StoreControl> storeControl() {
        return Optional.of(new StoreControl() {
            @Override
            public Set<Fault> faults() {
                return Set.of(Fault.DROP_CONNECTIONS);
            }

            @Override
            public void dropConnections() {
                try {
                    tracked.dropConnections();
                } catch (SQLException e) {
                    throw new IllegalStateException("could not kill the providers' connections", e);
                }
            }
        });
    }
}
