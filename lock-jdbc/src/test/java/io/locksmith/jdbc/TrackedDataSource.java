package io.locksmith.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * A {@link DataSource} wrapper for tests: counts every round trip the lock store makes (statement executions,
 * commits, rollbacks, validity checks) and remembers the server-side id of every physical connection handed
 * out, so a test can kill them all from the server as a network failure would.
 */
final class TrackedDataSource {


    private static final Set<String> COUNTED_STATEMENT_METHODS = Set.of("execute", "executeQuery", "executeUpdate",
            "executeLargeUpdate", "executeBatch", "executeLargeBatch");
    private static final Set<String> COUNTED_CONNECTION_METHODS = Set.of("commit", "rollback", "isValid");
    private static final Set<String> STATEMENT_FACTORIES = Set.of("createStatement", "prepareStatement",
            "prepareCall");

    /** A statement that waits for no lock and runs this long gets the server's view (see {@link SlowWatch}). */
    private static final long SLOW_NANOS = TimeUnit.MILLISECONDS.toNanos(600);
    private static final ScheduledExecutorService WATCH = Executors.newSingleThreadScheduledExecutor(task -> {
        Thread thread = new Thread(task, "slow-statement-watch");
        thread.setDaemon(true);
        return thread;
    });

    private final JdbcTarget target;
    /**
     * Round trips made through the data sources this one wrapped: a test's own, so that another test's providers
     * still at work in the same JVM (a release retried in the background, a renewal) do not count.
     */
    private final AtomicLong roundTrips = new AtomicLong();
    private final Map<Connection, Long> ids = Collections.synchronizedMap(new WeakHashMap<>());

    TrackedDataSource(JdbcTarget target) {
        this.target = target;
    }

    /** Round trips made so far through the data sources this one wrapped. */
    long roundTrips() {
        return roundTrips.get();
    }

    /** Wraps {@code dataSource}; connections it hands out are counted and remembered. */
    DataSource wrap(DataSource dataSource) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    Object result = invoke(dataSource, method, args);
                    if (result instanceof Connection connection && method.getName().equals("getConnection")) {
                        remember(connection);
                        return proxy(Connection.class, connection, this::onConnection);
                    }
                    return result;
                });
    }

    /** Kills every remembered connection from the server side. */
    void dropConnections() throws SQLException {
        List<Long> all;
        synchronized (ids) {
            all = new ArrayList<>(ids.values());
        }
        for (long id : all) {
            target.kill(id);
        }
    }

    /** Kills, from the server side, the physical connection behind {@code connection}. */
    void kill(Connection connection) throws SQLException {
        Long id = ids.get(connection.unwrap(Connection.class));
        if (id == null) {
            throw new IllegalStateException("not a connection of this data source: " + connection);
        }
        target.kill(id);
    }

    private void remember(Connection connection) throws SQLException {
        Connection physical = connection.unwrap(Connection.class);
        if (!ids.containsKey(physical)) {
            ids.put(physical, target.connectionId(connection));
        }
    }

    private Object onConnection(Object connection, Method method, Object[] args) throws Throwable {
        if (COUNTED_CONNECTION_METHODS.contains(method.getName())) {
            roundTrips.incrementAndGet();
        }
        Object result = invoke(connection, method, args);
        if (result instanceof Statement statement && STATEMENT_FACTORIES.contains(method.getName())) {
            Class<?> type = method.getReturnType();
            String prepared = method.getName().startsWith("prepare") ? (String) args[0] : null;
            Long id = ids.get(((Connection) connection).unwrap(Connection.class));
            return proxy(type, statement, (target, m, a) -> {
                if (!COUNTED_STATEMENT_METHODS.contains(m.getName())) {
                    return invoke(target, m, a);
                }
                roundTrips.incrementAndGet();
                String sql = prepared != null ? prepared : a != null && a.length > 0 && a[0] instanceof String s ? s
                        : null;
                if (id == null || sql == null || waitsForLocks(sql)) {
                    return invoke(target, m, a);
                }
                SlowWatch watch = new SlowWatch(id, sql);
                try {
                    return invoke(target, m, a);
                } catch (SQLException e) {
                    watch.report(e);
                    throw e;
                } finally {
                    watch.cancel();
                }
            });
        }
        return result;
    }

    /** Locking reads wait for holders by design; every other statement of the stores is short. */
    private static boolean waitsForLocks(String sql) {
        String upper = sql.toUpperCase(Locale.ROOT);
        return upper.contains("FOR UPDATE") || upper.contains("FOR SHARE") || upper.contains("LOCK IN SHARE MODE");
    }

    /**
     * Looks at the server once a statement that waits for nobody has run for {@link #SLOW_NANOS}: what its
     * connection waits for and who holds that. A statement that then fails carries the view as a suppressed
     * exception, so that a timeout in a test says whether it was a lock wait (and whose) or a slow server.
     */
    private final class SlowWatch {
        private final long start = System.nanoTime();
        private final String sql;
        private final CompletableFuture<List<String>> view = new CompletableFuture<>();
        private final ScheduledFuture<?> look;

        SlowWatch(long id, String sql) {
            this.sql = sql;
            this.look = WATCH.schedule(() -> {
                try {
                    view.complete(target.serverView(id));
                } catch (SQLException | RuntimeException e) {
                    view.complete(List.of("(could not look: " + e + ")"));
                }
            }, SLOW_NANOS, TimeUnit.NANOSECONDS);
        }

        void report(SQLException failure) {
            if (System.nanoTime() - start < SLOW_NANOS) {
                return;
            }
            List<String> rows;
            try {
                rows = view.get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                rows = List.of("(no view: " + e + ")");
            }
            failure.addSuppressed(new SlowStatement("ran " + (System.nanoTime() - start) / 1_000_000 + " ms: " + sql
                    + "; after " + TimeUnit.NANOSECONDS.toMillis(SLOW_NANOS) + " ms the server showed "
                    + (rows.isEmpty() ? "nothing of it" : String.join(" | ", rows))));
        }

        void cancel() {
            look.cancel(false);
        }
    }

    /** The server's view of a slow statement, attached to its failure. */
    private static final class SlowStatement extends Exception {
        SlowStatement(String message) {
            super(message, null, false, false);
        }
    }

    @FunctionalInterface
    private interface Handler {
        Object handle(Object target, Method method, Object[] args) throws Throwable;
    }

    private static Object proxy(Class<?> type, Object target, Handler handler) {
        InvocationHandler h = (proxy, method, args) -> {
            if (method.getName().equals("unwrap") && args != null && args[0] == Connection.class
                    && target instanceof Connection) {
                return ((Connection) target).unwrap(Connection.class);
            }
            return handler.handle(target, method, args);
        };
        return Proxy.newProxyInstance(TrackedDataSource.class.getClassLoader(), new Class<?>[] {type}, h);
    }

    private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
