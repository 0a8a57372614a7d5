package io.locksmith.tests.servers;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A three-member ZooKeeper ensemble for tests, found or started per run, whose members the tests can kill and
 * restart one at a time when they own it.
 *
 * <p>The ensemble comes from the first of these that applies:
 * <ol>
 *   <li>{@code LOCKSMITH_ZOOKEEPER} (or {@code -Dlocksmith.zookeeper}): the ensemble's connect string
 *       {@code host:port,host:port,...[/chroot]}. The tests do not own it: {@link #isControllable()} is false.</li>
 *   <li>An in-JVM ensemble through curator-test ({@code TestingCluster}), when curator-test is on the classpath.</li>
 *   <li>Three {@code zookeeper:3.9} containers on a private network through Testcontainers, when it is on the
 *       classpath and a Docker engine answers.</li>
 * </ol>
 * Otherwise {@link #start()} throws {@link ServerUnavailableException} saying what to add or set. Members are
 * numbered from 0 in server-id order.
 */
public final class ZooKeeperCluster implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperCluster.class);

    private static final int SIZE = 3;
    private static final Duration LEADER_LIMIT = Duration.ofSeconds(30);
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

    private final List<String> addresses;
    private final List<Control> members;
    private final String origin;
    private final AutoCloseable whole;
    private final boolean controllable;

    private ZooKeeperCluster(List<String> addresses, List<Control> members, String origin, AutoCloseable whole,
                             boolean controllable) {
        this.addresses = List.copyOf(addresses);
        this.members = List.copyOf(members);
        this.origin = origin;
        this.whole = whole;
        this.controllable = controllable;
    }

    /**
     * Returns an ensemble of three members in which every member serves requests.
     *
     * @throws ServerUnavailableException if none can be had, saying what to add or set
     */
    public static ZooKeeperCluster start() {
        return start(Settings.system());
    }

    static ZooKeeperCluster start(Settings settings) {
        ZooKeeperCluster cluster = resolve(settings);
        LOG.info("ZooKeeper ensemble for tests: {}", cluster);
        return cluster;
    }

    private static ZooKeeperCluster resolve(Settings settings) {
        Optional<Settings.Value> given = settings.get(ZooKeeperServer.CONNECT_SETTING);
        if (given.isPresent()) {
            Settings.Value value = given.get();
            ZooKeeperServer.requireReachable(value);
            List<String> addresses = ZooKeeperServer.members(value.text());
            List<Control> none = addresses.stream()
                    .map(address -> Control.none(address, value.source()))
                    .toList();
            return new ZooKeeperCluster(addresses, none, value.text() + " from " + value.source() + " ("
                    + none.get(0).describe() + ")", () -> { }, false);
        }
        if (OptionalDependency.CURATOR_TEST.present()) {
            InJvmZooKeeper.Ensemble ensemble = InJvmZooKeeper.startCluster(SIZE);
            return started(ensemble.members().stream().map(InJvmZooKeeper.Member::address).toList(),
                    ensemble.members().stream().map(InJvmZooKeeper.Member::control).toList(),
                    "in-JVM curator-test TestingCluster", ensemble.whole());
        }
        if (DockerEngine.reachable()) {
            String servers = IntStream.rangeClosed(1, SIZE)
                    .mapToObj(id -> "server." + id + "=zk" + id + ":2888:3888;" + ZooKeeperServer.CLIENT_PORT)
                    .collect(Collectors.joining(" "));
            DockerServer.Group group = DockerServer.startGroup(ZooKeeperServer.IMAGE, ZooKeeperServer.CLIENT_PORT,
                    SIZE, i -> "zk" + (i + 1),
                    i -> Map.of("ZOO_MY_ID", Integer.toString(i + 1), "ZOO_SERVERS", servers));
            List<String> addresses = new ArrayList<>();
            List<Control> controls = new ArrayList<>();
            for (DockerServer member : group.members()) {
                addresses.add(member.host() + ":" + member.port());
                controls.add(member);
            }
            return started(addresses, controls, "Testcontainers " + ZooKeeperServer.IMAGE + " x" + SIZE, group);
        }
        throw ZooKeeperServer.unavailable("ZooKeeper ensemble");
    }

    private static ZooKeeperCluster started(List<String> addresses, List<Control> controls, String kind,
                                            AutoCloseable whole) {
        try {
            String version = null;
            for (int i = 0; i < addresses.size(); i++) {
                version = ZooKeeperServer.awaitServing(addresses.get(i), controls.get(i),
                        kind + " member " + i + " on " + addresses.get(i) + " did not serve requests");
            }
            return new ZooKeeperCluster(addresses, controls, kind + " (ZooKeeper " + version + ") on "
                    + String.join(",", addresses), whole, true);
        } catch (RuntimeException e) {
            try {
                whole.close();
            } catch (Exception suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Returns the connect string clients use, listing every member. */
    public String connectString() {
        return String.join(",", addresses);
    }

    /** Returns the number of members. */
    public int size() {
        return addresses.size();
    }

    /** Returns the {@code host:port} of member {@code member}, counted from 0. */
    public String memberAddress(int member) {
        return addresses.get(checked(member));
    }

    /**
     * Returns the member that leads the ensemble now (counted from 0), asking each member with ZooKeeper's
     * {@code srvr} command which mode it is in; while an election is going on (no member says {@code leader}), asks
     * again for up to 30 s. A member that is down or does not answer is not the leader.
     *
     * @throws ServerUnavailableException if no member led the ensemble within that time
     */
    public int leader() {
        int[] leader = {-1};
        Await.until("no member of " + origin + " said it led the ensemble", LEADER_LIMIT, () -> {
            for (int i = 0; i < addresses.size(); i++) {
                String address = addresses.get(i);
                int colon = address.lastIndexOf(':');
                String answer;
                try {
                    answer = Tcp.exchange(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)),
                            "srvr", PROBE_TIMEOUT);
                } catch (IOException down) {
                    continue;
                }
                if (answer.lines().anyMatch(line -> line.strip().equals("Mode: leader"))) {
                    leader[0] = i;
                    return true;
                }
            }
            return false;
        });
        return leader[0];
    }

    /**
     * Returns whether {@link #killMember} and {@link #restartMember} work: true for an ensemble the tests started,
     * false for one given by {@code LOCKSMITH_ZOOKEEPER}.
     */
    public boolean isControllable() {
        return controllable;
    }

    /**
     * Stops one member abruptly; with three members the other two keep a quorum and go on serving.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void killMember(int member) {
        members.get(checked(member)).kill();
    }

    /**
     * Starts a member again on the same ports with its data, and waits until it serves requests.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void restartMember(int member) {
        Control control = members.get(checked(member));
        control.restart();
        ZooKeeperServer.awaitServing(addresses.get(member), control,
                "member " + member + " of " + origin + " did not serve requests after restart");
        LOG.info("ZooKeeper ensemble for tests: member {} restarted ({})", member, control.describe());
    }

    private int checked(int member) {
        if (member < 0 || member >= addresses.size()) {
            throw new IllegalArgumentException("No member " + member + ": members are 0.." + (addresses.size() - 1)
                    + " of " + origin);
        }
        return member;
    }

    /** Stops an ensemble the tests started and deletes its data; a given ensemble is left alone. */
    @Override
    public void close() {
        try {
            whole.close();
        } catch (Exception e) {
            throw new IllegalStateException("Could not close " + origin + ": " + Await.describe(e), e);
        }
    }

    /** Returns which path the ensemble took, e.g. "in-JVM curator-test TestingCluster (ZooKeeper 3.9.3) on ...". */
    @Override
    public String toString() {
        return origin;
    }
}
