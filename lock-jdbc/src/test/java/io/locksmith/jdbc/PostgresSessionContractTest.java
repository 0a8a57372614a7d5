package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: Postgres session mode, pool with autoCommit=false")
class PostgresSessionContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.POSTGRES;
    }

    @Override
    Mode mode() {
        return Mode.SESSION;
    }
}
