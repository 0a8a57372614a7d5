package io.locksmith.jdbc;

import io.locksmith.spi.LockStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;

/**
 * The SQL that differs between databases, and what the store must know of each database (its isolation level,
 * error codes, how it returns timestamps); {@link LockTable} runs the statements. Every time comparison uses the
 * database's clock (UTC where the database has zone-less timestamps), never the client's, so clients whose clocks
 * disagree still agree on which leases ended.
 *
 * <p>Lease arithmetic takes the lease as a bind parameter in microseconds. A new row starts its token at the
 * database clock's Unix time in microseconds, so a row deleted by {@link JdbcLockProviders#deleteIdleRows} and
 * created again later starts above every token the old row handed out: that row would have needed more than one
 * acquisition per microsecond over its life to get ahead of the clock, which no database sustains on one row.
 * The one assumption is that the database clock does not go back by more than the rows' idle age.
 */
abstract class Dialect {

    static final Dialect MYSQL = new MySqlDialect("MySQL", false);
    static final Dialect MARIADB = new MySqlDialect("MariaDB", true);
    static final Dialect POSTGRESQL = new PostgreSqlDialect();
    static final Dialect H2 = new H2Dialect();

    private final String displayName;
    private final String ddlResource;

    Dialect(String displayName, String ddlResource) {
        this.displayName = displayName;
        this.ddlResource = ddlResource;
    }

    /** The dialect of the database behind {@code connection}, from its metadata. */
    static Dialect detect(Connection connection) throws SQLException {
        DatabaseMetaData metaData = connection.getMetaData();
        String product = metaData.getDatabaseProductName();
        String version = metaData.getDatabaseProductVersion();
        String both = (product + " " + version).toLowerCase(Locale.ROOT);
        if (both.contains("mariadb")) {
            return MARIADB; // MySQL Connector/J reports MariaDB servers as "MySQL 5.5.5-10.x-MariaDB"
        }
        if (both.contains("mysql")) {
            return MYSQL;
        }
        if (both.contains("postgresql")) {
            return POSTGRESQL;
        }
        if (product != null && product.equalsIgnoreCase("H2")) {
            return H2;
        }
        throw new SQLException("Unsupported database '" + product + " " + version
                + "': Locksmith's JDBC backend supports MySQL, MariaDB, PostgreSQL and H2");
    }

    @Override
    public String toString() {
        return displayName;
    }

    /**
     * The transaction isolation the lock statements run at: the database's own default, REPEATABLE READ on MySQL
     * and MariaDB (where a lower level breaks statement-based binary logging), READ COMMITTED elsewhere. No level
     * decides exclusion, which rests on single-row updates and row locks; but a stricter one turns contention into
     * errors (PostgreSQL fails a concurrent update of the same row at REPEATABLE READ and above) or makes plain
     * reads wait for holders' row locks (MySQL and MariaDB at SERIALIZABLE).
     */
    int isolation() {
        return Connection.TRANSACTION_READ_COMMITTED;
    }

    // ---------------------------------------------------------------- DDL

    /** Where the DDL script of this dialect ships in the jar. */
    final String ddlResourcePath() {
        return "io/locksmith/jdbc/ddl/" + ddlResource + ".sql";
    }

