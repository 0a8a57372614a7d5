package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: Postgres lease mode over a pool with autoCommit=false")
class PostgresLeaseAutoCommitOffContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.POSTGRES;
    }

    @Override
    Mode mode() {
        return Mode.LEASE;
    }

    @Override
    boolean autoCommitPool() {
        return false;
    }
}
