package io.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockListener;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.servers.ZooKeeperServer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** {@link LockProvider#inspect} and {@link LockProvider#forceRelease} on one ZooKeeper server. */
@DisplayName("ZooKeeper inspect and forced release")
class ZooKeeperInspectTest {

    private static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(2);
    /** Generous bound for anything asynchronous, on a busy machine. */
    private static final Duration BOUND = Duration.ofSeconds(15);

    private static ZooKeeperServer server;
    private static CuratorFramework admin;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "zk-inspect-worker");
        t.setDaemon(true);
        return t;
    });
    private String namespace;

    @BeforeAll
    static void startServer() {
        server = ZooKeeperServer.start();
        admin = ZooKeeperFixture.client(server.connectString(), Duration.ofSeconds(5), null, null);
    }

    @AfterAll
    static void stopServer() {
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void newNamespace() {
        namespace = "zi" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    @AfterEach
    void closeEverything() throws Exception {
        threads.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        assertThat(ZooKeeperFixture.heldNames(admin, namespace)).as("lock nodes left after closing everything")
                .isEmpty();
    }

    private LockOptions.Builder options() {
        return LockOptions.builder().namespace(namespace).operationTimeout(OPERATION_TIMEOUT)
                .leaseTime(Duration.ofSeconds(30));
    }

    private LockProvider provider(LockOptions options, String digestCredentials) {
        CuratorFramework client = ZooKeeperFixture.client(server.connectString(), OPERATION_TIMEOUT, null,
                digestCredentials);
        opened.add(client::close);
        ZooKeeperLockProviders.Builder builder = ZooKeeperLockProviders.builder(client).options(options);
        if (digestCredentials != null) {
            String[] userAndPassword = digestCredentials.split(":", 2);
            builder.digestAcl(userAndPassword[0], userAndPassword[1]);
        }
        LockProvider provider = builder.build();
        opened.add(provider::close);
        return provider;
    }

    private LockProvider provider(LockOptions options) {
        return provider(options, null);
    }

    @Test
    @DisplayName("a lock nobody ever took is free, without a token")
    void neverTaken() {
        LockInfo info = provider(options().build()).inspect("never");
        assertThat(info.name()).isEqualTo("never");
        assertThat(info.isLocked()).isFalse();
        assertThat(info.owner()).isEmpty();
        assertThat(info.acquiredAt()).isEmpty();
        assertThat(info.leaseRemaining()).isEmpty();
        assertThat(info.fencingToken()).as("ZooKeeper keeps no last token").isEmpty();
    }

    @Test
    @DisplayName("a held lock: the owner id of the holder's hold, its node's creation time and zxid; a lease only "
            + "in the holder's own view")
    void held() throws Exception {
        LockProvider holder = provider(options().build());
        LockProvider operator = provider(options().build());
        DistributedLock lock = holder.getLock("job:nightly");
        lock.lock();
        Stat node = admin.checkExists().forPath(nodes("job:nightly").get(0));

        LockInfo info = operator.inspect("job:nightly");
        assertThat(info.isLocked()).isTrue();
        assertThat(info.owner()).hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
        assertThat(info.fencingToken()).hasValue(lock.fencingToken());
        assertThat(info.fencingToken()).hasValue(node.getCzxid());
        assertThat(info.acquiredAt()).contains(Instant.ofEpochMilli(node.getCtime()));
        assertThat(info.leaseRemaining()).as("lease seen by another provider: ZooKeeper has none").isEmpty();

        LockInfo own = holder.inspect("job:nightly");
        assertThat(own.owner()).hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
        assertThat(own.fencingToken()).hasValue(lock.fencingToken());
        assertThat(own.leaseRemaining()).as("the holder's own client-side lease").hasValueSatisfying(left ->
                assertThat(left).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(30)));

        lock.unlock();
        LockInfo after = operator.inspect("job:nightly");
        assertThat(after.isLocked()).as("after unlock()").isFalse();
        assertThat(after.fencingToken()).isEmpty();
    }

    @Test
    @DisplayName("with waiters queued, the holder is the lowest node, and the next holder has its own token")
    void holderIsTheLowestNode() throws Exception {
        LockProvider operator = provider(options().build());
        LockProvider holder = provider(options().build());
        LockProvider waiter = provider(options().build());
        DistributedLock first = holder.getLock("queue");
        first.lock();
        long firstToken = first.fencingToken();
        CountDownLatch done = new CountDownLatch(1);
        Future<Long> second = threads.submit(() -> {
            DistributedLock lock = waiter.getLock("queue");
            lock.lock();
            long token = lock.fencingToken();
            done.await();
            lock.unlock();
            return token;
        });
        awaitTrue("the waiter is queued", () -> nodes("queue").size() == 2);

        LockInfo info = operator.inspect("queue");
        assertThat(info.owner()).hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
        assertThat(info.fencingToken()).hasValue(firstToken);

        first.unlock();
        awaitTrue("the waiter holds the lock", () -> nodes("queue").size() == 1);
        LockInfo next = operator.inspect("queue");
        assertThat(next.owner()).hasValueSatisfying(owner -> assertThat(owner).startsWith(waiter.clientId() + "."));
        assertThat(next.fencingToken().getAsLong()).isGreaterThan(firstToken);
        done.countDown();
        assertThat(second.get(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo(next.fencingToken().getAsLong());
        assertThat(operator.inspect("queue").isLocked()).isFalse();
    }

    @Test
    @DisplayName("forceRelease deletes only the holder's node: the holder hears of the loss, the first waiter takes "
            + "over, the other waiters keep their places")
    void forceReleaseFreesTheHolderOnly() throws Exception {
        Losses losses = new Losses();
        LockProvider holder = provider(options().leaseTime(Duration.ofSeconds(3)).listener(losses).build());
        LockProvider operator = provider(options().build());
        DistributedLock lock = holder.getLock("stuck");
        lock.lock();
        long token = lock.fencingToken();

        List<CountDownLatch> releases = new ArrayList<>();
        List<Future<Long>> waiters = new ArrayList<>();
        List<LockProvider> waiterProviders = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            LockProvider waiter = provider(options().build());
            waiterProviders.add(waiter);
            CountDownLatch release = new CountDownLatch(1);
            releases.add(release);
            waiters.add(threads.submit(() -> {
                DistributedLock mine = waiter.getLock("stuck");
                mine.lock();
                long myToken = mine.fencingToken();
                release.await();
                mine.unlock();
                return myToken;
            }));
            int queued = i + 2;
            awaitTrue("waiter " + i + " is queued", () -> nodes("stuck").size() == queued);
        }
        List<String> queue = nodes("stuck");

        assertThat(operator.forceRelease("stuck")).isTrue();

        awaitTrue("the holder's listener hears of the loss", () -> losses.names.contains("stuck"));
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
        awaitTrue("the first waiter holds the lock",
                () -> operator.inspect("stuck").owner().orElse("")
                        .startsWith(waiterProviders.get(0).clientId() + "."));
        assertThat(nodes("stuck")).as("nodes after the forced release").isEqualTo(queue.subList(1, 3));
        LockInfo next = operator.inspect("stuck");
        assertThat(next.fencingToken().getAsLong()).isGreaterThan(token);

        releases.get(0).countDown();
        assertThat(waiters.get(0).get(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo(
                next.fencingToken().getAsLong());
        awaitTrue("the second waiter holds the lock",
                () -> operator.inspect("stuck").owner().orElse("")
                        .startsWith(waiterProviders.get(1).clientId() + "."));
        releases.get(1).countDown();
        assertThat(waiters.get(1).get(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isGreaterThan(
                next.fencingToken().getAsLong());
        assertThat(losses.names).as("losses reported").containsExactly("stuck");

        assertThat(lock.tryLock()).as("the old holder locks again").isTrue();
        lock.unlock();
    }

    @Test
    @DisplayName("after forceRelease another provider's tryLock() succeeds at once with a larger token")
    void forceReleaseLetsAnotherProviderAcquire() {
        LockProvider holder = provider(options().build());
        LockProvider operator = provider(options().build());
        DistributedLock lock = holder.getLock("taken");
        lock.lock();
        long token = lock.fencingToken();
        DistributedLock other = operator.getLock("taken");
        assertThat(other.tryLock()).as("tryLock() while held").isFalse();

        assertThat(operator.forceRelease("taken")).isTrue();
        assertThat(other.tryLock()).as("tryLock() after the forced release").isTrue();
        assertThat(other.fencingToken()).isGreaterThan(token);
        assertThat(operator.inspect("taken").owner())
                .hasValueSatisfying(owner -> assertThat(owner).startsWith(operator.clientId() + "."));
        other.unlock();
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
    }

    @Test
    @DisplayName("forceRelease of a free lock deletes nothing and answers false")
    void forceReleaseOfAFreeLock() {
        LockProvider operator = provider(options().build());
        assertThat(operator.forceRelease("never")).isFalse();
        DistributedLock lock = operator.getLock("once");
        lock.lock();
        lock.unlock();
        assertThat(operator.forceRelease("once")).isFalse();
    }

    @Test
    @DisplayName("digest ACL: anyone may inspect; forceRelease needs the credentials, else NOAUTH")
    void digestAcl() throws Exception {
        LockProvider holder = provider(options().build(), "app:secret");
        DistributedLock lock = holder.getLock("guarded");
        lock.lock();
        long token = lock.fencingToken();

        LockProvider stranger = provider(options().build());
        assertThat(stranger.inspect("guarded").fencingToken()).as("inspect without credentials").hasValue(token);
        assertThatThrownBy(() -> stranger.forceRelease("guarded")).isInstanceOf(LockBackendException.class)
                .hasMessageContaining("'guarded'").hasMessageContaining("NOAUTH")
                .hasMessageContaining("user:password@");
        assertThat(nodes("guarded")).as("nodes after a refused forced release").hasSize(1);
        assertThat(lock.isHeldByCurrentThread()).isTrue();

        LockProvider operator = provider(options().build(), "app:secret");
        assertThat(operator.forceRelease("guarded")).isTrue();
        assertThat(nodes("guarded")).isEmpty();
        assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
    }

    // ------------------------------------------------------------------------------------------------------

    private List<String> nodes(String name) {
        try {
            return ZooKeeperFixture.lockNodes(admin, namespace, name);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static void awaitTrue(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + BOUND.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + BOUND.toMillis() + " ms waiting until " + what);
            }
            Thread.sleep(10);
        }
    }

    /** A listener that remembers the losses it hears of. */
    private static final class Losses implements LockListener {
        final List<String> names = new CopyOnWriteArrayList<>();

        @Override
        public void onLost(String lockName, String reason) {
            names.add(lockName);
        }
    }
}