    /** The DDL script shipped in the jar, with {@code ${table}} in place of the table name. */
    final String ddlScript() {
        String path = "ddl/" + ddlResource + ".sql";
        try (InputStream in = Dialect.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource io/locksmith/jdbc/" + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The DDL statements that create {@code table} and its token counter if missing. */
    final List<String> ddl(String table) {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : ddlScript().split("\n")) {
            String trimmed = line.strip();
            if (trimmed.isEmpty() || trimmed.startsWith("--")) {
                continue;
            }
            current.append(line).append('\n');
            if (trimmed.endsWith(";")) {
                String statement = current.toString().strip();
                statements.add(statement.substring(0, statement.length() - 1).replace("${table}", table));
                current.setLength(0);
            }
        }
        return statements;
    }

    // ---------------------------------------------------------------- clock

    /** The database's current time. */
    abstract String now();

    /** The database's current time plus the bind parameter in microseconds. */
    abstract String nowPlusMicros();

    /** The database's current time minus the bind parameter in microseconds. */
    abstract String nowMinusMicros();

    /** The first token of a new row: the database clock's Unix time in microseconds. */
    abstract String tokenSeed();

    /** Whole microseconds from the database clock's now until the timestamp {@code column}; negative if past. */
    abstract String microsUntil(String column);

    /** Reads a timestamp column this dialect wrote with {@link #now()}. */
    Instant instant(ResultSet row, int column) throws SQLException {
        OffsetDateTime at = row.getObject(column, OffsetDateTime.class);
        return at == null ? null : at.toInstant();
    }

    // ---------------------------------------------------------------- lease mode

    /**
     * Inserts the free row of a name unless it exists, without a duplicate-key error; binds key, namespace,
     * name. Affects 1 row if it inserted, 0 if the row existed.
     */
    abstract String insertIfAbsent(String table);

    /**
     * The compare-and-set that takes a row that is free or expired, and increments its token; binds owner, lease
     * micros, owner, key, owner. A row held by anyone, the same owner id included, is busy: an owner id names one
     * acquisition run, which never sends another attempt after one that may have been applied, so a second take of
     * the same owner id can only be a late or repeated statement, and must not take the lock again.
     *
     * <p>A free row is refused too while another run's live claim (see {@link #claimUpdate}) has seen
     * {@value LockStore#GRANTS_PAST_A_CLAIM} grants: the row's token grows by one with every grant, so the grants
     * since the claim are {@code token - claim_token}. The claimant's own grant ends its claim, and so does any
     * grant after the claim lapsed. Only {@code claimant} is cleared: {@code claim_token} counts only beside a
     * claimant, {@code claim_until} then still tells that a claim lived lately (see
     * {@link PostgreSqlDialect#releaseSql}), and leaving both alone keeps the SET list free of assignments that
     * read each other, which MySQL evaluates left to right and the others all at once.
     */
    final String acquireUpdate(String table, String tokenExpression, boolean refuseReaders) {
        return acquireUpdate(table, tokenExpression, refuseReaders, false, false);
    }

    /**
     * {@link #acquireUpdate}, or with {@code handed} the take-over ({@link LockStore#takeOver}): the row also counts
     * as free where the previous run of the same provider, the owner id bound after the key, holds it, so that the
     * update replaces that hold; binds owner, lease micros, owner, key, previous owner, owner. With
     * {@code pastClaim} (only with {@code handed}) it takes the row whatever the claim: see
     * {@link #takeOverSql}.
     */
    final String acquireUpdate(String table, String tokenExpression, boolean refuseReaders, boolean handed,
            boolean pastClaim) {
        return "UPDATE " + table + " SET owner = ?, token = " + tokenExpression + ", acquired_at = " + now()
                + ", expires_at = " + nowPlusMicros() + ", claimant = CASE WHEN claimant = ? OR claim_until <= "
                + now() + " THEN NULL ELSE claimant END WHERE lock_key = ? AND (owner IS NULL OR expires_at <= "
                + now() + (handed ? " OR owner = ?" : "") + ") AND (" + (pastClaim ? "claimant = ? OR 1 = 1" : "claimant"
                + " IS NULL OR claimant = ? OR claim_until <= " + now() + " OR token - claim_token < "
                + LockStore.GRANTS_PAST_A_CLAIM) + ")"
                + (refuseReaders ? " AND (readers_until IS NULL OR readers_until <= " + now() + ")" : "");
    }

    /**
     * The take-over statement, binding as {@link #acquireUpdate} with {@code handed}: as {@link #acquireSql}, the
     * new token or nothing; where {@link #notifiesReleases}, it also wakes the row's waiters when it grants while no
     * claim lives but one lived lately (a waiter then sleeps until a release, and the lock, handed from run to run,
     * would never be released), binding the channel last.
     *
     * <p>With {@code pastClaim} the take-over ignores the claim: for a previous run that was itself the claimant
     * when it was granted, whose grant ended that claim, so that any claim living now was made during its hold.
     * Such a claim lets one grant pass, as on Redis, however old its claimant's ticket: the claimant's provider
     * hands the lock to its own next thread once before the turn passes, instead of that thread waiting a whole
     * rotation again.
     */
    String takeOverSql(String table, boolean refuseReaders, boolean pastClaim) {
        return returningToken(next -> acquireUpdate(table, next, refuseReaders, true, pastClaim), "token + 1");
    }

    /**
     * Whether {@link #takeOverSql} also releases the previous run's hold when it takes nothing, answering
     * {@link LockTable#RELEASED_INSTEAD}; it then binds, after the take-over's parameters, key, previous owner,
     * channel, channel. Elsewhere the store releases with a statement of its own.
     */
    boolean takeOverReleases() {
        return false;
    }

    /**
     * The statement that claims the next turn of a row for a waiting run, or refreshes the run's own live claim;
     * binds owner, ticket, lease micros, owner, key, owner, ticket. The run's ticket is the row's token when the run
     * first found the lock busy ({@link Long#MAX_VALUE} until it knows it): it takes the row where no other run's
     * claim lives, or where the live claim is younger than its ticket, so the waiter that has waited longest
     * (by grants, on the database's own count) wins the claim from any later one, and affects one row if the run
     * holds the claim afterwards. A new claim records the older of the ticket and the row's token, so that
     * {@link #acquireUpdate} can count the grants since the claimant began to wait; a refresh keeps it, or the
     * claimant's own polling would give the others their turns again. {@code claim_token} is assigned first, while
     * {@code claimant} and {@code claim_until} still hold their old values on MySQL too.
     */
    final String claimUpdate(String table) {
        return "UPDATE " + table + " SET claim_token = CASE WHEN claimant = ? AND claim_until > " + now()
                + " THEN claim_token ELSE LEAST(?, token) END, claim_until = " + nowPlusMicros() + ", claimant = ?"
                + " WHERE lock_key = ? AND (claimant IS NULL OR claimant = ? OR claim_until <= " + now()
                + " OR claim_token > ?)";
    }

    /**
     * The claim statement, binding as {@link #claimUpdate}: the update itself, decided by its count, or, where
     * {@link #claimTellsLeaseLeft}, a query whose one row says whether the run holds the claim and within how many
     * microseconds the waiter should look again, binding the owner and the key once more.
     */
    String claimSql(String table) {
        return claimUpdate(table);
    }

    /**
     * Whether lease-mode statements, which wait for nothing but the row's other short statements, are bounded by
     * the connection's network timeout alone rather than a query timeout as well: where the driver's query timeout
     * costs more than the statement's own client work (pgjdbc wakes its timer thread for every statement it
     * times).
     */
    boolean boundsByNetworkTimeout() {
        return false;
    }

    /** Whether {@link #claimSql} is a query that also tells when to look again. */
    boolean claimTellsLeaseLeft() {
        return false;
    }

    /**
     * The release: frees the row where it is still the hold's and its lease has not ended (an expired hold was no
     * longer guaranteed, and its owner must hear so); binds key, owner.
     */
    final String releaseUpdate(String table) {
        return "UPDATE " + table + " SET owner = NULL, expires_at = " + now() + " WHERE lock_key = ? AND owner = ?"
                + " AND expires_at > " + now();
    }

    /**
     * The release statement, binding as {@link #releaseUpdate}: the update itself, decided by its count, or, where
     * {@link #notifiesReleases}, a query with one row if it released, which also wakes the row's waiters, binding
     * the channel last.
     */
    String releaseSql(String table) {
        return releaseUpdate(table);
    }

    /** The statement that ends a run's claim; binds key, owner (and the channel, where it notifies). */
    final String dropClaimUpdate(String table) {
        return "UPDATE " + table + " SET claimant = NULL WHERE lock_key = ? AND claimant = ?";
    }

    /** The statement {@link #dropClaimUpdate}, or where {@link #notifiesReleases} a query that also notifies. */
    String dropClaimSql(String table) {
        return dropClaimUpdate(table);
    }

    /**
     * Whether the release statements notify the row's waiters through the database ({@link #releaseSql},
     * {@link #dropClaimSql}), on the channel {@link LeaseStore} listens on.
     */
    boolean notifiesReleases() {
        return false;
    }

    /**
     * The statement that adds the claim columns to a lock table made from the DDL of an earlier version, which
     * lacks them.
     */
    abstract String addClaimColumns(String table);

    /**
     * The statement that bounds how long the DDL statement after it in the same transaction waits for other
     * sessions' locks on the table, or null if the statement's query timeout bounds it already.
     */
    String ddlLockWaitSetting(Duration wait) {
        return null;
    }

    /** The statement that undoes {@link #ddlLockWaitSetting} before the connection goes back to its pool, or null. */
    String resetDdlLockWait() {
        return null;
    }

    /**
     * The acquisition statement, binding as {@link #acquireUpdate}: a query whose one row is the new token, or,
     * where {@link #tokenIsGeneratedKey}, an update whose generated key is the new token.
     *
     * @param refuseReaders whether the statement also refuses a row whose read holds may live (its
     *     {@code readers_until} has not passed): the writer's first try on a table that keeps read holds. A
     *     writer refused for readers alone takes the row past them and then counts them (see {@link LeaseStore}).
     */
    final String acquireSql(String table, boolean refuseReaders) {
        return returningToken(next -> acquireUpdate(table, next, refuseReaders), "token + 1");
    }

    /**
     * The acquisition of {@link #acquireSql} as a query that, when it takes nothing, answers the row as it found
     * it: one row of (new token, -1) if it took the row, of (the row's token, 1 if read holds may live else 0) if
     * it did not, none if the row is missing; binds as {@link #acquireSql}, then the key once more. It saves a
     * waiter's refused attempt the read of {@link LockTable#readToken}. Null where the database cannot (the
     * acquisition is an update there).
     *
     * @param readers whether the table keeps read holds ({@code readers_until} exists)
     */
    String acquireOrReadSql(String table, boolean readers) {
        return null;
    }

    /**
     * A waiter's attempt in one statement where the database can: the acquisition of {@link #acquireSql}, and if
     * it takes nothing, the row as the query {@code look} (ending in its WHERE clause) reads it. One row of (new
     * token, -1, 0, 0, 0) if it took the row, of {@code look}'s columns if it did not, none if the row is missing;
     * binds as {@link #acquireSql}, then as {@code look}. Null where the database cannot (the default): the waiter
     * reads first and takes only a row it found free.
     */
    String acquireOrLookSql(String table, boolean readers, String look) {
        return null;
    }

    /**
     * A waiting run's attempt in one statement where the database can: {@link #acquireOrLookSql}, and where it
     * takes nothing, the claim of {@link #claimUpdate} in the same statement wherever the claim statement would
     * claim or refresh (a run's own claim only past a third of its lease). One row of (new token, -1, 0, 0, 0, 0,
     * 0) if it took the row, of {@code look}'s columns (read before the claim), whether it claimed, and the
     * holder's lease left as the claim found the row, if it did not; none if the row is missing. Binds as
     * {@link #acquireSql}, as {@link #claimUpdate}, the owner and two thirds of the lease in microseconds, then as
     * {@code look}. Null where the database cannot (the default): the waiter claims with a statement of its own.
     */
    String takeOrClaimSql(String table, boolean readers, String look) {
        return null;
    }

    /**
     * The update {@code update} writes around the SQL expression of the row's new token, made into a statement
     * that returns that token: see {@link #tokenIsGeneratedKey}.
     */
    abstract String returningToken(UnaryOperator<String> update, String next);

    // ---------------------------------------------------------------- read holds (lease mode)

    /**
     * A read hold's grant on the lock's row, after the hold's own row was written ({@link #upsertReader}): where no
     * writer holds the lock (or the one that does is {@code ownWrite}, for a downgrade) and no other run's claim
     * lives, pushes {@code readers_until} to at least the hold's lease end, ends the run's own claim, and returns
     * the row's token, which is the last write's; binds lease micros, lease micros, owner, key, ownWrite, owner. A
     * reader yields to every live claim of another run, writers' and readers' alike: a claim is made only while
     * a writer holds or waits.
     */
    final String readAcquireSql(String table) {
        return returningToken(next -> "UPDATE " + table + " SET token = " + next + ", readers_until = CASE WHEN"
                + " readers_until > " + nowPlusMicros() + " THEN readers_until ELSE " + nowPlusMicros() + " END,"
                + " claimant = CASE WHEN claimant = ? THEN NULL ELSE claimant END WHERE lock_key = ? AND ((owner = ?"
                + " AND expires_at > " + now() + ") OR ((owner IS NULL OR expires_at <= " + now() + ") AND"
                + " (claimant IS NULL OR claimant = ? OR claim_until <= " + now() + ")))", "token");
    }

    /** Writes a read hold's own row with its lease end, or refreshes it; binds key, owner, lease micros. */
    abstract String upsertReader(String table);

    /**
     * {@link #upsertReader} and {@link #readAcquireSql} in one statement, binding the one's parameters then the
     * other's, where the database runs both in one statement (they then commit together, which keeps the order
     * that matters: no grant without the reader's row); null where it cannot.
     */
    String upsertReaderThenReadAcquireSql(String table) {
        return null;
    }

    /**
     * Deletes a read hold's row where its lease has not ended, which is its release; binds key, owner (and the
     * channel where {@link #notifiesReleases}: the statement is then a query with one row if it released, which
     * also wakes the row's waiters if a writer holds, waits past the readers or has claimed).
     */
    String releaseReaderSql(String table) {
        return "DELETE FROM " + table + "_readers WHERE lock_key = ? AND owner = ? AND expires_at > " + now();
    }

    /**
     * The statement that adds what read holds need to a lock table made from the DDL of an earlier version: the
     * {@code readers_until} column (the readers' table is created by its own statement in {@link #ddl}).
     */
    abstract String addReadersColumn(String table);

    /**
     * Whether the token statements ({@link #acquireSql}, {@link #drawTokenSql}) are updates that return their
     * token as the generated key, with {@link #lastGeneratedKey} to read it where the driver does not; otherwise
     * they are queries whose one row is the token.
     */
    final boolean tokenIsGeneratedKey() {
        return lastGeneratedKey() != null;
    }

    /**
     * The query that reads the key the connection's last token statement generated, or null where token
     * statements return their token as a row; see {@link #tokenIsGeneratedKey}.
     */
    String lastGeneratedKey() {
        return null;
    }

    // ---------------------------------------------------------------- session mode

    /**
     * The statement that sets the lock wait of the next locking read ({@link LockTable#lockRow}) to {@code wait},
     * or null if none is needed.
     */
    String lockWaitSetting(Duration wait) {
        return null;
    }

    /**
     * A query that makes {@link #lockWaitSetting} part of the locking read's own statement text, sent with it in one
     * round trip, its one parameter {@link #lockWaitValue}; or null where the setting is a statement of its own.
     */
    String lockWaitQuery() {
        return null;
    }

    /** The parameter of {@link #lockWaitQuery} for a lock wait of {@code wait}. */
    String lockWaitValue(Duration wait) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no lock wait query");
    }

