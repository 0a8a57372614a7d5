package io.locksmith.tests.servers;

import org.junit.jupiter.api.DisplayName;

@DisplayName("DatabaseServer fixture: a private MariaDB")
class OwnMariaDbServerTest extends AbstractOwnDatabaseServerTest {

    @Override
    Dialect dialect() {
        return Dialect.MARIADB;
    }
}
