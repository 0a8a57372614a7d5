package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: MariaDb session mode, pool with autoCommit=false")
class MariaDbSessionContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.MARIADB;
    }

    @Override
    Mode mode() {
        return Mode.SESSION;
    }
}