    /** The locking clause of the read that locks a row within {@code wait}, after {@link #lockWaitSetting}. */
    abstract String forUpdate(Duration wait);

    /**
     * Whether the locking read may block, so that it must run where an interrupt can cancel it. Not on H2, whose
     * reads never wait.
     */
    boolean locksBlock() {
        return true;
    }

    /** The statement that undoes {@link #lockWaitSetting} before the connection goes back to its pool, or null. */
    String resetSession() {
        return null;
    }

    /** A locking read that skips rows other transactions hold: for probing which session locks are held. */
    String skipLocked() {
        return " FOR UPDATE SKIP LOCKED";
    }

    /**
     * The statement that draws a session-mode fencing token from the table's counter, in autocommit (see
     * {@link #tokenIsGeneratedKey} for how it returns the token).
     */
    abstract String drawTokenSql(String table);

    /**
     * The token draw of {@link #drawTokenSql} as an expression of a {@code SELECT} that may select more, or null
     * where the draw is an update (MySQL, MariaDB): a writer of session mode then counts the read holds in the same
     * statement as it draws its token (see {@link LockTable#drawTokenCountingReaders}).
     */
    String drawTokenSelectExpression(String table) {
        return null;
    }

    /**
     * An SQL expression that draws a session-mode token from the table's counter inside another statement, where
     * row locks never wait ({@link #locksBlock} false) and claims count the tokens drawn since they were made (see
     * {@link LockTable#claimTurn}).
     */
    String drawTokenExpression(String table) {
        throw new UnsupportedOperationException(displayName + " session mode queues lock waits and keeps no claims");
    }

