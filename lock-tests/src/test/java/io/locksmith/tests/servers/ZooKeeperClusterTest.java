package io.locksmith.tests.servers;

import static io.locksmith.tests.servers.ZooKeeperServerTest.connect;
import static io.locksmith.tests.servers.ZooKeeperServerTest.openSocket;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ConnectException;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("ZooKeeperCluster fixture (in-JVM TestingCluster of 3)")
class ZooKeeperClusterTest {

    @Test
    @DisplayName("starts three members; with one killed the rest still serve; the restarted one catches up")
    void killAndRestartOneMember() throws Exception {
        try (ZooKeeperCluster cluster = ZooKeeperCluster.start()) {
            assertThat(cluster.isControllable()).isTrue();
            assertThat(cluster.size()).isEqualTo(3);
            Set<String> members = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                members.add(cluster.memberAddress(i));
            }
            assertThat(members).hasSize(3);
            assertThat(cluster.connectString()).isEqualTo(String.join(",",
                    cluster.memberAddress(0), cluster.memberAddress(1), cluster.memberAddress(2)));

            try (CuratorFramework client = connect(cluster.connectString())) {
                client.create().forPath("/before-kill");
            }

            cluster.killMember(0);
            assertThatThrownBy(() -> openSocket(cluster.memberAddress(0))).isInstanceOf(ConnectException.class);
            try (CuratorFramework client = connect(cluster.memberAddress(1) + "," + cluster.memberAddress(2))) {
                assertThat(client.checkExists().forPath("/before-kill")).isNotNull();
                client.create().forPath("/while-0-is-down");
            }

            cluster.restartMember(0);
            try (CuratorFramework onlyMember0 = connect(cluster.memberAddress(0))) {
                assertThat(onlyMember0.checkExists().forPath("/while-0-is-down")).isNotNull();
            }
        }
    }

    @Test
    @DisplayName("tells which member leads; with the leader killed, another member is elected and named")
    void findsTheLeader() {
        try (ZooKeeperCluster cluster = ZooKeeperCluster.start()) {
            int leader = cluster.leader();
            assertThat(leader).isBetween(0, 2);

            cluster.killMember(leader);
            int elected = cluster.leader();
            assertThat(elected).isBetween(0, 2).isNotEqualTo(leader);

            cluster.restartMember(leader);
            assertThat(cluster.leader()).as("a member that rejoins follows the leader it finds").isEqualTo(elected);
        }
    }

    @Test
    @DisplayName("uses a given connect string, and refuses to kill or restart its members")
    void usesGivenConnectString() throws Exception {
        try (ZooKeeperServer own = ZooKeeperServer.start()) {
            ZooKeeperCluster given = ZooKeeperCluster.start(
                    Settings.of(Map.of("locksmith.zookeeper", own.connectString())));
            assertThat(given.isControllable()).isFalse();
            assertThat(given.connectString()).isEqualTo(own.connectString());
            assertThat(given.size()).isEqualTo(1);
            assertThatThrownBy(() -> given.killMember(0))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("-Dlocksmith.zookeeper");
            assertThatThrownBy(() -> given.killMember(1)).isInstanceOf(IllegalArgumentException.class);
            given.close();
        }
    }
}
