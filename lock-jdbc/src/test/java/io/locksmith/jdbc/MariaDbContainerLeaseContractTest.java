package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

/** The contract on a database in a container started through Testcontainers, whatever else the machine has. */
@DisplayName("contract: MariaDb lease mode, Testcontainers")
class MariaDbContainerLeaseContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.MARIADB_CONTAINER;
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
    protected boolean runsCallFaults() {
        return false; // the same server binary as the plain run of this dialect, which runs the call-fault group
    }

    @Override
    protected boolean runsPrimitives() {
        return false; // the same server binary as the plain run of this dialect, which runs the primitives' groups
    }
}