    /**
     * Deletes what earlier draws left in the token counter below the bound value, or null where the counter is a
     * sequence.
     */
    String trimTokensSql(String table) {
        return null;
    }

    /**
     * Whether session-mode holders record their hold (owner, token, start, and their connection's server id in
     * the table's {@code holder} column) in the row their transaction locked, where other sessions read it
     * uncommitted; otherwise nothing is recorded and {@link #rowLockHolderSql} finds the holder.
     */
    final boolean recordsHolder() {
        return connectionId() != null;
    }

    /**
     * The SQL expression of the current connection's server id, for the {@code holder} column; null where holders
     * record nothing (see {@link #recordsHolder}).
     */
    String connectionId() {
        return null;
    }

    /**
     * Where holders record nothing ({@link #recordsHolder}): the query for the server id of the connection whose
     * transaction holds the row lock of the bound key, with no row if none does.
     */
    String rowLockHolderSql(String table) {
        throw new UnsupportedOperationException(displayName + " records its holders");
    }

    /**
     * The statement that ends the server connection {@code connectionId}, with the id in the text, or null where
     * {@link #terminateQuery} ends it.
     */
    String killStatement(long connectionId) {
        return null;
    }

    /** The query that ends the server connection whose id it binds; see {@link #killStatement}. */
    String terminateQuery() {
        throw new UnsupportedOperationException(displayName + " kills connections by statement");
    }

