package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisHold;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisLockStore;
import io.locksmith.redis.internal.RedisStoreProbe;
import io.locksmith.spi.LockStores;
import io.locksmith.tests.LockProviderContract;
import io.locksmith.tests.StoreControl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * The contract on a 3-master Redis Cluster started by the test, through {@link RedisClusterClient}s. The store
 * fault offered is dropping every client connection of every node; killing or pausing nodes of a cluster
 * without replicas takes slots offline, which is a cluster outage rather than a fault the lock must mask.
 */
@DisplayName("Redis backend contract on a 3-master cluster (builder form)")
class RedisClusterContractTest extends LockProviderContract {

    private static TestCluster cluster;
    private static final List<RedisClusterClient> clients = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = TestCluster.start();
    }

    @AfterAll
    static void stopCluster() {
        clients.forEach(RedisClusterClient::close);
        if (cluster != null) {
            cluster.close();
        }
    }

    private static RedisClusterClient client(int timeoutMillis) {
        RedisClusterClient client = RedisClusterClient.builder()
                .nodes(cluster.addresses())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(timeoutMillis).build())
                .build();
        clients.add(client);
        return client;
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        return RedisLockProviders.builder(client((int) options.operationTimeout().toMillis()))
                .options(options)
                .address("redis cluster " + cluster.addresses())
                .build();
    }

    @Override
    protected long storeOperationCount() {
        return cluster.admins.stream().mapToLong(RedisAdmin::commandsExceptInfo).sum();
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        Set<String> names = new TreeSet<>();
        cluster.admins.forEach(admin -> names.addAll(admin.heldNames(namespace)));
        return names;
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        String key = new RedisKeys(namespace).lock(name);
        for (RedisAdmin admin : cluster.admins) {
            // only the node that owns the key's slot has it; the others answer MOVED, which is fine here
            try {
                admin.call(jedis -> jedis.del(key));
            } catch (redis.clients.jedis.exceptions.JedisDataException movedElsewhere) {
                // not this node's slot
            }
        }
    }

    @Override
    protected Optional<StoreControl> storeControl() {
        return Optional.of(new StoreControl() {
            @Override
            public Set<Fault> faults() {
                return EnumSet.of(Fault.DROP_CONNECTIONS);
            }

            @Override
            public void dropConnections() {
                cluster.admins.forEach(RedisAdmin::dropConnections);
            }
        });
    }

    /** What is particular to a cluster. */
    @Nested
    @DisplayName("cluster")
    class Cluster {

        @Test
        @DisplayName("a waiter is woken by the release, long before the 60 s lease ends")
        void wakeUpAcrossNodes() throws Exception {
            LockOptions options = LockOptions.builder().namespace(TestRedis.freshNamespace())
                    .leaseTime(java.time.Duration.ofSeconds(60)).build();
            try (LockProvider holder = newProvider(options); LockProvider waiter = newProvider(options)) {
                DistributedLock held = holder.getLock("cluster-wake");
                DistributedLock wanted = waiter.getLock("cluster-wake");
                held.lock();
                java.util.concurrent.ExecutorService thread = java.util.concurrent.Executors.newSingleThreadExecutor();
                try {
                    java.util.concurrent.Future<Boolean> waited = thread.submit(() -> {
                        boolean got = wanted.tryLock(40, java.util.concurrent.TimeUnit.SECONDS);
                        if (got) {
                            wanted.unlock();
                        }
                        return got;
                    });
                    String channel = new RedisKeys(options.namespace()).channel("cluster-wake");
                    Await.until("the waiter subscribed on some node", java.time.Duration.ofSeconds(20),
                            () -> cluster.admins.stream().mapToLong(admin -> admin.shardSubscribers(channel)).sum()
                                    == 1);
                    held.unlock();
                    assertThat(waited.get(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                } finally {
                    thread.shutdownNow();
                }
            }
        }

        @Test
        @DisplayName("wake-ups go over sharded pub/sub on the node owning each lock: SSUBSCRIBE there, SPUBLISH, "
                + "one attempt per waiter after each unlock, for locks on all three masters")
        void shardedWakeUpsOnEveryMaster() throws Exception {
            Duration bound = Duration.ofSeconds(20);
            LockOptions options = LockOptions.builder().namespace(TestRedis.freshNamespace())
                    .leaseTime(Duration.ofSeconds(60)).build();
            RedisKeys keys = new RedisKeys(options.namespace());
            RedisLockStore store = new RedisLockStore(client((int) options.operationTimeout().toMillis()),
                    "redis cluster " + cluster.addresses(), options, () -> { }, null);
            store.loadScripts();
            assertThat(RedisStoreProbe.sharded(store)).as("sharded pub/sub on a Redis 7+ cluster").isTrue();
            CountingStore<RedisHold> counting = new CountingStore<>(store);
            ExecutorService threads = Executors.newCachedThreadPool();
            try (LockProvider holder = newProvider(options);
                 LockProvider waiter = LockStores.newProvider(counting, options)) {
                int locks = 9;
                List<String> names = new ArrayList<>();
                List<DistributedLock> held = new ArrayList<>();
                List<Long> tokens = new ArrayList<>();
                for (int i = 0; i < locks; i++) {
                    String name = "sharded-" + i;
                    DistributedLock lock = holder.getLock(name);
                    lock.lock();
                    names.add(name);
                    held.add(lock);
                    tokens.add(lock.fencingToken());
                }
                Map<String, RedisAdmin> owners = new HashMap<>();
                for (RedisAdmin admin : cluster.admins) {
                    admin.heldNames(options.namespace()).forEach(name -> owners.put(name, admin));
                }
                assertThat(owners.keySet()).containsExactlyInAnyOrderElementsOf(names);
                assertThat(new HashSet<>(owners.values())).as("masters owning some of the %d locks", locks).hasSize(3);
                long publishedBefore = calls("publish");
                long shardPublishedBefore = calls("spublish");

                List<Future<Long>> waiters = new ArrayList<>();
                for (String name : names) {
                    DistributedLock wanted = waiter.getLock(name);
                    waiters.add(threads.submit(() -> {
                        if (!wanted.tryLock(40, TimeUnit.SECONDS)) {
                            return -1L;
                        }
                        try {
                            return wanted.fencingToken();
                        } finally {
                            wanted.unlock();
                        }
                    }));
                }
                // each waiter: one attempt, the subscription, one more attempt, then it waits for a message; both
                // answered busy, or an unlock could meet a second attempt still in flight
                Await.until("every waiter had two busy answers and is subscribed on the node owning its lock", bound,
                        () -> counting.busyAnswers.get() == 2 * locks && names.stream()
                                .allMatch(name -> owners.get(name).shardSubscribers(keys.channel(name)) == 1));
                for (String name : names) {
                    for (RedisAdmin admin : cluster.admins) {
                        assertThat(admin.subscribers(keys.channel(name))).as("PUBSUB NUMSUB of %s", name).isZero();
                        if (admin != owners.get(name)) {
                            assertThat(admin.shardSubscribers(keys.channel(name)))
                                    .as("sharded subscribers of %s on a node not owning it", name).isZero();
                        }
                    }
                }
                for (RedisAdmin admin : cluster.admins) {
                    assertThat(admin.subscriberConnections()).as("subscriber connections of a node serving %d "
                            + "waiting locks of one provider", owners.values().stream().filter(admin::equals).count())
                            .isEqualTo(1);
                }

                for (int i = 0; i < locks; i++) {
                    held.get(i).unlock();
                    assertThat(waiters.get(i).get(bound.toSeconds(), TimeUnit.SECONDS))
                            .as("token of the waiter for %s", names.get(i)).isGreaterThan(tokens.get(i));
                    assertThat(counting.acquireAttempts.get()).as("attempts after %d unlocks", i + 1)
                            .isEqualTo(2 * locks + i + 1);
                }
                assertThat(counting.subscriptions.get()).as("subscriptions of the waiters").isEqualTo(locks);
                // the waiter's grant ends the claim its busy answers made, which wakes the others that may wait
                assertThat(calls("spublish") - shardPublishedBefore).as("SPUBLISH calls (holder's releases, waiters' "
                        + "grants and releases)").isEqualTo(3L * locks);
                assertThat(calls("publish") - publishedBefore).as("PUBLISH calls").isZero();
                Await.until("no sharded subscription left and the nodes' subscriber connections given back", bound,
                        () -> names.stream().allMatch(name -> owners.get(name).shardSubscribers(keys.channel(name)) == 0)
                                && cluster.admins.stream().allMatch(admin -> admin.subscriberConnections() == 0)
                                && RedisStoreProbe.wakeupsIdle(store));
            } finally {
                threads.shutdownNow();
            }
        }

        @Test
        @DisplayName("when a lock's slot moves to another master, its waiter subscribes there and is still woken")
        void resubscribesAfterSlotMoves() throws Exception {
            Duration bound = Duration.ofSeconds(20);
            LockOptions options = LockOptions.builder().namespace(TestRedis.freshNamespace())
                    .leaseTime(Duration.ofSeconds(60)).build();
            RedisKeys keys = new RedisKeys(options.namespace());
            RedisLockStore store = new RedisLockStore(client((int) options.operationTimeout().toMillis()),
                    "redis cluster " + cluster.addresses(), options, () -> { }, null);
            store.loadScripts();
            CountingStore<RedisHold> counting = new CountingStore<>(store);
            ExecutorService threads = Executors.newSingleThreadExecutor();
            try (LockProvider holder = newProvider(options);
                 LockProvider waiter = LockStores.newProvider(counting, options)) {
                DistributedLock held = holder.getLock("moving");
                held.lock();
                long holderToken = held.fencingToken();
                String channel = keys.channel("moving");
                int from = -1;
                for (int i = 0; i < cluster.admins.size(); i++) {
                    if (cluster.admins.get(i).heldNames(options.namespace()).contains("moving")) {
                        from = i;
                    }
                }
                assertThat(from).as("the master holding the lock").isNotNegative();
                RedisAdmin source = cluster.admins.get(from);
                int to = (from + 1) % cluster.admins.size();
                RedisAdmin target = cluster.admins.get(to);

                DistributedLock wanted = waiter.getLock("moving");
                AtomicReference<Thread> waiting = new AtomicReference<>();
                Future<Long> waited = threads.submit(() -> {
                    waiting.set(Thread.currentThread());
                    if (!wanted.tryLock(40, TimeUnit.SECONDS)) {
                        return -1L;
                    }
                    try {
                        return wanted.fencingToken();
                    } finally {
                        wanted.unlock();
                    }
                });
                Await.until("the waiter subscribed on the master owning the lock and waits", bound,
                        () -> source.shardSubscribers(channel) == 1 && waitsForTurn(waiting.get()));
                int beforeMove = counting.acquireAttempts.get();

                moveSlot(JedisClusterCRC16.getSlot(keys.lock("moving")), from, to);
                // the move wakes the waiter once its channel is placed on the new master: one more attempt
                Await.until("the waiter subscribed on the master the slot moved to, tried again and waits", bound,
                        () -> target.shardSubscribers(channel) == 1 && source.shardSubscribers(channel) == 0
                                && counting.acquireAttempts.get() > beforeMove && waitsForTurn(waiting.get()));
                int attempts = counting.acquireAttempts.get();

                held.unlock();
                assertThat(waited.get(bound.toSeconds(), TimeUnit.SECONDS)).as("the waiter's token")
                        .isGreaterThan(holderToken);
                assertThat(counting.acquireAttempts.get()).as("attempts after the unlock").isEqualTo(attempts + 1);
            } finally {
                threads.shutdownNow();
            }
        }

        /**
         * Whether {@code thread} waits for a wake-up: parked outside the store (inside, it may be parked on a pooled
         * connection or an answer).
         */
        private static boolean waitsForTurn(Thread thread) {
            if (thread == null) {
                return false;
            }
            Thread.State state = thread.getState();
            return (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING)
                    && Arrays.stream(thread.getStackTrace()).noneMatch(frame -> frame.getClassName().startsWith(
                            RedisLockStore.class.getName()) || frame.getClassName().startsWith("redis.clients."));
        }

        /** Moves {@code slot} with its keys from master {@code from} to master {@code to}, as a resharding does. */
        private void moveSlot(int slot, int from, int to) {
            RedisAdmin source = cluster.admins.get(from);
            RedisAdmin target = cluster.admins.get(to);
            String sourceId = source.call(jedis -> jedis.clusterMyId());
            String targetId = target.call(jedis -> jedis.clusterMyId());
            target.call(jedis -> jedis.clusterSetSlotImporting(slot, sourceId));
            source.call(jedis -> jedis.clusterSetSlotMigrating(slot, targetId));
            source.call(jedis -> {
                List<String> inSlot = jedis.clusterGetKeysInSlot(slot, 1_000);
                if (!inSlot.isEmpty()) {
                    jedis.migrate(cluster.nodes.get(to).host(), cluster.nodes.get(to).port(), 5_000,
                            new redis.clients.jedis.params.MigrateParams(), inSlot.toArray(String[]::new));
                }
                return null;
            });
            // every master learns the new owner at once rather than by gossip
            for (RedisAdmin admin : List.of(target, source)) {
                admin.call(jedis -> jedis.clusterSetSlotNode(slot, targetId));
            }
            for (RedisAdmin admin : cluster.admins) {
                if (admin != source && admin != target) {
                    admin.call(jedis -> jedis.clusterSetSlotNode(slot, targetId));
                }
            }
        }

        /** Calls of {@code command} on all masters, from {@code INFO commandstats} (scripts' calls included). */
        private long calls(String command) {
            return cluster.admins.stream().mapToLong(admin -> admin.commandCalls().getOrDefault(command, 0L)).sum();
        }

        @Test
        @DisplayName("inspect and forceRelease of locks on all three masters, each one script call on the slot's node")
        void inspectAndForceReleaseOnEveryMaster() {
            LockOptions options = LockOptions.builder().namespace(TestRedis.freshNamespace()).build();
            try (LockProvider app = newProvider(options); LockProvider operator = newProvider(options)) {
                String namespace = options.namespace();
                List<DistributedLock> locks = new java.util.ArrayList<>();
                for (int i = 0; i < 30; i++) {
                    DistributedLock lock = app.getLock("operated-" + i);
                    lock.lock();
                    locks.add(lock);
                }
                assertThat(cluster.admins.stream().filter(admin -> !admin.heldNames(namespace).isEmpty()).count())
                        .as("masters holding some of 30 locks").isEqualTo(3);
                for (DistributedLock lock : locks) {
                    io.locksmith.LockInfo info = operator.inspect(lock.name());
                    assertThat(info.owner()).as("%s", info)
                            .hasValueSatisfying(owner -> assertThat(owner).startsWith(app.clientId() + "."));
                    assertThat(info.fencingToken()).hasValue(lock.fencingToken());
                    assertThat(info.leaseRemaining()).hasValueSatisfying(left -> assertThat(left).isPositive()
                            .isLessThanOrEqualTo(options.leaseTime()));
                }
                for (DistributedLock lock : locks) {
                    long token = lock.fencingToken();
                    assertThat(operator.forceRelease(lock.name())).as("forceRelease of %s", lock.name()).isTrue();
                    io.locksmith.LockInfo info = operator.inspect(lock.name());
                    assertThat(info.isLocked()).as("%s", info).isFalse();
                    assertThat(info.fencingToken()).hasValue(token);
                }
                assertThat(heldNames(namespace)).isEmpty();
                for (DistributedLock lock : locks) {
                    org.assertj.core.api.Assertions.assertThatThrownBy(lock::unlock)
                            .isInstanceOf(io.locksmith.LockLostException.class);
                }
            }
        }

        @Test
        @DisplayName("locks spread over the three masters, each lock's keys on the node that owns its slot")
        void locksSpreadOverMasters() {
            try (LockProvider provider = newProvider(LockOptions.builder().namespace(TestRedis.freshNamespace())
                    .build())) {
                String namespace = provider.options().namespace();
                RedisKeys keys = new RedisKeys(namespace);
                List<DistributedLock> locks = new java.util.ArrayList<>();
                for (int i = 0; i < 30; i++) {
                    DistributedLock lock = provider.getLock("spread-" + i);
                    assertThat(lock.tryLock()).isTrue();
                    locks.add(lock);
                }
                long nodesWithLocks = cluster.admins.stream()
                        .filter(admin -> !admin.heldNames(namespace).isEmpty())
                        .count();
                assertThat(nodesWithLocks).as("masters holding some of 30 locks").isEqualTo(3);
                for (int i = 0; i < 30; i++) {
                    String name = "spread-" + i;
                    int slot = JedisClusterCRC16.getSlot(keys.lock(name));
                    assertThat(JedisClusterCRC16.getSlot(keys.fence(name))).isEqualTo(slot);
                }
                locks.forEach(DistributedLock::unlock);
                assertThat(heldNames(namespace)).isEmpty();
            }
        }
    }
}
