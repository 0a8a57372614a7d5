package io.locksmith.jdbc;

import io.locksmith.jdbc.JdbcLockProviders.Mode;
import org.junit.jupiter.api.DisplayName;

@DisplayName("contract: H2 session mode, pool with autoCommit=false")
class H2SessionContractTest extends JdbcContract {

    @Override
    JdbcTarget target() {
        return JdbcTarget.H2;
    }

    @Override
    Mode mode() {
        return Mode.SESSION;
    }
}
