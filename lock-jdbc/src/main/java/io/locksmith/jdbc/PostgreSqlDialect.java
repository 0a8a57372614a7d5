package io.locksmith.jdbc;

import io.locksmith.spi.LockStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.UnaryOperator;

/** The SQL of PostgreSQL 9.5+. */
final class PostgreSqlDialect extends Dialect {

    /**
     * A select-list item that commits the statement's transaction without waiting for its WAL to reach disk
     * ({@code SET LOCAL synchronous_commit = off}, which a function may do inside the implicit transaction of an
     * autocommit statement). For the statements whose loss in a database crash loses nothing that was promised:
     * a release (the row then looks held until its lease ends, as after a release whose answer was lost), a claim
     * and its end (a claim is a hint to the others' turns). Grants, renewals and tokens stay synchronous, and
     * the WAL is written in order, so a later grant's commit makes every release before it durable too: after a
     * crash no lock is free that a grant since has taken. It takes one disk flush off every hand-off's path and
     * off the uncontended cycle.
     */
    private static final String NOT_DURABLE = "set_config('synchronous_commit', 'off', true)";
    /** What a release's update returns for {@link #RELEASE_NOTIFY}: whether waiters may sleep, and the claimant. */
    private static final String RELEASED_RETURNING = " RETURNING lock_key, claimant IS NOT NULL OR claim_until > now()"
            + " AS waited, CASE WHEN claim_until > now() THEN claimant END AS claimant";
    /** A release's notification, binding the channel: see {@link #releaseSql}. */
    private static final String RELEASE_NOTIFY = "CASE WHEN waited THEN pg_notify(?, encode(lock_key, 'hex') || "
            + "COALESCE(' ' || claimant, '')) END";

    PostgreSqlDialect() {
        super("PostgreSQL", "postgresql");
    }

    @Override
    String now() {
        // a single statement in autocommit is its own transaction, so now() is the statement's time
        return "now()";
    }

    @Override
    String nowPlusMicros() {
        return "now() + ? * INTERVAL '1 microsecond'";
    }

    @Override
    String nowMinusMicros() {
        return "now() - ? * INTERVAL '1 microsecond'";
    }

    @Override
    String tokenSeed() {
        return "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint";
    }

    @Override
    String microsUntil(String column) {
        return "(extract(epoch FROM " + column + " - now()) * 1000000)::bigint";
    }

    @Override
    String insertIfAbsent(String table) {
        return "INSERT INTO " + table + " (lock_key, namespace, name, owner, token, acquired_at, expires_at)"
                + " VALUES (?, ?, ?, NULL, " + tokenSeed() + ", NULL, now()) ON CONFLICT (lock_key) DO NOTHING";
    }

    @Override
    String returningToken(UnaryOperator<String> update, String next) {
        return update.apply(next) + " RETURNING token";
    }

    /**
     * The compare-and-set and, when it took nothing, the row it found, in one statement: the second SELECT runs
     * only if the update returned nothing, and reads the row in the statement's snapshot. A row changed by a
     * concurrent commit between the snapshot and the update (which then judges the newest version) is read as it
     * was just before: a waiter's place in line and its "changed hands" check then count from one grant earlier,
     * and a refusal for readers that came meanwhile is seen at the next attempt.
     */
    @Override
    String acquireOrReadSql(String table, boolean readers) {
        return "WITH taken AS (" + acquireSql(table, readers) + ") SELECT token, -1 FROM taken UNION ALL SELECT token,"
                + (readers ? " CASE WHEN readers_until > now() THEN 1 ELSE 0 END" : " 0") + " FROM " + table
                + " WHERE lock_key = ? AND NOT EXISTS (SELECT 1 FROM taken)";
    }

    /**
     * The compare-and-set as a waiter's look: where it takes nothing, the row as {@code look} reads it, in the
     * statement's snapshot (a release committed since then shows as held: the waiter looks again when woken, or at
     * once where the row shows free).
     */
    @Override
    String acquireOrLookSql(String table, boolean readers, String look) {
        return "WITH taken AS (" + acquireSql(table, readers) + ") SELECT token, -1, 0, 0, 0 FROM taken UNION ALL "
                + look + " AND NOT EXISTS (SELECT 1 FROM taken)";
    }

