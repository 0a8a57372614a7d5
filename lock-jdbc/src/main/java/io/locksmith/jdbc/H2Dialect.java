package io.locksmith.jdbc;

import java.sql.SQLException;
import java.time.Duration;
import java.util.function.UnaryOperator;

/** The SQL of H2 2.x. */
final class H2Dialect extends Dialect {
    private static final int LOCK_TIMEOUT_1 = 50200;
    private static final int DEADLOCK_1 = 40001;
    private static final int TABLE_OR_VIEW_NOT_FOUND = 42102;
    private static final int TABLE_OR_VIEW_NOT_FOUND_DATABASE_EMPTY = 42104;
    private static final int TABLE_OR_VIEW_NOT_FOUND_WITH_CANDIDATES = 42103;
    private static final int DUPLICATE_KEY_1 = 23505;
    private static final int COLUMN_NOT_FOUND_1 = 42122;

    H2Dialect() {
        super("H2", "h2");
    }

    @Override
    String now() {
        return "CURRENT_TIMESTAMP(6)";
    }

    @Override
    String nowPlusMicros() {
        return "DATEADD(MICROSECOND, ?, CURRENT_TIMESTAMP(6))";
    }

    @Override
    String nowMinusMicros() {
        return "DATEADD(MICROSECOND, -CAST(? AS BIGINT), CURRENT_TIMESTAMP(6))";
    }

    @Override
    String tokenSeed() {
        return "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP(6)) * 1000000 AS BIGINT)";
    }

    @Override
    String microsUntil(String column) {
        return "DATEDIFF(MICROSECOND, CURRENT_TIMESTAMP(6), " + column + ")";
    }

    @Override
    String insertIfAbsent(String table) {
        return "MERGE INTO " + table + " t USING (VALUES (CAST(? AS BINARY(32)), CAST(? AS VARCHAR(64)),"
                + " CAST(? AS VARCHAR(510)))) s(k, ns, nm) ON t.lock_key = s.k WHEN NOT MATCHED THEN INSERT"
                + " (lock_key, namespace, name, owner, token, acquired_at, expires_at) VALUES (s.k, s.ns, s.nm,"
                + " NULL, " + tokenSeed() + ", NULL, CURRENT_TIMESTAMP(6))";
    }

    @Override
    String returningToken(UnaryOperator<String> update, String next) {
        return "SELECT token FROM FINAL TABLE (" + update.apply(next) + ")";
    }

    @Override
    String upsertReader(String table) {
        return "MERGE INTO " + table + "_readers (lock_key, owner, expires_at) KEY (lock_key, owner) VALUES (?, ?, "
                + nowPlusMicros() + ")";
    }

    @Override
    String addReadersColumn(String table) {
        return "ALTER TABLE " + table + " ADD COLUMN readers_until TIMESTAMP(6) WITH TIME ZONE";
    }

    @Override
    String addClaimColumns(String table) {
        return "ALTER TABLE " + table + " ADD COLUMN (claimant VARCHAR(64), claim_token BIGINT,"
                + " claim_until TIMESTAMP(6) WITH TIME ZONE)";
    }

    @Override
    String forUpdate(Duration wait) {
        // Always NOWAIT: an H2 lock wait swallows the waiting thread's interrupt status, so waiters poll with the
        // provider's backoff instead (H2 runs in-process, where a poll costs no network).
        return " FOR UPDATE NOWAIT";
    }

    @Override
    boolean locksBlock() {
        return false;
    }

    @Override
    String drawTokenSql(String table) {
        return "VALUES " + drawTokenExpression(table);
    }

    @Override
    String drawTokenExpression(String table) {
        return "NEXT VALUE FOR " + table + "_token";
    }

    @Override
    String drawTokenSelectExpression(String table) {
        return drawTokenExpression(table);
    }

    @Override
    String connectionId() {
        return "SESSION_ID()";
    }

    @Override
    String terminateQuery() {
        // needs ADMIN rights; false if the session is gone already
        return "SELECT ABORT_SESSION(?)";
    }

    @Override
    boolean isLockNotAvailable(SQLException e) {
        return hasCode(e, LOCK_TIMEOUT_1, DEADLOCK_1);
    }

    @Override
    boolean maySwallowInterrupt(SQLException e) {
        // H2 ends a row-lock wait before the session's lock timeout only when the waiting thread is interrupted,
        // and clears its interrupt status on the way: a timeout that came early was an interrupt.
        return hasCode(e, LOCK_TIMEOUT_1);
    }

    @Override
    String lockTimeoutQuery() {
        return "VALUES LOCK_TIMEOUT()";
    }

    @Override
    boolean isMissingTable(SQLException e) {
        return hasCode(e, TABLE_OR_VIEW_NOT_FOUND, TABLE_OR_VIEW_NOT_FOUND_DATABASE_EMPTY,
                TABLE_OR_VIEW_NOT_FOUND_WITH_CANDIDATES);
    }

    @Override
    boolean isMissingColumn(SQLException e) {
        return hasCode(e, COLUMN_NOT_FOUND_1);
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
        return hasCode(e, DUPLICATE_KEY_1);
    }
}
