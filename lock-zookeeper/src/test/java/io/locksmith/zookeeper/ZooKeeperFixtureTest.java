package io.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.tests.servers.ZooKeeperServer;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The fixture's admin reads, which the leak check after every contract test relies on. */
@DisplayName("ZooKeeper test fixture")
class ZooKeeperFixtureTest {

    @Test
    @DisplayName("the leak check's read works after the admin client's own session expired (a long server fault)")
    void readsAfterTheAdminSessionExpired() throws Exception {
        try (ZooKeeperServer server = ZooKeeperServer.start();
                CuratorFramework admin = ZooKeeperFixture.client(server.connectString(), Duration.ofSeconds(5),
                        null, null)) {
            long session = admin.getZookeeperClient().getZooKeeper().getSessionId();
            admin.getZookeeperClient().getZooKeeper().getTestable().injectSessionExpiration();
            assertThat(ZooKeeperFixture.heldNames(admin, "fixture-expired")).isEmpty();
            assertThat(admin.getZookeeperClient().getZooKeeper().getSessionId()).as("the admin's session")
                    .isNotEqualTo(session);
        }
    }
}
