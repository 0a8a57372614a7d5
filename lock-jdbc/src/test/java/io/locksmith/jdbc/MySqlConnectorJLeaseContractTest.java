package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: MariaDB through MySQL Connector/J, lease mode")
class MySqlConnectorJLeaseContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.MYSQL_CONNECTOR_J;
    }

    @Override
    Mode mode() {
        return Mode.LEASE;
    }

    @Override
    boolean autoCommitPool() {
        return true;
    }

    @Override
    protected boolean runsPrimitives() {
        return false; // MariaDbLeaseContractTest runs the primitives' groups on this database
    }
}
