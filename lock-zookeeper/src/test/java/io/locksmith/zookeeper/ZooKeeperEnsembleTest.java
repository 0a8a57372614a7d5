package io.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockListener;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.ExclusionChecker;
import io.locksmith.tests.servers.ZooKeeperCluster;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.IntPredicate;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What a three-member ensemble adds: a member failing under a holder, and the loss of the quorum. */
@DisplayName("ZooKeeper backend on a 3-member ensemble")
class ZooKeeperEnsembleTest {

    private static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration BOUND = Duration.ofSeconds(30);

    private static ZooKeeperCluster cluster;
    private static CuratorFramework admin;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "zk-ensemble-worker");
        t.setDaemon(true);
        return t;
    });
    private final List<Integer> killed = new ArrayList<>();
    private String namespace;

    @BeforeAll
    static void startEnsemble() {
        cluster = ZooKeeperCluster.start();
        admin = ZooKeeperFixture.client(cluster.connectString(), Duration.ofSeconds(5), Duration.ofSeconds(30), null,
                null);
    }

    @AfterAll
    static void stopEnsemble() {
        if (admin != null) {
            admin.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @BeforeEach
    void newNamespace() {
        namespace = "ze" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    @AfterEach
    void closeEverything() throws Exception {
        threads.shutdownNow();
        for (int member : killed) {
            cluster.restartMember(member);
        }
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        awaitTrue("no lock nodes left after closing everything",
                () -> ZooKeeperFixture.heldNames(admin, namespace).isEmpty());
    }

    private LockOptions.Builder options() {
        return LockOptions.builder().namespace(namespace).operationTimeout(OPERATION_TIMEOUT)
                .leaseTime(Duration.ofSeconds(30));
    }

    private CuratorFramework client(Duration sessionTimeout) {
        return client(cluster.connectString(), sessionTimeout);
    }

    private CuratorFramework client(String connectString, Duration sessionTimeout) {
        CuratorFramework client = ZooKeeperFixture.client(connectString, OPERATION_TIMEOUT, sessionTimeout,
                new AtomicLong(), null);
        opened.add(client::close);
        return client;
    }

    /** The connect string of the members {@code members} accepts. */
    private static String connectString(IntPredicate members) {
        return IntStream.range(0, cluster.size()).filter(members).mapToObj(cluster::memberAddress)
                .collect(Collectors.joining(","));
    }

    private LockProvider provider(CuratorFramework client, LockOptions options) {
        LockProvider provider = ZooKeeperLockProviders.builder(client).options(options).build();
        opened.add(provider::close);
        return provider;
    }

    /**
     * The holder is connected to a follower and the waiters to the other two members, so that killing the holder's
     * member leaves a quorum that needs no election: the waiters' connections and calls are untouched, and only the
     * holder fails over (a leader's death, where every client waits for an election that may outlast any operation
     * timeout, is a store fault for ZooKeeperTortureTest).
     */
    @Test
    @DisplayName("killing the follower the holder is connected to: the hold survives failover, waiters follow in order")
    void holdSurvivesFailover() throws Exception {
        List<String> losses = new CopyOnWriteArrayList<>();
        LockListener listener = (name, reason) -> losses.add(name + ": " + reason);
        int leader = cluster.leader();
        CuratorFramework holderClient = client(connectString(m -> m != leader), Duration.ofSeconds(20));
        int member = memberOf(holderClient);
        DistributedLock holder = provider(holderClient, options().listener(listener).build()).getLock("failover");
        ExclusionChecker checker = new ExclusionChecker();
        holder.lock();
        checker.acquired(holder, "holder");
        long holderToken = holder.fencingToken();

        List<Future<Long>> waiters = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            String owner = "waiter-" + i;
            DistributedLock lock = provider(client(connectString(m -> m != member), Duration.ofSeconds(20)),
                    options().listener(listener).build()).getLock("failover");
            waiters.add(threads.submit(() -> {
                lock.lock();
                checker.acquired(lock, owner);
                long token = lock.fencingToken();
                checker.releasing(lock.name(), owner);
                lock.unlock();
                return token;
            }));
            int queued = i + 2;
            awaitTrue(owner + " is queued", () -> nodes("failover").size() == queued);
        }

        cluster.killMember(member);
        killed.add(member);
        awaitTrue("the holder's client reconnects to another member", () -> {
            try {
                return holderClient.getZookeeperClient().isConnected() && memberOf(holderClient) != member;
            } catch (IllegalStateException notYet) {
                return false;
            }
        });
        assertThat(holder.isLocked()).isTrue();
        Thread.sleep(500);
        assertThat(losses).as("losses after the failover").isEmpty();
        assertThat(holder.isHeldByCurrentThread()).as("hold after the failover").isTrue();
        assertThat(holder.fencingToken()).isEqualTo(holderToken);
        assertThat(waiters).as("waiters while the holder still holds").noneMatch(Future::isDone);
        assertThat(nodes("failover")).as("queue after the failover").hasSize(3);

        checker.releasing(holder.name(), "holder");
        holder.unlock();
        long first = waiters.get(0).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        long second = waiters.get(1).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(first).as("first waiter's token").isGreaterThan(holderToken);
        assertThat(second).as("second waiter's token, served after the first").isGreaterThan(first);
        checker.assertClean();
        assertThat(losses).isEmpty();
    }

    /**
     * The waiters connect only to the two members that are killed, so that their connections drop at the kill and
     * cannot move anywhere: Curator declares their sessions LOST one session timeout later and their next call
     * fails within the operation timeout, whichever member led and however soon the third member noticed that it
     * lost the quorum.
     */
    @Test
    @DisplayName("quorum lost while waiting: waiters give up or fail within their bounds, and all recover after")
    void quorumLostWhileWaiting() throws Exception {
        Duration session = Duration.ofSeconds(3);
        LockProvider holderProvider = provider(client(session), options().build());
        LockProvider timedProvider = provider(client(connectString(m -> m < 2), session), options().build());
        LockProvider waitingProvider = provider(client(connectString(m -> m < 2), session), options().build());
        DistributedLock holder = holderProvider.getLock("quorum");
        DistributedLock timedLock = timedProvider.getLock("quorum");
        DistributedLock waitingLock = waitingProvider.getLock("quorum");
        holder.lock();
        Duration wait = Duration.ofSeconds(4);
        Future<Object> timed = threads.submit(() -> {
            try {
                return timedLock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS);
            } catch (LockBackendException e) {
                return e;
            }
        });
        Future<Throwable> unbounded = threads.submit(() -> {
            try {
                waitingLock.lock();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        awaitTrue("both waiters are queued", () -> nodes("quorum").size() == 3);
        long start = System.nanoTime();
        cluster.killMember(0);
        killed.add(0);
        cluster.killMember(1);
        killed.add(1);

        Object outcome = timed.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(outcome).as("what tryLock(4 s) gave without a quorum").satisfiesAnyOf(
                o -> assertThat(o).isEqualTo(Boolean.FALSE),
                o -> assertThat(o).isInstanceOf(LockBackendException.class));
        assertThat(unbounded.get(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("what a waiting lock() got without "
                + "a quorum").isInstanceOf(LockBackendException.class);
        // tryLock returns within its wait and one operation timeout; the waiting lock() fails at the session timeout
        // and one operation timeout, sooner; 5 s more for the threads that deliver the news on a loaded machine
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("time until both waiters returned")
                .isLessThanOrEqualTo(wait.plus(OPERATION_TIMEOUT).plusSeconds(5));

        cluster.restartMember(0);
        killed.remove(Integer.valueOf(0));
        awaitTrue("the holder's hold is settled once the quorum is back",
                () -> ZooKeeperFixture.unlockSettled(holder));
        // The waiters' sessions ended in the outage (their clients reconnect with new ones by themselves), or lived
        // on when the waiters gave up quickly and the quorum was back within the 3 s (their given-up nodes must
        // then be deleted: see briefQuorumLossLeavesNoNodes).
        for (DistributedLock lock : List.of(timedLock, waitingLock)) {
            try {
                awaitTrue("a waiting provider acquires after the outage", () -> attempt(lock));
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; nodes " + nodes("quorum") + "; holder "
                        + holderProvider.clientId() + ", timed " + timedProvider.clientId() + ", waiting "
                        + waitingProvider.clientId(), e);
            }
            lock.unlock();
        }
    }

    @Test
    @DisplayName("quorum lost for less than the session timeout: nodes given up meanwhile are deleted once it is back")
    void briefQuorumLossLeavesNoNodes() throws Exception {
        DistributedLock holder = provider(client(Duration.ofSeconds(5)), options().build()).getLock("brief");
        CuratorFramework timedClient = client(Duration.ofSeconds(5));
        CuratorFramework waitingClient = client(Duration.ofSeconds(5));
        DistributedLock timedLock = provider(timedClient, options().build()).getLock("brief");
        DistributedLock waitingLock = provider(waitingClient, options().build()).getLock("brief");
        holder.lock();
        Future<Object> timed = threads.submit(() -> {
            try {
                return timedLock.tryLock(2, TimeUnit.SECONDS);
            } catch (LockBackendException e) {
                return e;
            }
        });
        Future<Throwable> unbounded = threads.submit(() -> {
            try {
                waitingLock.lock();
                waitingLock.unlock();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        awaitTrue("both waiters are queued", () -> nodes("brief").size() == 3);
        // The members the waiters are connected to: their connections drop, which wakes them, and their calls
        // fail until the quorum is back, so that they give their nodes up while their sessions live on.
        int first = memberOf(waitingClient);
        int second = memberOf(timedClient) != first ? memberOf(timedClient) : (first + 1) % cluster.size();
        cluster.killMember(first);
        killed.add(first);
        cluster.killMember(second);
        killed.add(second);
        Thread.sleep(1500);
        cluster.restartMember(first); // the quorum is back well within the 5 s sessions
        killed.remove(Integer.valueOf(first));

        assertThat(timed.get(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("what tryLock(2 s) gave").satisfiesAnyOf(
                o -> assertThat(o).isEqualTo(Boolean.FALSE),
                o -> assertThat(o).isInstanceOf(LockBackendException.class));
        awaitTrue("the holder's hold is settled once the quorum is back",
                () -> ZooKeeperFixture.unlockSettled(holder));
        Throwable waited = unbounded.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(waited).as("the waiting lock() either acquired after the holder or failed in the outage")
                .satisfiesAnyOf(t -> assertThat(t).isNull(),
                        t -> assertThat(t).isInstanceOf(LockBackendException.class));
        // Nobody holds or waits now: a node left behind would block the name for as long as its session lives.
        awaitTrue("no lock node is left", () -> nodes("brief").isEmpty());
        for (DistributedLock lock : List.of(timedLock, waitingLock)) {
            assertThat(lock.tryLock()).as("a provider that waited acquires").isTrue();
            lock.unlock();
        }
    }

    /** One attempt that counts a store failure as "not yet". */
    private static boolean attempt(DistributedLock lock) {
        try {
            return lock.tryLock();
        } catch (LockBackendException e) {
            return false;
        }
    }

    /** The member the client is connected to now. */
    private static int memberOf(CuratorFramework client) {
        InetSocketAddress remote;
        try {
            remote = (InetSocketAddress) ((CountingZooKeeper) client.getZookeeperClient().getZooKeeper())
                    .remoteAddress();
        } catch (Exception e) {
            throw new IllegalStateException("no ZooKeeper handle", e);
        }
        if (remote == null) {
            throw new IllegalStateException("not connected");
        }
        for (int i = 0; i < cluster.size(); i++) {
            String address = cluster.memberAddress(i);
            if (Integer.parseInt(address.substring(address.lastIndexOf(':') + 1)) == remote.getPort()) {
                return i;
            }
        }
        throw new IllegalStateException("connected to " + remote + ", which is no member of " + cluster);
    }

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
}
