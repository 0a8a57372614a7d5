package io.locksmith.jdbc;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.function.UnaryOperator;

/** The SQL of MySQL 8.0+ and MariaDB 10.6+; MariaDB adds {@code FOR UPDATE WAIT n}. */
final class MySqlDialect extends Dialect {
    private static final int ER_LOCK_WAIT_TIMEOUT = 1205;
    private static final int ER_LOCK_DEADLOCK = 1213;
    private static final int ER_LOCK_NOWAIT = 3572;
    private static final int ER_NO_SUCH_TABLE = 1146;
    private static final int ER_DUP_ENTRY = 1062;
    private static final int ER_NO_SUCH_THREAD = 1094;
    private static final int ER_BAD_FIELD_ERROR = 1054;

    private final boolean mariaDb;

    MySqlDialect(String displayName, boolean mariaDb) {
        super(displayName, "mysql");
        this.mariaDb = mariaDb;
    }

    @Override
    int isolation() {
        return Connection.TRANSACTION_REPEATABLE_READ;
    }

    @Override
    String now() {
        // UTC_TIMESTAMP does not depend on the session's time_zone, which clients may set differently
        return "UTC_TIMESTAMP(6)";
    }

    @Override
    String nowPlusMicros() {
        return "UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND";
    }

    @Override
    String nowMinusMicros() {
        return "UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND";
    }

    @Override
    String tokenSeed() {
        return "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";
    }

    @Override
    String microsUntil(String column) {
        return "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), " + column + ")";
    }

    @Override
    Instant instant(ResultSet row, int column) throws SQLException {
        // DATETIME has no zone; Locksmith writes UTC_TIMESTAMP into it
        LocalDateTime utc = row.getObject(column, LocalDateTime.class);
        return utc == null ? null : utc.toInstant(ZoneOffset.UTC);
    }

    @Override
    String insertIfAbsent(String table) {
        return "INSERT IGNORE INTO " + table + " (lock_key, namespace, name, owner, token, acquired_at, expires_at)"
                + " VALUES (?, ?, ?, NULL, " + tokenSeed() + ", NULL, " + now() + ")";
    }

    @Override
    String returningToken(UnaryOperator<String> update, String next) {
        // LAST_INSERT_ID(expr) puts the new token into the OK packet, which drivers expose as the generated
        // key: the token comes back in the same round trip as the compare-and-set.
        return update.apply("LAST_INSERT_ID(" + next + ")");
    }

    @Override
    String upsertReader(String table) {
        return "INSERT INTO " + table + "_readers (lock_key, owner, expires_at) VALUES (?, ?, " + nowPlusMicros()
                + ") ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)";
    }

    @Override
    String addReadersColumn(String table) {
        return "ALTER TABLE " + table + " ADD COLUMN readers_until DATETIME(6) NULL";
    }

    @Override
    String lastGeneratedKey() {
        return "SELECT LAST_INSERT_ID()";
    }

    @Override
    String addClaimColumns(String table) {
        // added last, so MySQL 8.0.12+ and MariaDB 10.3+ add them in place (ALGORITHM=INSTANT), without copying
        return "ALTER TABLE " + table + " ADD COLUMN claimant VARCHAR(64) CHARACTER SET ascii NULL,"
                + " ADD COLUMN claim_token BIGINT NULL, ADD COLUMN claim_until DATETIME(6) NULL";
    }

    @Override
    String ddlLockWaitSetting(Duration wait) {
        // ALTER TABLE waits for the table's metadata lock, and every statement on the table queues behind it
        // meanwhile: that wait is lock_wait_timeout (a year by default), not innodb_lock_wait_timeout
        return "SET SESSION lock_wait_timeout = " + Math.max(1, LockTable.seconds(wait));
    }

    @Override
    String resetDdlLockWait() {
        return "SET SESSION lock_wait_timeout = DEFAULT";
    }

    // innodb_lock_wait_timeout and WAIT take whole seconds: round down, the machinery polls the rest

    @Override
    String lockWaitSetting(Duration wait) {
        long seconds = wait.getSeconds();
        return seconds <= 0 || mariaDb ? null : "SET SESSION innodb_lock_wait_timeout = " + seconds;
    }

    @Override
    String forUpdate(Duration wait) {
        long seconds = wait.getSeconds();
        if (seconds <= 0) {
            return " FOR UPDATE NOWAIT";
        }
        return mariaDb ? " FOR UPDATE WAIT " + seconds : " FOR UPDATE";
    }

    @Override
    String resetSession() {
        return mariaDb ? null : "SET SESSION innodb_lock_wait_timeout = DEFAULT";
    }

    @Override
    String drawTokenSql(String table) {
        // Each draw commits a row to take the next AUTO_INCREMENT value, which is never handed out again
        // (persisted since MySQL 8.0 and MariaDB 10.2.4, also after the rows are deleted: see trimTokensSql).
        return "INSERT INTO " + table + "_token () VALUES ()";
    }

    @Override
    String trimTokensSql(String table) {
        return "DELETE FROM " + table + "_token WHERE token < ?";
    }

    @Override
    String connectionId() {
        return "CONNECTION_ID()";
    }

    @Override
    String killStatement(long connectionId) {
        return "KILL CONNECTION " + connectionId;
    }

    @Override
    boolean isLockNotAvailable(SQLException e) {
        return hasCode(e, ER_LOCK_WAIT_TIMEOUT, ER_LOCK_DEADLOCK, ER_LOCK_NOWAIT);
    }

    @Override
    boolean isMissingTable(SQLException e) {
        return hasCode(e, ER_NO_SUCH_TABLE) || hasState(e, "42S02");
    }

    @Override
    boolean isMissingColumn(SQLException e) {
        return hasCode(e, ER_BAD_FIELD_ERROR) || hasState(e, "42S22");
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
        return hasCode(e, ER_DUP_ENTRY);
    }

    @Override
    boolean isNoSuchConnection(SQLException e) {
        return hasCode(e, ER_NO_SUCH_THREAD);
    }
}