    // ---------------------------------------------------------------- errors

    /** Whether {@code e} says the row lock was not available in time (timeout, NOWAIT, deadlock victim). */
    abstract boolean isLockNotAvailable(SQLException e);

    /**
     * Whether {@code e} may have ended a lock wait that an interrupt of the calling thread cut short in a database
     * that then clears the thread's interrupt status (H2, which runs in-process); if so, the wait was cut short
     * when it ended before {@link #lockTimeoutQuery} says. Other databases run elsewhere and never touch it.
     */
    boolean maySwallowInterrupt(SQLException e) {
        return false;
    }

    /** The query for the connection's lock timeout in milliseconds; see {@link #maySwallowInterrupt}. */
    String lockTimeoutQuery() {
        throw new UnsupportedOperationException(displayName + " never swallows interrupts");
    }

    /** Whether {@code e} says the lock table does not exist. */
    abstract boolean isMissingTable(SQLException e);

    /** Whether {@code e} says a column does not exist. */
    abstract boolean isMissingColumn(SQLException e);

    /** Whether {@code e} is a unique-key violation. */
    abstract boolean isDuplicateKey(SQLException e);

    /** Whether {@code e}, from ending a server connection, says the connection is gone already. */
    boolean isNoSuchConnection(SQLException e) {
        return false;
    }

    // ---------------------------------------------------------------- shared

    static long micros(Duration duration) {
        return Math.max(0, duration.toNanos() / 1000);
    }

    static boolean hasState(SQLException e, String... states) {
        for (SQLException s = e; s != null; s = s.getNextException()) {
            String state = s.getSQLState();
            for (String wanted : states) {
                if (wanted.equals(state)) {
                    return true;
                }
            }
            if (s.getNextException() == s) {
                break;
            }
        }
        return false;
    }

    static boolean hasCode(SQLException e, int... codes) {
        for (SQLException s = e; s != null; s = s.getNextException()) {
            for (int wanted : codes) {
                if (s.getErrorCode() == wanted) {
                    return true;
                }
            }
            if (s.getNextException() == s) {
                break;
            }
        }
        return false;
    }
}
