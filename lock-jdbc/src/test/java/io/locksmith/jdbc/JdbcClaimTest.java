package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Lease mode's turns across providers, through the store itself and without timing: a waiting run's claim lets
 * others take the lock {@value LockStore#GRANTS_PAST_A_CLAIM} times, then the claimant alone; the claimant's grant,
 * release or abandon ends the claim; an attempt that will not wait claims nothing; a lapsed claim blocks nobody;
 * and a table made by an earlier version gets the claim columns.
 */
@DisplayName("JDBC lease mode: a waiting run's claim to the next turn")
class JdbcClaimTest {

    private static final String TABLE = "locksmith_claim_test";
    private static final Duration LEASE = Duration.ofSeconds(60);
    private static final Duration SLACK = Duration.ofSeconds(10);
    /** The wake-up of an attempt whose caller will wait; the store may or may not run it. */
    private static final Runnable WAITS = () -> { };
    private static final String NAME = "turns";

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "cl" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
        closeAfter.clear();
    }

    private LockOptions options() {
        return LockOptions.builder()
                .namespace(namespace)
                // 5 s: a provider's first connection (driver and H2 start-up) must fit on a busy machine
                .operationTimeout(Duration.ofSeconds(5))
                .build();
    }

    /** A lease-mode store on a pool of its own, as another process would have. */
    @SuppressWarnings("unchecked")
    private LockStore<Object> store(JdbcTarget target, String table, boolean createTable) {
        HikariDataSource pool = target.pool(Duration.ofSeconds(5), 4);
        LockStore<?> store = JdbcLockProviders.builder(pool).mode(Mode.LEASE).table(table).createTable(createTable)
                .options(options()).closing(pool, target.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return (LockStore<Object>) store;
    }

    private LockStore<Object> store(JdbcTarget target) {
        return store(target, TABLE, true);
    }

    /** A lease-mode store whose connections count the statements they prepare into {@code statements}. */
    @SuppressWarnings("unchecked")
    private LockStore<Object> countingStore(JdbcTarget target, AtomicInteger statements) {
        return countingStore(target, statements, new CopyOnWriteArrayList<>());
    }

    /** A store on a pool of its own that counts the statements it prepares and keeps their SQL in {@code sent}. */
    private LockStore<Object> countingStore(JdbcTarget target, AtomicInteger statements, List<String> sent) {
        HikariDataSource pool = target.pool(Duration.ofSeconds(5), 4);
        DataSource counting = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    Object result = invoke(pool, method, args);
                    return result instanceof Connection connection ? countingConnection(connection, statements, sent)
                            : result;
                });
        LockStore<?> store = JdbcLockProviders.builder(counting).mode(Mode.LEASE).table(TABLE).options(options())
                .closing(pool, target.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return (LockStore<Object>) store;
    }

    private static Connection countingConnection(Connection connection, AtomicInteger statements, List<String> sent) {
        return (Connection) Proxy.newProxyInstance(JdbcClaimTest.class.getClassLoader(),
                new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("prepareStatement") || method.getName().equals("createStatement")) {
                        statements.incrementAndGet();
                        if (args != null && args.length > 0 && args[0] instanceof String sql) {
                            sent.add(sql);
                        }
                    }
                    return invoke(connection, method, args);
                });
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** A session-mode store on a pool of its own, as another process would have. */
    @SuppressWarnings("unchecked")
    private LockStore<Object> sessionStore(JdbcTarget target) {
        HikariDataSource pool = target.pool(Duration.ofSeconds(5), 4);
        LockStore<?> store = JdbcLockProviders.builder(pool).mode(Mode.SESSION).table(TABLE).options(options())
                .closing(pool, target.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return (LockStore<Object>) store;
    }

    /** A run of {@code owner} that takes the lock, without waiting; whether it got it. */
    private static boolean takes(LockStore<Object> store, String owner) {
        Object hold = store.newHold(NAME, owner);
        if (!store.tryAcquire(hold, LEASE, Duration.ZERO, null).isAcquired()) {
            return false;
        }
        assertThat(store.release(hold)).as("release by %s", owner).isTrue();
        return true;
    }

    /** Runs of other owners take and release the lock {@code times} times, each without waiting. */
    private static void othersTakeTurns(LockStore<Object> store, String prefix, int times) {
        for (int i = 1; i <= times; i++) {
            assertThat(takes(store, prefix + "." + i)).as("grant %d to another owner", i).isTrue();
        }
    }

    /** A run of {@code owner} that finds the lock busy, will wait, and claims the next turn. */
    private static Object claimant(LockStore<Object> waiters, String owner) {
        Object run = waiters.newHold(NAME, owner);
        Acquisition answer = waiters.tryAcquire(run, LEASE, Duration.ZERO, WAITS);
        assertThat(answer.isClaimed()).as("%s's attempt while held: %s", owner, answer).isTrue();
        return run;
    }

    private String claimant(JdbcTarget target) throws SQLException {
        return target.claimant(TABLE, namespace, NAME);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a take-over replaces the previous hold; right after a claimant's own grant it passes a claim made "
            + "during that hold once, however old its ticket, and the next take-over is refused and frees the lock")
    void takeOverPassesAClaimMadeDuringTheClaimantsHoldOnce(JdbcTarget target) throws Exception {
        List<String> sent = new CopyOnWriteArrayList<>();
        LockStore<Object> mine = countingStore(target, new AtomicInteger(), sent);
        LockStore<Object> theirs = store(target);
        Object first = theirs.newHold(NAME, "a.1");
        long t1 = theirs.tryAcquire(first, LEASE, Duration.ZERO, null).fencingToken();
        Object minesRun = claimant(mine, "m.1");
        Object old = theirs.newHold(NAME, "w.1");
        assertThat(theirs.tryAcquire(old, LEASE, Duration.ZERO, WAITS).isClaimed())
                .as("a second waiter, ticket %d like the claimant's: no claim", t1).isFalse();
        assertThat(theirs.release(first)).isTrue();
        othersTakeTurns(theirs, "o", LockStore.GRANTS_PAST_A_CLAIM);
        Acquisition turn = mine.tryAcquire(minesRun, LEASE, Duration.ZERO, WAITS);
        assertThat(turn.isAcquired()).as("the claimant's turn: %s", turn).isTrue();
        assertThat(theirs.tryAcquire(old, LEASE, Duration.ZERO, WAITS).isClaimed())
                .as("the second waiter claims during the claimant's hold, with its ticket %d: due at once", t1).isTrue();

        Object next = mine.newHold(NAME, "m.2");
        Acquisition passed = mine.takeOver(minesRun, next, LEASE, WAITS);
        assertThat(passed.isAcquired()).as("the take-over right after the claimant's grant: %s", passed).isTrue();
        assertThat(passed.fencingToken()).isEqualTo(turn.fencingToken() + 1);
        assertThat(mine.release(minesRun)).as("the hold it replaced").isFalse();

        Object third = mine.newHold(NAME, "m.3");
        sent.clear();
        Acquisition refused = mine.takeOver(next, third, LEASE, WAITS);
        assertThat(refused.isAcquired()).as("the next take-over, the claim having had its grant: %s", refused)
                .isFalse();
        assertThat(mine.isLocked(NAME)).as("the refused take-over released the previous hold").isFalse();
        // on PostgreSQL the refused take-over's own statement releases; elsewhere a release statement follows it
        assertThat(sent.stream().filter(sql -> sql.contains("SET owner = NULL") && !sql.contains("SET owner = ?")))
                .as("release statements of the refused take-over (statements sent: %s)", sent)
                .hasSize(target == JdbcTarget.POSTGRES ? 0 : 1);
        mine.abandon(third);
        Acquisition theirTurn = theirs.tryAcquire(old, LEASE, Duration.ZERO, WAITS);
        assertThat(theirTurn.isAcquired()).as("the claimant's turn: %s", theirTurn).isTrue();
        assertThat(theirs.release(old)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a waiter that finds the lock held again after a claimant's grant claims the next turn: in the "
            + "statement of its attempt on PostgreSQL, with a read and a claim elsewhere")
    void waiterClaimsTheNextTurnInItsAttempt(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        AtomicInteger statements = new AtomicInteger();
        LockStore<Object> waiters = countingStore(target, statements);
        Object first = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(first, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        Object claimantRun = waiters.newHold(NAME, "b.1");
        assertThat(waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS).isClaimed()).isTrue();
        Object other = waiters.newHold(NAME, "c.1");
        Acquisition behind = waiters.tryAcquire(other, LEASE, Duration.ZERO, WAITS);
        assertThat(behind.isClaimed() || behind.isAcquired()).as("behind the live claim: %s", behind).isFalse();
        assertThat(holders.release(first)).isTrue();
        assertThat(waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS).isAcquired())
                .as("the claimant's turn, which ends its claim").isTrue();

        int before = statements.get();
        Acquisition looked = waiters.tryAcquire(other, LEASE, Duration.ZERO, WAITS);
        int sent = statements.get() - before;
        assertThat(looked.isClaimed()).as("the other waiter's attempt while the claimant holds: %s", looked).isTrue();
        assertThat(claimant(target)).isEqualTo("c.1");
        assertThat(sent).as("statements of that attempt").isEqualTo(target == JdbcTarget.POSTGRES ? 1 : 2);
        assertThat(waiters.release(claimantRun)).isTrue();
        assertThat(waiters.tryAcquire(other, LEASE, Duration.ZERO, WAITS).isAcquired()).as("its turn").isTrue();
        assertThat(waiters.release(other)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a waiter's claim lets others take the lock 8 times, then only the claimant; its grant ends it")
    void claimantGetsTheTurnAfterEightGrants(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        LockStore<Object> waiters = store(target);
        Object first = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(first, LEASE, Duration.ZERO, null).isAcquired()).isTrue();

        Object claimantRun = waiters.newHold(NAME, "b.1");
        Acquisition answer = waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS);
        assertThat(answer.isAcquired()).as("the waiter's attempt while held").isFalse();
        assertThat(answer.isClaimed()).as("the waiter's attempt claims the next turn: %s", answer).isTrue();
        assertThat(claimant(target)).isEqualTo("b.1");
        Object second = waiters.newHold(NAME, "c.1");
        Acquisition secondAnswer = waiters.tryAcquire(second, LEASE, Duration.ZERO, WAITS);
        assertThat(secondAnswer.isClaimed()).as("a second waiter while the claim lives: %s", secondAnswer).isFalse();
        assertThat(secondAnswer.isAcquired()).isFalse();
        waiters.abandon(second);
        assertThat(holders.release(first)).isTrue();

        othersTakeTurns(holders, "o", 4);
        // the claimant looks again while another holds: a refresh keeps the count of grants since the claim
        Object fifth = holders.newHold(NAME, "o.5");
        assertThat(holders.tryAcquire(fifth, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        assertThat(waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS).isClaimed())
                .as("the claimant's attempt while another holds refreshes its claim").isTrue();
        assertThat(holders.release(fifth)).isTrue();
        othersTakeTurns(holders, "p", 3);

        Object ninth = holders.newHold(NAME, "o.9");
        Acquisition refused = holders.tryAcquire(ninth, LEASE, Duration.ZERO, null);
        assertThat(refused.isAcquired()).as("a 9th grant to another owner while the claim lives").isFalse();
        assertThat(refused.isClaimed()).isFalse();
        assertThat(holders.isLocked(NAME)).as("the lock is free, only refused to others").isFalse();

        Acquisition granted = waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS);
        assertThat(granted.isAcquired()).as("the claimant's attempt").isTrue();
        assertThat(claimant(target)).as("the claim after the claimant's grant").isNull();
        assertThat(waiters.release(claimantRun)).isTrue();
        assertThat(takes(holders, "o.10")).as("another owner after the claimant's turn").isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("the waiter that has waited longest takes the claim from a younger one, counted from its first look")
    void anOlderWaiterTakesTheClaimFromAYoungerOne(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        LockStore<Object> waiters = store(target);
        Object first = holders.newHold(NAME, "a.1");
        Acquisition held = holders.tryAcquire(first, LEASE, Duration.ZERO, null);
        assertThat(held.isAcquired()).isTrue();
        long t1 = held.fencingToken();

        // x claims; w, refused the claim, keeps its place in line: the token it first saw busy, t1
        Object x = waiters.newHold(NAME, "x.1");
        assertThat(waiters.tryAcquire(x, LEASE, Duration.ZERO, WAITS).isClaimed()).isTrue();
        Object w = waiters.newHold(NAME, "w.1");
        Acquisition wFirst = waiters.tryAcquire(w, LEASE, Duration.ZERO, WAITS);
        assertThat(wFirst.isClaimed()).as("w while x's claim lives: %s", wFirst).isFalse();
        assertThat(wFirst.holderToken()).as("w's busy answer tells the latest grant's token").isEqualTo(t1);
        assertThat(holders.release(first)).isTrue();
        assertThat(waiters.tryAcquire(x, LEASE, Duration.ZERO, WAITS).isAcquired()).as("x's turn").isTrue();
        assertThat(waiters.release(x)).isTrue();

        // y starts waiting later, behind t1 + 2, and takes the free claim before w looks again
        Object third = holders.newHold(NAME, "a.3");
        assertThat(holders.tryAcquire(third, LEASE, Duration.ZERO, null).fencingToken()).isEqualTo(t1 + 2);
        Object y = waiters.newHold(NAME, "y.1");
        assertThat(waiters.tryAcquire(y, LEASE, Duration.ZERO, WAITS).isClaimed()).as("y claims").isTrue();
        Acquisition wSecond = waiters.tryAcquire(w, LEASE, Duration.ZERO, WAITS);
        assertThat(wSecond.isClaimed()).as("w, older than y, takes the claim: %s", wSecond).isTrue();
        assertThat(claimant(target)).isEqualTo("w.1");
        Acquisition yAgain = waiters.tryAcquire(y, LEASE, Duration.ZERO, WAITS);
        assertThat(yAgain.isClaimed()).as("y after w took its place: %s", yAgain).isFalse();
        assertThat(waiters.tryAcquire(y, LEASE, Duration.ZERO, WAITS).holderToken())
                .as("y's next busy answer, no longer a claimant's, reads the latest grant's token").isEqualTo(t1 + 2);
        assertThat(holders.release(third)).isTrue();

        // w's grants count from t1: the lock was granted twice since, so six more pass and the seventh is refused
        othersTakeTurns(holders, "o", LockStore.GRANTS_PAST_A_CLAIM - 2);
        Object refusedRun = holders.newHold(NAME, "o.last");
        assertThat(holders.tryAcquire(refusedRun, LEASE, Duration.ZERO, null).isAcquired())
                .as("a grant to another owner once 8 have passed w's ticket").isFalse();
        assertThat(waiters.tryAcquire(w, LEASE, Duration.ZERO, WAITS).isAcquired()).as("w's turn").isTrue();
        assertThat(waiters.release(w)).isTrue();
        waiters.abandon(y);
        assertThat(takes(holders, "o.after")).isTrue();
    }

    /**
     * H2's row locks never wait, so session mode polls there, and claims the turn in a row of its own (databases
     * whose lock waits block keep no claims: see {@code SessionStore#busy}). The count is of tokens drawn since the
     * claim: here only the grants draw, so it is exact.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2"})
    @DisplayName("H2 session mode, where waiters poll: a waiter's claim lets others take the lock 8 times, then only"
            + " the claimant; its grant, abandon or release ends it; an attempt that will not wait claims nothing")
    void sessionModeClaims(JdbcTarget target) throws Exception {
        LockStore<Object> holders = sessionStore(target);
        LockStore<Object> waiters = sessionStore(target);
        Object first = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(first, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        Acquisition noWait = waiters.tryAcquire(waiters.newHold(NAME, "x.1"), LEASE, Duration.ZERO, null);
        assertThat(noWait.isAcquired() || noWait.isClaimed()).as("an attempt without a wake-up: %s", noWait).isFalse();
        assertThat(target.sessionClaimant(TABLE, namespace, NAME)).isNull();

        Object claimantRun = waiters.newHold(NAME, "b.1");
        Acquisition answer = waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS);
        assertThat(answer.isClaimed()).as("the waiter's attempt while held: %s", answer).isTrue();
        assertThat(target.sessionClaimant(TABLE, namespace, NAME)).isEqualTo("b.1");
        assertThat(holders.release(first)).isTrue();

        othersTakeTurns(holders, "o", LockStore.GRANTS_PAST_A_CLAIM);
        Acquisition refused = holders.tryAcquire(holders.newHold(NAME, "o.9"), LEASE, Duration.ZERO, null);
        assertThat(refused.isAcquired()).as("a 9th grant to another owner while the claim lives").isFalse();
        assertThat(holders.isLocked(NAME)).as("the lock is free, only refused to others").isFalse();

        assertThat(waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS).isAcquired())
                .as("the claimant's attempt").isTrue();
        assertThat(target.sessionClaimant(TABLE, namespace, NAME)).as("the claim after the claimant's grant")
                .isNull();
        assertThat(waiters.release(claimantRun)).isTrue();
        othersTakeTurns(holders, "p", LockStore.GRANTS_PAST_A_CLAIM + 1);

        Object held = holders.newHold(NAME, "q.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        Object gaveUp = waiters.newHold(NAME, "b.2");
        assertThat(waiters.tryAcquire(gaveUp, LEASE, Duration.ZERO, WAITS).isClaimed()).isTrue();
        Acquisition second = waiters.tryAcquire(waiters.newHold(NAME, "c.1"), LEASE, Duration.ZERO, WAITS);
        assertThat(second.isClaimed() || second.isAcquired()).as("a second waiter: %s", second).isFalse();
        waiters.abandon(gaveUp);
        assertThat(target.sessionClaimant(TABLE, namespace, NAME)).as("the claim after the claimant's abandon")
                .isNull();
        Object failed = waiters.newHold(NAME, "b.3");
        assertThat(waiters.tryAcquire(failed, LEASE, Duration.ZERO, WAITS).isClaimed()).isTrue();
        assertThat(waiters.release(failed)).as("release of a run that never held").isFalse();
        assertThat(target.sessionClaimant(TABLE, namespace, NAME)).as("the claim after the claimant's release")
                .isNull();
        assertThat(holders.release(held)).isTrue();
        othersTakeTurns(holders, "r", LockStore.GRANTS_PAST_A_CLAIM + 1);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode where the database queues waiters: a lock wait that runs out is answered queued, so "
            + "the waiter goes straight back into the queue; a NOWAIT attempt is answered busy")
    void sessionLockWaitThatRunsOutIsQueued(JdbcTarget target) {
        LockStore<Object> holders = sessionStore(target);
        LockStore<Object> waiters = sessionStore(target);
        Object held = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();

        Object waiting = waiters.newHold(NAME, "b.1");
        Acquisition waited = waiters.tryAcquire(waiting, LEASE, Duration.ofSeconds(1), WAITS);
        assertThat(waited.isQueued()).as("a 1 s lock wait that ran out: %s", waited).isTrue();
        Acquisition noWait = waiters.tryAcquire(waiting, LEASE, Duration.ZERO, WAITS);
        assertThat(noWait.isAcquired() || noWait.isQueued()).as("a NOWAIT attempt: %s", noWait).isFalse();

        waiters.abandon(waiting);
        assertThat(holders.release(held)).isTrue();
        assertThat(takes(waiters, "c.1")).as("the lock after the holder's release").isTrue();
    }

    /**
     * A claimant looks far more often than its claim needs refreshing (a claim lives a lease from its last refresh):
     * a poller at its own pace, a PostgreSQL waiter at each notification. Its looks read the row and write the claim
     * again only once less than two thirds of the attempt's lease is left on it. The longer lease of the last look stands for a third of the lease gone by,
     * without waiting for it.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a claimant's look writes its claim again only once less than two thirds of its lease is left on it")
    void claimantRefreshesItsClaimOnlyWhenDue(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        LockStore<Object> waiters = store(target);
        Object held = holders.newHold(NAME, "a.1");
        long holderToken = holders.tryAcquire(held, LEASE, Duration.ZERO, null).fencingToken();
        Object claimantRun = claimant(waiters, "b.1");
        Timestamp claimed = target.claimUntil(TABLE, namespace, NAME);

        // the database clock moves on (by a microsecond at least): a claim written again now would end later
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!target.claimWrittenNowEndsLater(TABLE, namespace, NAME, LEASE)) {
            assertThat(System.nanoTime() - deadline).as("the database clock has moved on since the claim").isNegative();
            Thread.onSpinWait();
        }
        Acquisition look = waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS);
        assertThat(look.isClaimed()).as("the claimant's next look: %s", look).isTrue();
        assertThat(look.holderToken()).as("the look read the latest grant's token").isEqualTo(holderToken);
        assertThat(target.claimUntil(TABLE, namespace, NAME)).as("the claim's end after a look with its lease")
                .isEqualTo(claimed);

        Acquisition due = waiters.tryAcquire(claimantRun, LEASE.multipliedBy(2), Duration.ZERO, WAITS);
        assertThat(due.isClaimed()).as("a look with less than two thirds of its lease left on the claim: %s", due)
                .isTrue();
        assertThat(target.claimUntil(TABLE, namespace, NAME)).as("the claim's end after a refresh").isAfter(claimed);

        Object younger = waiters.newHold(NAME, "c.1");
        Acquisition behind = waiters.tryAcquire(younger, LEASE, Duration.ZERO, WAITS);
        assertThat(behind.isClaimed()).as("a younger waiter behind the live claim: %s", behind).isFalse();
        assertThat(behind.holderToken()).isEqualTo(holderToken);
        assertThat(claimant(target)).isEqualTo("b.1");
        waiters.abandon(younger);
        assertThat(holders.release(held)).isTrue();
        assertThat(waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS).isAcquired()).isTrue();
        assertThat(waiters.release(claimantRun)).isTrue();
    }

    /**
     * A run that has found the lock busy reads the row before it tries to take it: the look at a held row is a plain
     * read, which waits for no row lock. Shown with the row locked by another transaction: an update would wait for
     * it until the operation timeout. (H2's row locks do not wait.)
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a waiter's look at a held row reads it without waiting for the row's lock")
    void waitersLookAtAHeldRowWithoutItsLock(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        LockStore<Object> waiters = store(target);
        Object held = holders.newHold(NAME, "a.1");
        long holderToken = holders.tryAcquire(held, LEASE, Duration.ZERO, null).fencingToken();
        Object claimantRun = claimant(waiters, "b.1");
        try (Connection locker = target.admin().getConnection()) {
            locker.setAutoCommit(false);
            try (PreparedStatement lockRow = locker.prepareStatement("SELECT token FROM " + TABLE
                    + " WHERE lock_key = ? FOR UPDATE")) {
                lockRow.setBytes(1, LockTable.key(namespace, NAME));
                lockRow.executeQuery().close();
            }
            Acquisition look = waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS);
            assertThat(look.isClaimed()).as("the claimant's look while another transaction locks the row: %s", look)
                    .isTrue();
            assertThat(look.holderToken()).isEqualTo(holderToken);
            locker.rollback();
        }
        assertThat(holders.release(held)).isTrue();
        assertThat(waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS).isAcquired())
                .as("the claimant's look at the free row takes it").isTrue();
        assertThat(waiters.release(claimantRun)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a claimant's looks during the others' grants keep its claim and read each grant's token")
    void claimantsLooksReadEachGrantsToken(JdbcTarget target) throws Exception {
        // the machinery polls a claimant again from the bottom of its backoff when the token changed between two
        // looks: the others' turns are passing, and once they are over the lock is idle until the claimant looks
        LockStore<Object> holders = store(target);
        LockStore<Object> waiters = store(target);
        Object first = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(first, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        Object claimantRun = claimant(waiters, "b.1");
        assertThat(holders.release(first)).isTrue();
        othersTakeTurns(holders, "o", LockStore.GRANTS_PAST_A_CLAIM - 2);
        Object seventh = holders.newHold(NAME, "o.7");
        long seventhToken = holders.tryAcquire(seventh, LEASE, Duration.ZERO, null).fencingToken();
        Acquisition early = waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS);
        assertThat(early.isClaimed()).as("the claimant's look during the 7th grant: %s", early).isTrue();
        assertThat(early.holderToken()).isEqualTo(seventhToken);
        assertThat(holders.release(seventh)).isTrue();

        Object last = holders.newHold(NAME, "o.8");
        long lastToken = holders.tryAcquire(last, LEASE, Duration.ZERO, null).fencingToken();
        Acquisition before = waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS);
        assertThat(before.isClaimed()).as("the claimant's look during the 8th grant: %s", before).isTrue();
        assertThat(before.holderToken()).isEqualTo(lastToken).isGreaterThan(seventhToken);
        assertThat(holders.release(last)).isTrue();
        assertThat(waiters.tryAcquire(claimantRun, LEASE, Duration.ZERO, WAITS).isAcquired()).isTrue();
        assertThat(waiters.release(claimantRun)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("the claimant's abandon or release ends its claim")
    void abandonAndReleaseEndTheClaim(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        LockStore<Object> waiters = store(target);
        Object held = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();

        Object gaveUp = waiters.newHold(NAME, "b.1");
        assertThat(waiters.tryAcquire(gaveUp, LEASE, Duration.ZERO, WAITS).isClaimed()).isTrue();
        waiters.abandon(gaveUp);
        assertThat(claimant(target)).as("the claim after the claimant's abandon").isNull();

        // a run whose attempt failed after it had claimed is released in the background, never having held
        Object failed = waiters.newHold(NAME, "b.2");
        assertThat(waiters.tryAcquire(failed, LEASE, Duration.ZERO, WAITS).isClaimed()).isTrue();
        assertThat(waiters.release(failed)).as("release of a run that never held").isFalse();
        assertThat(claimant(target)).as("the claim after the claimant's release").isNull();

        assertThat(holders.release(held)).isTrue();
        othersTakeTurns(holders, "o", LockStore.GRANTS_PAST_A_CLAIM + 1);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("an attempt that will not wait claims nothing")
    void noClaimWithoutWakeUp(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        LockStore<Object> others = store(target);
        Object held = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        Acquisition answer = others.tryAcquire(others.newHold(NAME, "b.1"), LEASE, Duration.ZERO, null);
        assertThat(answer.isAcquired()).isFalse();
        assertThat(answer.isClaimed()).as("an attempt without a wake-up: %s", answer).isFalse();
        assertThat(claimant(target)).isNull();
        assertThat(holders.release(held)).isTrue();
        othersTakeTurns(holders, "o", LockStore.GRANTS_PAST_A_CLAIM + 1);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a claim lapses one claimant's lease after its last attempt, and then blocks nobody")
    void lapsedClaimBlocksNobody(JdbcTarget target) throws Exception {
        LockStore<Object> holders = store(target);
        LockStore<Object> waiters = store(target);
        Object held = holders.newHold(NAME, "a.1");
        assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        Object claimantRun = waiters.newHold(NAME, "b.1");
        assertThat(waiters.tryAcquire(claimantRun, Duration.ofSeconds(1), Duration.ZERO, WAITS).isClaimed()).isTrue();
        assertThat(holders.release(held)).isTrue();

        long deadline = System.nanoTime() + SLACK.toNanos();
        while (!target.claimLapsed(TABLE, namespace, NAME)) {
            assertThat(System.nanoTime() - deadline).as("the claim lapses by the database clock").isNegative();
            Thread.sleep(20);
        }
        othersTakeTurns(holders, "p", LockStore.GRANTS_PAST_A_CLAIM + 1);
        Object next = holders.newHold(NAME, "q.1");
        assertThat(holders.tryAcquire(next, LEASE, Duration.ZERO, null).isAcquired()).isTrue();
        Object another = waiters.newHold(NAME, "c.1");
        assertThat(waiters.tryAcquire(another, LEASE, Duration.ZERO, WAITS).isClaimed())
                .as("another waiter takes over the lapsed claim").isTrue();
        assertThat(claimant(target)).isEqualTo("c.1");
        waiters.abandon(another);
        assertThat(holders.release(next)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("a table of an earlier version gets the claim columns at first use; with createTable off, an error")
    void tableOfAnEarlierVersionGetsTheColumns(JdbcTarget target) throws Exception {
        String table = "locksmith_claim_upgrade_"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
        target.createTableWithoutClaims(table);
        try {
            String alter;
            try (Connection connection = target.admin().getConnection();
                 PreparedStatement insert = connection.prepareStatement(
                         JdbcTarget.dialect(connection).insertIfAbsent(table))) {
                // a row an earlier version left behind
                insert.setBytes(1, LockTable.key(namespace, "left-behind"));
                insert.setString(2, namespace);
                insert.setString(3, "left-behind");
                insert.executeUpdate();
                alter = JdbcTarget.dialect(connection).addClaimColumns(table);
            }
            LockStore<Object> unmanaged = store(target, table, false);
            assertThatThrownBy(() -> unmanaged.tryAcquire(unmanaged.newHold(NAME, "x.1"), LEASE, Duration.ZERO, null))
                    .as("createTable off").isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("no claim columns").hasMessageContaining("createTable is off")
                    .hasMessageContaining(alter);

            LockStore<Object> holders = store(target, table, true);
            LockStore<Object> waiters = store(target, table, true);
            Object held = holders.newHold(NAME, "a.1");
            assertThat(holders.tryAcquire(held, LEASE, Duration.ZERO, null).isAcquired())
                    .as("the first attempt after the upgrade").isTrue();
            try (Connection connection = target.admin().getConnection();
                 Statement probe = connection.createStatement()) {
                probe.executeQuery("SELECT claimant, claim_token, claim_until FROM " + table + " WHERE 1 = 0")
                        .close();
            }
            Object waiting = waiters.newHold(NAME, "b.1");
            assertThat(waiters.tryAcquire(waiting, LEASE, Duration.ZERO, WAITS).isClaimed()).isTrue();
            assertThat(target.claimant(table, namespace, NAME)).isEqualTo("b.1");
            assertThat(holders.release(held)).isTrue();
            assertThat(waiters.tryAcquire(waiting, LEASE, Duration.ZERO, WAITS).isAcquired()).isTrue();
            assertThat(waiters.release(waiting)).isTrue();
            Object leftBehind = holders.newHold("left-behind", "a.2");
            assertThat(holders.tryAcquire(leftBehind, LEASE, Duration.ZERO, null).isAcquired())
                    .as("the row an earlier version left behind").isTrue();
            assertThat(holders.release(leftBehind)).isTrue();
            assertThat(unmanaged.tryAcquire(unmanaged.newHold(NAME, "x.2"), LEASE, Duration.ZERO, null)
                    .isAcquired()).as("the createTable-off store once the columns exist").isTrue();
        } finally {
            closeEverything();
            target.dropTable(table);
        }
    }
}