    /**
     * The take, the claim where it took nothing, and the row as {@code look} read it, in one statement: the claim's
     * update waits for the take's ({@code NOT EXISTS} reads the take's result), and skips the row the take updated.
     * The claim reports the holder's lease left from the row as it found it after any commit since the snapshot,
     * as {@link #claimSql} does; and where the statement takes nothing its commit does not wait for the disk.
     */
    @Override
    String takeOrClaimSql(String table, boolean readers, String look) {
        return "WITH taken AS (" + acquireSql(table, readers) + "), claimed AS (" + claimUpdate(table)
                + " AND NOT EXISTS (SELECT 1 FROM taken) AND (claimant IS NULL OR claimant <> ? OR claim_until <= "
                + nowPlusMicros() + ") RETURNING " + leaseLeftAsClaimed()
                + ") SELECT token, -1, 0, 0, 0, 0, 0 FROM taken UNION ALL SELECT l.*,"
                + " (SELECT count(*) FROM claimed), COALESCE((SELECT lease_left FROM claimed), 0) FROM (" + look
                + ") l WHERE CASE WHEN EXISTS (SELECT 1 FROM taken) THEN false ELSE " + NOT_DURABLE
                + " IS NOT NULL END";
    }

    /**
     * The take-over, and a notification without a claimant where the row had waiters lately ({@code claim_until}
     * has not passed) but no live claim is left: the waiters sleep until a release, and must look again to claim
     * the next turn while the lock passes between one provider's runs. A take-over that takes nothing releases the
     * previous run's hold in the same statement, as {@link #releaseSql} would, notification and all, and answers
     * {@link LockTable#RELEASED_INSTEAD}: the waiter whose turn it is hears one round trip sooner (see
     * {@link #takeOverReleases}). The update that releases runs only where the take-over took nothing, so that no
     * row is written twice.
     */
    @Override
    String takeOverSql(String table, boolean refuseReaders, boolean pastClaim) {
        return "WITH taken AS (" + acquireUpdate(table, "token + 1", refuseReaders, true, pastClaim)
                + " RETURNING token, lock_key, claimant IS NULL AND claim_until > now() AS unclaimed), released AS ("
                + releaseUpdate(table) + " AND NOT EXISTS (SELECT 1 FROM taken)" + RELEASED_RETURNING
                + ") SELECT token, CASE WHEN unclaimed THEN pg_notify(?, encode(lock_key, 'hex')) END, NULL FROM taken"
                + " UNION ALL SELECT " + LockTable.RELEASED_INSTEAD + ", " + RELEASE_NOTIFY + ", " + NOT_DURABLE
                + " FROM released";
    }

    @Override
    boolean takeOverReleases() {
        return true;
    }

    @Override
    String upsertReader(String table) {
        return "INSERT INTO " + table + "_readers (lock_key, owner, expires_at) VALUES (?, ?, " + nowPlusMicros()
                + ") ON CONFLICT (lock_key, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at";
    }

    /**
     * The reader's row and its grant in one statement: the INSERT runs to completion whether or not the UPDATE
     * grants, and both commit together, so a writer that takes the lock's row after the grant counts this row, and
     * one that took it before makes the UPDATE grant nothing (the caller then deletes the row again).
     */
    @Override
    String upsertReaderThenReadAcquireSql(String table) {
        return "WITH reader AS (" + upsertReader(table) + " RETURNING 1) " + readAcquireSql(table);
    }

