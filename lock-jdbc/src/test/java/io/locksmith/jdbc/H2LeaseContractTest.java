package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: H2 lease mode, pool with autoCommit=false")
class H2LeaseContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.H2;
    }

    @Override
    Mode mode() {
        return Mode.LEASE;
    }
}
