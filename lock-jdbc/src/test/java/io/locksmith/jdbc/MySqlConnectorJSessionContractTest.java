package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: MariaDB through MySQL Connector/J, session mode")
class MySqlConnectorJSessionContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.MYSQL_CONNECTOR_J;
    }

    @Override
    Mode mode() {
        return Mode.SESSION;
    }

    @Override
    boolean autoCommitPool() {
        return true;
    }

    @Override
    protected boolean runsPrimitives() {
        return false; // MariaDbSessionContractTest runs the primitives' groups on this database
    }
}
