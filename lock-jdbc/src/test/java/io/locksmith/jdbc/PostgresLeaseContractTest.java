package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: Postgres lease mode, pool with autoCommit=false")
class PostgresLeaseContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.POSTGRES;
    }

    @Override
    Mode mode() {
        return Mode.LEASE;
    }
}