    /**
     * The reader's release, which wakes the lock's waiters when a writer holds the row (one taken past the
     * readers waits for them to leave) or a claim lives or lived within its lease; an uncontended read release
     * notifies nobody. The lock's row is read {@code FOR SHARE}, which sees its latest version and keeps a writer's
     * compare-and-set waiting until this release commits: a writer that takes the row after this read counts the
     * readers after the deletion, and one that took it before is seen here and woken.
     */
    @Override
    String releaseReaderSql(String table) {
        return "WITH gone AS (" + super.releaseReaderSql(table) + " RETURNING lock_key) SELECT CASE WHEN"
                + " (m.owner IS NOT NULL AND m.expires_at > now()) OR m.claimant IS NOT NULL OR m.claim_until > now()"
                + " THEN pg_notify(?, encode(m.lock_key, 'hex')) END FROM gone JOIN " + table + " m ON m.lock_key ="
                + " gone.lock_key FOR SHARE OF m";
    }

    @Override
    String addReadersColumn(String table) {
        return "ALTER TABLE " + table + " ADD COLUMN readers_until TIMESTAMPTZ(6)";
    }

    /**
     * The claim, and in the same statement how long the waiter may trust notifications alone, which do not come
     * for everything: a lease that ends or a forced release notifies nobody, nor does a claimant's grant. So the
     * answer tells the holder's lease left; or, where the row is free but refused to this run because another
     * run's claim has had its turns, that claim's life left, since the claimant should take the lock within it;
     * or 0 where the row is free otherwise (released since the compare-and-set, or this run's claim took the place
     * of a younger one), to look again at once. The outer query reads the row as it was in the statement's
     * snapshot; where the run claimed, the claim's own RETURNING tells instead, from the row as the claim found it
     * after any commit since the snapshot: a release committed in between must not be answered with the lease left
     * of the hold it ended, for the release's notification may have come before this run subscribed, and the run
     * would sleep for a third of its lease on a free row reserved for it.
     */
    @Override
    String claimSql(String table) {
        return "WITH claimed AS (" + claimUpdate(table) + " RETURNING " + leaseLeftAsClaimed() + ") SELECT EXISTS"
                + " (SELECT 1 FROM claimed), COALESCE((SELECT lease_left FROM claimed),"
                + " CASE WHEN owner IS NOT NULL AND expires_at > now() THEN " + microsUntil("expires_at")
                + " WHEN claimant IS NOT NULL AND claimant <> ? AND claim_until > now() AND token - claim_token >= "
                + LockStore.GRANTS_PAST_A_CLAIM + " AND NOT EXISTS (SELECT 1 FROM claimed) THEN "
                + microsUntil("claim_until") + " ELSE 0 END), " + NOT_DURABLE + " FROM " + table
                + " WHERE lock_key = ?";
    }

    /**
     * The holder's lease left in microseconds, 0 where none lives, as a claim's {@code RETURNING} reads it: from the
     * row as the claim found it after any commit since the statement's snapshot.
     */
    private String leaseLeftAsClaimed() {
        return "CASE WHEN owner IS NOT NULL AND expires_at > now() THEN " + microsUntil("expires_at")
                + " ELSE 0 END AS lease_left";
    }

    @Override
    boolean claimTellsLeaseLeft() {
        return true;
    }

    /**
     * The release, which notifies the row's waiters in the same statement when a claim lives or lived within its
     * lease. Every waiter of another provider claims, or was answered busy while a claim lived; a claim ends at
     * its claimant's grant, but its {@code claim_until} stays, so that the claimant's own release still wakes the
     * waiters that were answered busy beside it. A release with no claim in sight has nobody to wake: the
     * uncontended release never calls pg_notify, whose commit takes a database-wide lock that serializes every
     * notifying transaction. It does not wait for the disk ({@link #NOT_DURABLE}).
     *
     * <p>While a claim lives, the payload names its claimant after the key and a space: the next turn across
     * providers is the claimant's, and the other waiters, which could only race the holder's own threads for the
     * turns before it, are left asleep ({@link ReleaseListener}); the claimant's grant ends the claim, and the
     * release after it wakes them all to claim again.
     */
    @Override
    String releaseSql(String table) {
        return "WITH released AS (" + releaseUpdate(table) + RELEASED_RETURNING + ") SELECT " + RELEASE_NOTIFY + ", "
                + NOT_DURABLE + " FROM released";
    }

