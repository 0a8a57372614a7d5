package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.jdbc.JdbcLockProviders.Mode;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import io.locksmith.spi.StoreEvents;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each acquisition run has an owner id of its own, and every store call names the hold it is about by it: a late
 * or repeated call about an earlier hold (a release retried after its answer was lost, an attempt applied after
 * the client gave up, a loss found at lease end) never acts on a newer hold of the same name.
 */
@DisplayName("JDBC holds are named by their owner id")
class JdbcHoldIdentityTest {

    private static final String TABLE = "locksmith_hold_identity_test";
    private static final Duration LONG_LEASE = Duration.ofSeconds(60);

    private final List<AutoCloseable> closeAfter = new CopyOnWriteArrayList<>();
    private final String namespace = "hi" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = closeAfter.size() - 1; i >= 0; i--) {
            closeAfter.get(i).close();
        }
    }

    static List<Arguments> targetsAndModes() {
        List<Arguments> all = new ArrayList<>();
        for (JdbcTarget target : JdbcTarget.BACKENDS) {
            for (Mode mode : Mode.values()) {
                all.add(Arguments.of(target, mode));
            }
        }
        return all;
    }

    private LockOptions.Builder options() {
        return LockOptions.builder()
                .namespace(namespace)
                .leaseTime(Duration.ofSeconds(10))
                // 5 s: a provider's first connection (driver and H2 start-up) must fit on a busy machine
                .operationTimeout(Duration.ofSeconds(5))
                .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100));
    }

    private LockStore store(JdbcTarget target, Mode mode, LockOptions options) {
        HikariDataSource pool = target.pool(options.operationTimeout(), 8);
        LockStore store = JdbcLockProviders.builder(pool).mode(mode).table(TABLE).options(options)
                .closing(pool, target.jdbcUrl()).buildStore();
        closeAfter.add(store);
        return store;
    }

    private static boolean acquired(LockStore store, String name, String owner) {
        Acquisition acquisition = store.tryAcquire(name, owner, LONG_LEASE, Duration.ZERO);
        return acquisition.isAcquired();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("release and renewal of an earlier owner id leave a newer hold of the name alone")
    void lateCallsLeaveTheNewerHoldAlone(JdbcTarget target, Mode mode) {
        LockStore store = store(target, mode, options().build());
        LockStore other = store(target, mode, options().build());
        assertThat(acquired(store, "name", "c.1")).as("first hold").isTrue();
        assertThat(store.release("name", "c.1")).as("its release").isTrue();
        assertThat(acquired(store, "name", "c.2")).as("the newer hold").isTrue();

        assertThat(store.release("name", "c.1")).as("a late release of the first hold").isFalse();
        assertThat(store.renew(Map.of("name", "c.1"), LONG_LEASE)).as("a late renewal of the first hold")
                .containsExactly("name");
        assertThat(acquired(other, "name", "d.1")).as("another client's attempt after the late calls").isFalse();
        assertThat(store.renew(Map.of("name", "c.2"), LONG_LEASE)).as("renewal of the newer hold").isEmpty();
        assertThat(store.release("name", "c.2")).as("release of the newer hold").isTrue();
        assertThat(acquired(other, "name", "d.2")).as("another client's attempt after that release").isTrue();
        assertThat(other.release("name", "d.2")).isTrue();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("targetsAndModes")
    @DisplayName("an attempt repeated with the owner id of a hold does not take the lock again")
    void repeatedAttemptDoesNotTakeTheLockAgain(JdbcTarget target, Mode mode) {
        LockStore store = store(target, mode, options().build());
        LockStore other = store(target, mode, options().build());
        Acquisition first = store.tryAcquire("repeated", "c.1", LONG_LEASE, Duration.ZERO);
        assertThat(first.isAcquired()).isTrue();

        assertThat(store.tryAcquire("repeated", "c.1", LONG_LEASE, Duration.ZERO).isAcquired())
                .as("the same owner id's attempt again, while it holds").isFalse();
        assertThat(acquired(other, "repeated", "d.1")).as("another client's attempt").isFalse();
        if (mode == Mode.LEASE) {
            assertThat(store.inspect("repeated").fencingToken()).as("the hold's token")
                    .hasValue(first.fencingToken());
        }
        assertThat(store.release("repeated", "c.1")).as("release of the hold").isTrue();
        assertThat(acquired(other, "repeated", "d.2")).as("another client's attempt after the release").isTrue();
        assertThat(other.release("repeated", "d.2")).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("lease mode: one renewal extends each row only for the owner id of its own hold")
    void batchRenewalMatchesEachNameWithItsOwner(JdbcTarget target) {
        LockStore store = store(target, Mode.LEASE, options().build());
        assertThat(acquired(store, "a", "c.1")).isTrue();
        assertThat(acquired(store, "b", "c.2")).isTrue();
        assertThat(acquired(store, "c", "c.3")).isTrue();

        Map<String, String> crossed = new LinkedHashMap<>();
        crossed.put("a", "c.2");
        crossed.put("b", "c.1");
        assertThat(store.renew(crossed, LONG_LEASE)).as("owner ids of this batch, each on the other's name")
                .containsExactlyInAnyOrder("a", "b");
        Map<String, String> mixed = new LinkedHashMap<>();
        mixed.put("a", "c.1");
        mixed.put("b", "c.2");
        mixed.put("c", "c.9");
        mixed.put("never-held", "c.4");
        assertThat(store.renew(mixed, LONG_LEASE)).as("a batch of held and not held")
                .containsExactlyInAnyOrder("c", "never-held");
        Map<String, String> held = new LinkedHashMap<>();
        held.put("c", "c.3");
        held.put("b", "c.2");
        held.put("a", "c.1");
        assertThat(store.renew(held, LONG_LEASE)).as("a batch of held names").isEmpty();
    }

    /**
     * The loss a session-mode hold's lease end reports names that hold's owner id. The report is held back until
     * the same thread has acquired the lock again (the interleaving a lease end racing a re-acquisition can
     * produce), so it arrives while a newer hold of the name exists: that hold must stay held.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = JdbcTarget.class, names = {"H2", "MARIADB", "POSTGRES", "MYSQL_CONNECTOR_J"})
    @DisplayName("session mode: a lease end's loss report never marks a newer hold of the name lost")
    void leaseEndReportsTheLossOfItsOwnHold(JdbcTarget target) throws Exception {
        LockOptions options = options().build();
        LockStore store = store(target, Mode.SESSION, options);
        List<String> reportedOwners = new CopyOnWriteArrayList<>();
        CountDownLatch reported = new CountDownLatch(1);
        CountDownLatch deliver = new CountDownLatch(1);
        CountDownLatch delivered = new CountDownLatch(1);
        LockStore held = heldBackLosses(store, reportedOwners, reported, deliver, delivered);
        LockProvider provider = LockStores.newProvider(held, options);
        closeAfter.add(provider);
        DistributedLock lock = provider.getLock("expiring");

        assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(300))).as("a hold with a 300 ms lease").isTrue();
        String firstOwner = provider.inspect("expiring").owner().orElse(null);
        assertThat(reported.await(60, TimeUnit.SECONDS)).as("the store reports the lease end").isTrue();
        assertThat(lock.tryLock()).as("the same thread's tryLock() after the lease ended").isTrue();

        deliver.countDown();
        assertThat(delivered.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(reportedOwners).as("owner ids the store reported lost").hasSize(1)
                .allSatisfy(owner -> assertThat(owner).startsWith(provider.clientId() + "."));
        if (firstOwner != null && target != JdbcTarget.POSTGRES) {
            assertThat(reportedOwners).containsExactly(firstOwner);
        }
        assertThat(lock.isHeldByCurrentThread()).as("the newer hold after the late report").isTrue();
        lock.unlock(); // throws LockLostException had the report marked the newer hold lost
    }

    /**
     * {@code store}, whose loss reports wait until {@code deliver} opens: the first is recorded, announced on
     * {@code reported}, then passed on, after which {@code delivered} opens.
     */
    private static LockStore heldBackLosses(LockStore store, List<String> owners, CountDownLatch reported,
            CountDownLatch deliver, CountDownLatch delivered) {
        return (LockStore) Proxy.newProxyInstance(LockStore.class.getClassLoader(), new Class<?>[] {LockStore.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("start")) {
                        StoreEvents machinery = (StoreEvents) args[0];
                        args = new Object[] {new StoreEvents() {
                            @Override
                            public void holdLost(String name, String owner, String reason) {
                                owners.add(owner);
                                reported.countDown();
                                try {
                                    deliver.await();
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                    return;
                                }
                                machinery.holdLost(name, owner, reason);
                                delivered.countDown();
                            }

                            @Override
                            public void allHoldsLost(String reason) {
                                machinery.allHoldsLost(reason);
                            }
                        }};
                    }
                    try {
                        return method.invoke(store, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