    /**
     * Ending a claim wakes the row's waiters, one of which claims in its place: the lock may be free and refused
     * to them only for the claim that just ended.
     */
    @Override
    String dropClaimSql(String table) {
        return "WITH dropped AS (" + dropClaimUpdate(table) + " RETURNING lock_key) SELECT pg_notify(?,"
                + " encode(lock_key, 'hex')), " + NOT_DURABLE + " FROM dropped";
    }

    @Override
    boolean notifiesReleases() {
        return true;
    }

    @Override
    boolean boundsByNetworkTimeout() {
        // pgjdbc times a statement with a task on its shared timer, whose thread it wakes for each one: about 50 µs
        // of client CPU and two context switches per lock cycle, a third of the cycle's client CPU
        return true;
    }

    @Override
    String addClaimColumns(String table) {
        // nullable columns without a default: a change of the catalog only, whatever the table's size
        return "ALTER TABLE " + table + " ADD COLUMN claimant VARCHAR(64), ADD COLUMN claim_token BIGINT,"
                + " ADD COLUMN claim_until TIMESTAMPTZ(6)";
    }

    @Override
    String ddlLockWaitSetting(Duration wait) {
        // ALTER TABLE queues for an exclusive lock, and every statement on the table queues behind it meanwhile
        return "SET LOCAL lock_timeout = '" + Math.max(1, wait.toMillis()) + "ms'";
    }

    @Override
    String lockWaitSetting(Duration wait) {
        // SET LOCAL ends with the transaction, so the pooled connection keeps its own setting
        return wait.toMillis() <= 0 ? null : "SET LOCAL lock_timeout = '" + wait.toMillis() + "ms'";
    }

    @Override
    String lockWaitQuery() {
        // SET LOCAL as a function (is_local = true), so that it can share the locking read's round trip: pgjdbc
        // sends the statements of one prepared text together and reads their results in one go
        return "SELECT set_config('lock_timeout', ?, true)";
    }

    @Override
    String lockWaitValue(Duration wait) {
        return wait.toMillis() + "ms";
    }

    @Override
    String forUpdate(Duration wait) {
        return wait.toMillis() <= 0 ? " FOR UPDATE NOWAIT" : " FOR UPDATE";
    }

    @Override
    String drawTokenSql(String table) {
        // nextval() WAL-logs the sequence ahead of the values it hands out and then takes a transaction id,
        // so the autocommit's commit flushes that record before the value is returned
        return "SELECT " + drawTokenSelectExpression(table);
    }

    @Override
    String drawTokenSelectExpression(String table) {
        return "nextval('" + table + "_token')";
    }

    @Override
    String rowLockHolderSql(String table) {
        // Nothing is recorded in the row: PostgreSQL shows no session another one's uncommitted writes. A row
        // lock is the locking transaction's id in the row's xmax, and a transaction holds the lock on its own id
        // until it ends: an xmax whose transaction-id lock is granted names the backend holding the row now; an
        // xmax left by an ended transaction matches nothing.
        return "SELECT l.pid FROM " + table + " t JOIN pg_locks l ON l.locktype = 'transactionid'"
                + " AND l.transactionid = t.xmax AND l.mode = 'ExclusiveLock' AND l.granted WHERE t.lock_key = ?";
    }

    @Override
    String terminateQuery() {
        // false, with a warning, if the backend is gone already
        return "SELECT pg_terminate_backend(?)";
    }

    @Override
    boolean isLockNotAvailable(SQLException e) {
        // lock_not_available (lock_timeout, NOWAIT), deadlock_detected
        return hasState(e, "55P03", "40P01");
    }

    @Override
    boolean isMissingTable(SQLException e) {
        return hasState(e, "42P01");
    }

    @Override
    boolean isMissingColumn(SQLException e) {
        return hasState(e, "42703");
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
        return hasState(e, "23505");
    }
}
