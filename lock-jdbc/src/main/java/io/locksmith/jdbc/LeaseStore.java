package io.locksmith.jdbc;

import io.locksmith.LockInfo;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Lease mode: one row per lock name with owner, expiry and fencing token; every operation is one short
 * autocommit statement, decided by its affected-row count.
 *
 * <p>Acquire is a compare-and-set {@code UPDATE … WHERE lock_key = ? AND (owner IS NULL OR expires_at <=
 * now)}: the database applies it atomically to the one row, so of two clients racing for a free lock exactly one
 * sees 1 affected row. Only when it affects nothing does the store read the row's token, which tells whether the
 * row is missing (and a waiter whether the lock changed hands since its last look); a missing row is inserted by an
 * insert-if-absent (INSERT IGNORE, ON CONFLICT DO NOTHING, MERGE) that never raises a duplicate-key error, and a new
 * row is free, so the compare-and-set is tried once more. "now" is always the database's clock, so exclusion does
 * not depend on the clients' clocks. No statement here locks a row for longer than itself, so no gap locks or lock
 * waits build up. A held row is busy even for its own owner id: an owner id names one acquisition run, which sends
 * no further attempt after one that may have been applied, so the same owner id arriving again is a late or
 * repeated statement and must not take the lock a second time.
 *
 * <p>The store's record of a run ({@link LeaseHold}) is the row's key, computed once per run, and the run's owner
 * id; the row itself is the hold, so the store keeps nothing else. Release clears the owner where the row is still
 * the hold's owner id's; the row stays, so the token keeps growing. Renewal extends a batch with one {@code UPDATE
 * … WHERE lock_key IN (…) AND ((lock_key = ? AND owner = ?) OR …)}: each row only for the owner id of its hold (the
 * IN list lets every database find the rows by their key), and reads back which rows it extended only when the
 * count falls short.
 *
 * <p><b>Turns across providers.</b> A provider hands a lock from thread to thread through its local gate, and the
 * other processes' waiters, which poll, would rarely find the row free. So the row keeps one claim to the next turn
 * ({@code claimant}, {@code claim_token}, {@code claim_until}): an attempt that finds the lock busy and will wait
 * claims it with a second statement (see {@link Dialect#claimUpdate}), and the compare-and-set itself refuses others
 * once {@value LockStore#GRANTS_PAST_A_CLAIM} grants have passed the claim (see {@link Dialect#acquireUpdate}); an
 * uncontended acquisition is still the one statement. Where the compare-and-set cannot read (not on PostgreSQL), a run
 * that has found the lock busy reads the row before it tries to take it, and the read tells what a claim statement
 * would do ({@link LockTable.ClaimState}), so that a waiter's look at a held row is one read that takes no row lock,
 * and a claimant writes its claim again only past a third of its lease. The claim goes to the waiter that has waited
 * longest: each run keeps, as its ticket, the row's token when it first found the lock busy, and a claim with an older
 * ticket takes the place of a younger one, so a waiter that keeps losing the race for a free claim (its backoff grown
 * long) wins it at its next look once no older waiter is left. A claim lives for the claimant's lease from its last
 * refresh, all on the database clock, and ends with the claimant's grant, its release or its abandon. Old tables get
 * the columns at the first use (see {@link LockTable}).
 *
 * <p><b>Wake-ups.</b> On PostgreSQL a release that has waiters notifies them in the same statement, and the
 * store's {@link ReleaseListener} runs the subscribed callbacks (while a claim lives, only the claimant's: each
 * attempt tells the listener as which owner id its callback's waiter asks, and a waiter that another's claim
 * refused looks again within {@link #UNCLAIMED_RECHECK}); a busy answer carries the holder's lease left,
 * so that a waiter looks again when the lease ends even though expiry and forced releases notify nobody. The
 * other databases cannot push: waiters poll with the provider's backoff.
 */
final class LeaseStore implements LockStore<LeaseStore.LeaseHold> {

    /** The longest PostgreSQL channel name (NAMEDATALEN - 1). */
    private static final int MAX_CHANNEL_LENGTH = 63;
    /**
     * How long a waiter sleeps at most, on PostgreSQL, while another run's claim lives: the releases before the
     * claimant's turn wake the claimant alone, so a claimant that died with its claim must not leave the others
     * asleep on a free lock until the holder's lease would end.
     */
    static final Duration UNCLAIMED_RECHECK = Duration.ofSeconds(1);

    private final LockTable table;
    private final String namespace;
    /** The PostgreSQL channel of this namespace's releases; see {@link #channel}. */
    private final String channel;
    /** Guards {@link #listener} and {@link #closed}. */
    private final ReentrantLock listenerLock = new ReentrantLock();
    /** Written under {@link #listenerLock}; read without it by the attempts, to tell it their owner id. */
    private volatile ReleaseListener listener;
    private boolean closed;

    LeaseStore(LockTable table, String namespace) {
        this.table = table;
        this.namespace = namespace;
        this.channel = channel(namespace);
    }

    /**
     * The channel releases in {@code namespace} are notified on: one per namespace, named after it and cut to the
     * longest channel name. Every notification carries its row's key, so two namespaces that share a channel after
     * the cut only wake each other's waiters for nothing.
     */
    static String channel(String namespace) {
        String channel = "locksmith." + namespace;
        return channel.length() <= MAX_CHANNEL_LENGTH ? channel : channel.substring(0, MAX_CHANNEL_LENGTH);
    }

    @Override
    public String address() {
        return table.address() + " [lease mode]";
    }

    @Override
    public LeaseHold newHold(String name, String owner) {
        return new LeaseHold(name, LockTable.key(namespace, name), owner, false, null);
    }

    /** Lease mode keeps read holds, on a table that has what they need (see {@link LockTable#readers}). */
    @Override
    public boolean supportsSharedHolds() {
        return true;
    }

    @Override
    public LeaseHold newSharedHold(String name, String owner, LeaseHold ownWrite) {
        return new LeaseHold(name, LockTable.key(namespace, name), owner, true,
                ownWrite == null ? null : ownWrite.owner);
    }

    @Override
    public Acquisition tryAcquire(LeaseHold hold, Duration lease, Duration wait, Runnable wakeUp) {
        long start = System.nanoTime();
        if (wakeUp != null) {
            ReleaseListener heard = listener;
            if (heard != null) {
                heard.waitingAs(wakeUp, hold.owner);
            }
        }
        Connection connection = null;
        try {
            try {
                connection = table.borrow(table.timeout());
            } catch (SQLException e) {
                if (Thread.currentThread().isInterrupted()) {
                    // an interrupt ended the wait for a pooled connection; nothing reached the database
                    return Acquisition.busy();
                }
                throw e;
            }
            if (hold.shared && !table.readers()) {
                throw new SQLException(table.readersMissing(), "42S02");
            }
            if (hold.pendingToken >= 0) {
                Acquisition pending = awaitReaders(connection, hold, lease, wakeUp);
                if (pending != null) {
                    return pending;
                }
            }
            long token;
            LockTable.RowState seen = null;
            Duration claimedNow = null;
            boolean claimTried = false;
            if (hold.shared) {
                // the reader's own row first, then the grant (one statement where the database allows)
                hold.mayHaveRow = true; // before the statement: one whose answer is lost may still have written
                token = table.upsertReaderThenReadAcquire(connection, hold.key, hold.owner, hold.ownWrite, lease);
            } else if (hold.ticket != Long.MAX_VALUE) {
                // a run that has found the lock busy looks before it takes: while the lock is held, and most looks
                // of a waiter find it held, the look is one read, which locks nothing and writes nothing; on
                // PostgreSQL the look and the take are one statement, so that a waiter woken by a release takes the
                // lock in one round trip (an update that finds the row held writes and keeps nothing either); there
                // a waiter's claim joins the same statement, so that a woken waiter that does not get the lock
                // claims the next turn in the same round trip
                LockTable.TakeOrClaim both = null;
                if (wakeUp != null && table.takesAndClaims()) {
                    hold.mayHaveClaimed = true; // before the statement: one whose answer is lost may have claimed
                    both = table.takeOrClaim(connection, hold.key, hold.owner, hold.ticket, lease);
                }
                LockTable.Take look = both != null ? null
                        : table.takeOrLook(connection, hold.key, hold.owner, hold.ticket, lease);
                if (both != null) {
                    token = both.token();
                    seen = both.row();
                    claimedNow = both.claimed();
                    claimTried = true;
                } else if (look != null) {
                    token = look.token();
                    seen = look.row();
                } else {
                    seen = table.readToken(connection, hold.key, hold.owner, hold.ticket, lease);
                    token = seen.held() ? -1 : table.compareAndSet(connection, hold.key, hold.owner, lease);
                }
            } else {
                LockTable.Take take = table.take(connection, hold.key, hold.owner, lease);
                token = take.token();
                seen = take.row();
            }
            // a refused run reads the row (unless the look or, on PostgreSQL, the compare-and-set's own statement
            // read it), which tells whether the row exists and, to a waiter, whether the lock changed hands since
            // its last look; the read also tells what a claim statement would do, so that a waiter sends one only
            // where it would claim, or refresh a claim past a third of its lease. A reader's run whose last
            // attempt claimed skips it: it found the row then, and rows in use are never deleted.
            long holderToken = -1;
            LockTable.RowState row = seen;
            if (token < 0 && (!hold.claimHeld || !hold.shared)) {
                if (row == null) {
                    row = table.readToken(connection, hold.key, hold.owner, hold.ticket, lease);
                }
                holderToken = row.token();
                if (holderToken < 0 && table.insertIfAbsent(connection, hold.key, namespace, hold.name) > 0) {
                    // a new row is free, unless another client took it first
                    token = take(connection, hold, lease);
                } else if (row.readersMayLive() && !hold.shared && !row.held()) {
                    Acquisition past = takePastReaders(connection, hold, lease, wakeUp);
                    if (past != null) {
                        return past;
                    }
                }
            }
            if (token >= 0) {
                return Acquisition.acquired(token);
            }
            if (hold.shared) {
                table.deleteReader(connection, hold.key, hold.owner);
                hold.mayHaveRow = false;
            }
            if (wakeUp == null) {
                return Acquisition.busy(); // the caller does not wait, so it claims no turn
            }
            if (hold.ticket == Long.MAX_VALUE && holderToken >= 0) {
                hold.ticket = holderToken; // the run's place in line: the grants it has seen pass count from here
            }
            if (claimedNow != null) {
                hold.claimHeld = true;
                return Acquisition.claimed(claimedNow, holderToken);
            }
            switch (row == null || holderToken < 0 ? LockTable.ClaimState.UNKNOWN : row.claim()) {
                case OWN -> {
                    hold.claimHeld = true;
                    return Acquisition.claimed(row.retryAfter(), holderToken);
                }
                case OTHERS -> {
                    hold.claimHeld = false;
                    return Acquisition.busy(unclaimed(row.retryAfter()), holderToken);
                }
                default -> {
                    // not read, or a claim statement would claim or refresh: it decides
                    if (claimTried && holderToken >= 0) {
                        // the attempt's own claim was refused by a claim committed since the row was read
                        hold.claimHeld = false;
                        return Acquisition.busy(unclaimed(row.retryAfter()), holderToken);
                    }
                }
            }
            hold.mayHaveClaimed = true; // before the statement: one whose answer is lost may still have claimed
            hold.claimHeld = false;
            LockTable.Claim claim = table.claim(connection, hold.key, hold.owner, hold.ticket, lease);
            hold.claimHeld = claim.held();
            if (claim.held()) {
                return holderToken < 0 ? Acquisition.claimed(claim.retryAfter())
                        : Acquisition.claimed(claim.retryAfter(), holderToken);
            }
            return holderToken < 0 ? Acquisition.busy(unclaimed(claim.retryAfter()))
                    : Acquisition.busy(unclaimed(claim.retryAfter()), holderToken);
        } catch (SQLException | RuntimeException e) {
            table.restoreSwallowedInterrupt(connection, e, start);
            throw table.failure("acquiring '" + hold.name + "'", start, e);
        } finally {
            if (connection != null) {
                table.giveBack(connection);
            }
        }
    }

    /**
     * The time a waiter that another run's claim refused may sleep: where releases notify, at most
     * {@link #UNCLAIMED_RECHECK}, since they wake the claimant alone (see {@link PostgreSqlDialect#releaseSql}).
     */
    private Duration unclaimed(Duration retryAfter) {
        Dialect dialect = table.dialect();
        return retryAfter != null && dialect != null && dialect.notifiesReleases()
                && retryAfter.compareTo(UNCLAIMED_RECHECK) > 0
                ? UNCLAIMED_RECHECK : retryAfter;
    }

    /** One compare-and-set of the run: a writer's that refuses while readers may live, or a reader's grant. */
    private long take(Connection connection, LeaseHold hold, Duration lease) throws SQLException {
        return hold.shared ? table.readAcquire(connection, hold.key, hold.owner, hold.ownWrite, lease)
                : table.compareAndSet(connection, hold.key, hold.owner, lease);
    }

    /**
     * A writer refused while read holds may live: takes the row past them, which keeps every new reader out, and
     * counts the live ones. None: the lock is the writer's. Some: the run keeps the row, waiting, and its next
     * attempts count again ({@link #awaitReaders}). Null if the row is not free of writers, or a claim refused
     * the run: the caller goes on as for any busy row.
     */
    private Acquisition takePastReaders(Connection connection, LeaseHold hold, Duration lease, Runnable wakeUp)
            throws SQLException {
        hold.mayHaveClaimed = true; // the row's claim, if the run's, ends with this take
        long token = table.compareAndSetPastReaders(connection, hold.key, hold.owner, lease);
        if (token < 0) {
            return null;
        }
        hold.claimHeld = false;
        hold.pendingToken = token;
        Acquisition outcome = awaitReaders(connection, hold, lease, wakeUp);
        return outcome != null ? outcome : Acquisition.busy(); // the take was lost at once: look again
    }

    /**
     * A writer run that holds the row past live readers: if the row is still its own (renewed for another lease),
     * the lock once no reader is left, else busy until the longest reader's lease ends or a third of the run's
     * lease passed, whichever comes first (a release wakes it sooner on PostgreSQL). A caller that does not wait
     * gives the row back. Null if the row is no longer the run's (its lease ended while it waited, or it was
     * force-released): the run starts over.
     */
    private Acquisition awaitReaders(Connection connection, LeaseHold hold, Duration lease, Runnable wakeUp)
            throws SQLException {
        long token = hold.pendingToken;
        if (!table.refreshPending(connection, hold.key, hold.owner, lease)) {
            hold.pendingToken = -1;
            return null;
        }
        LockTable.LiveReaders readers = table.liveReaders(connection, hold.key);
        if (readers.count() == 0) {
            hold.pendingToken = -1;
            // no reader is left and none can come while the row is the run's: the writers after this one need
            // not take the row past readers again until somebody reads
            return table.forgetReaders(connection, hold.key, hold.owner) ? Acquisition.acquired(token) : null;
        }
        if (wakeUp == null) {
            hold.pendingToken = -1;
            table.release(connection, hold.key, hold.owner, channel);
            return Acquisition.busy();
        }
        // look again when the longest reader's lease ends at the latest, and within a third of this run's own lease
        // on the row, so that the row stays the run's while it waits (the same rhythm as a hold's renewal)
        return Acquisition.busy(Duration.ofNanos(Math.min(readers.longestLeft().toNanos(), lease.toNanos() / 3)));
    }

    /**
     * Frees the row if the hold's lease has not ended (an expired hold was no longer guaranteed, and the caller
     * must hear so). A run that holds has no claim, since its grant ended it; one that does not hold may still
     * have one (a run whose attempt failed after it had claimed is released in the background), which a second
     * statement ends, for runs that ever claimed only.
     */
    @Override
    public boolean release(LeaseHold hold) {
        if (hold.shared && !hold.mayHaveRow && !hold.mayHaveClaimed) {
            return false; // nothing of the run was ever written
        }
        return table.call("releasing '" + hold.name + "'", connection -> {
            boolean released = hold.shared ? table.releaseReader(connection, hold.key, hold.owner, channel)
                    : table.release(connection, hold.key, hold.owner, channel);
            hold.pendingToken = -1;
            if (!released && hold.mayHaveClaimed) {
                table.dropClaim(connection, hold.key, hold.owner, channel);
            }
            return released;
        });
    }

    @Override
    public boolean takesOver() {
        return true;
    }

    /**
     * One statement that takes the row from {@code previous} for {@code hold} (see {@link LockTable#takeOver});
     * when it takes nothing (a claim has had its turns, read holds may live, the hold expired), {@code previous}
     * is released (on PostgreSQL by the same statement) and {@code hold} makes an ordinary attempt. After a previous
     * run that was the claimant when it was granted, the take-over passes the claim living now, which was made during
     * that run's hold: one grant after a claim is made, as on Redis.
     */
    @Override
    public Acquisition takeOver(LeaseHold previous, LeaseHold hold, Duration lease, Runnable wakeUp) {
        // a previous run granted as the claimant ended its claim then: a claim living now was made during its hold
        boolean pastClaim = previous.claimHeld;
        long token = table.call("taking '" + hold.name + "' over", connection ->
                table.takeOver(connection, hold.key, hold.owner, previous.owner, pastClaim, lease, channel));
        if (token >= 0) {
            return Acquisition.acquired(token);
        }
        if (token == LockTable.RELEASED_INSTEAD) {
            previous.pendingToken = -1;
        } else {
            release(previous);
        }
        return tryAcquire(hold, lease, Duration.ZERO, wakeUp);
    }

    /** Ends the claim of a run that stopped waiting, if it ever claimed. */
    @Override
    public void abandon(LeaseHold hold) {
        if (hold.pendingToken >= 0) {
            // a writer that held the row past its readers gives it back
            hold.pendingToken = -1;
            table.call("giving back '" + hold.name + "'", connection ->
                    table.release(connection, hold.key, hold.owner, channel));
        } else if (hold.mayHaveClaimed) {
            table.call("dropping the claim on '" + hold.name + "'", connection -> {
                table.dropClaim(connection, hold.key, hold.owner, channel);
                return null;
            });
        }
    }

    @Override
    public RenewResult<LeaseHold> renew(List<LeaseHold> holds, Duration lease) {
        if (holds.isEmpty()) {
            return RenewResult.allRenewed();
        }
        List<LeaseHold> writes = new ArrayList<>(holds.size());
        List<LeaseHold> reads = new ArrayList<>();
        for (LeaseHold hold : holds) {
            (hold.shared ? reads : writes).add(hold);
        }
        return table.call("renewing " + holds.size() + " lock(s)", connection -> {
            Set<LeaseHold> gone = new HashSet<>();
            if (!writes.isEmpty()) {
                gone.addAll(extend(connection, table.name(), writes, lease));
            }
            if (!reads.isEmpty()) {
                renewReads(connection, reads, lease, gone);
            }
            return gone.isEmpty() ? RenewResult.<LeaseHold>allRenewed() : RenewResult.gone(gone);
        });
    }

    /**
     * Renews read holds: first each hold's own row, which decides whether the hold lives; then, for the live ones,
     * the lock rows' {@code readers_until}, so that it reaches past each renewed row's lease end. A lock row whose
     * {@code readers_until} had passed meanwhile may have let a writer in: its read holds are lost too.
     */
    private void renewReads(Connection connection, List<LeaseHold> reads, Duration lease, Set<LeaseHold> gone)
            throws SQLException {
        Set<LeaseHold> lost = extend(connection, table.name() + "_readers", reads, lease);
        gone.addAll(lost);
        List<LeaseHold> live = new ArrayList<>(reads);
        live.removeAll(lost);
        Map<Row, List<LeaseHold>> byLock = new LinkedHashMap<>();
        for (LeaseHold hold : live) {
            byLock.computeIfAbsent(new Row(hold.key, ""), k -> new ArrayList<>()).add(hold);
        }
        if (byLock.isEmpty()) {
            return;
        }
        Dialect dialect = table.dialect();
        int n = byLock.size();
        String lapsed = " WHERE lock_key IN (" + "?, ".repeat(n - 1) + "?) AND readers_until > " + dialect.now();
        int extended;
        try (PreparedStatement update = connection.prepareStatement("UPDATE " + table.name() + " SET"
                + " readers_until = CASE WHEN readers_until > " + dialect.nowPlusMicros() + " THEN readers_until"
                + " ELSE " + dialect.nowPlusMicros() + " END" + lapsed)) {
            update.setQueryTimeout(table.queryTimeoutSeconds());
            update.setLong(1, Dialect.micros(lease));
            update.setLong(2, Dialect.micros(lease));
            int i = 3;
            for (Row lock : byLock.keySet()) {
                update.setBytes(i++, lock.key());
            }
            extended = update.executeUpdate();
        }
        if (extended == n) {
            return;
        }
        Set<Row> kept = new HashSet<>();
        try (PreparedStatement select = connection.prepareStatement("SELECT lock_key FROM " + table.name()
                + lapsed)) {
            select.setQueryTimeout(table.queryTimeoutSeconds());
            int i = 1;
            for (Row lock : byLock.keySet()) {
                select.setBytes(i++, lock.key());
            }
            try (ResultSet rows = select.executeQuery()) {
                while (rows.next()) {
                    kept.add(new Row(rows.getBytes(1), ""));
                }
            }
        }
        byLock.forEach((lock, readers) -> {
            if (!kept.contains(lock)) {
                gone.addAll(readers);
            }
        });
    }

    /**
     * Extends each hold's row in {@code rows} (the lock table for writes, the readers' table for reads) where it
     * is still the hold's and its lease has not ended, in one statement: the keys in an IN list, which every
     * database finds by the primary key, then each key with its owner id, so that a row is extended only for the
     * hold it was given for. Reads back which rows it extended only when the count falls short.
     *
     * @return the holds whose row was not extended
     */
    private Set<LeaseHold> extend(Connection connection, String rows, List<LeaseHold> holds, Duration lease)
            throws SQLException {
        Dialect dialect = table.dialect();
        int n = holds.size();
        String ours = " WHERE expires_at > " + dialect.now() + " AND lock_key IN (" + "?, ".repeat(n - 1)
                + "?) AND (" + "(lock_key = ? AND owner = ?) OR ".repeat(n - 1) + "(lock_key = ? AND owner = ?))";
        int extended;
        try (PreparedStatement update = connection.prepareStatement("UPDATE " + rows + " SET expires_at = "
                + dialect.nowPlusMicros() + ours)) {
            update.setQueryTimeout(table.queryTimeoutSeconds());
            update.setLong(1, Dialect.micros(lease));
            bindHolds(update, 2, holds);
            extended = update.executeUpdate();
        }
        if (extended == n) {
            return Set.of();
        }
        // Fewer rows than holds: find the rows still held by their hold's owner (just extended); the rest are gone.
        Set<Row> kept = new HashSet<>();
        try (PreparedStatement select = connection.prepareStatement("SELECT lock_key, owner FROM " + rows + ours)) {
            select.setQueryTimeout(table.queryTimeoutSeconds());
            bindHolds(select, 1, holds);
            try (ResultSet found = select.executeQuery()) {
                while (found.next()) {
                    kept.add(new Row(found.getBytes(1), found.getString(2)));
                }
            }
        }
        Set<LeaseHold> gone = new HashSet<>();
        for (LeaseHold hold : holds) {
            if (!kept.contains(new Row(hold.key, hold.owner))) {
                gone.add(hold);
            }
        }
        return gone;
    }

    /** Binds the keys of the IN list, then each key with its hold's owner id; see {@link #renew}. */
    private static void bindHolds(PreparedStatement statement, int first, List<LeaseHold> holds)
            throws SQLException {
        int i = first;
        for (LeaseHold hold : holds) {
            statement.setBytes(i++, hold.key);
        }
        for (LeaseHold hold : holds) {
            statement.setBytes(i++, hold.key);
            statement.setString(i++, hold.owner);
        }
    }

    @Override
    public OptionalInt semaphorePermits(String name) {
        return table.semaphorePermits(namespace, name);
    }

    @Override
    public void setSemaphorePermits(String name, int permits) {
        table.setSemaphorePermits(namespace, name, permits);
    }

    @Override
    public boolean isLocked(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("checking '" + name + "'", connection -> {
            String now = table.dialect().now();
            String writer = "SELECT COUNT(*) FROM " + table.name() + " WHERE lock_key = ? AND owner IS NOT NULL AND"
                    + " expires_at > " + now;
            try (PreparedStatement select = connection.prepareStatement(!table.readers() ? writer : "SELECT ("
                    + writer + ") + (SELECT COUNT(*) FROM " + table.name() + "_readers WHERE lock_key = ? AND"
                    + " expires_at > " + now + ")")) {
                select.setQueryTimeout(table.queryTimeoutSeconds());
                select.setBytes(1, key);
                if (table.readers()) {
                    select.setBytes(2, key);
                }
                try (ResultSet rows = select.executeQuery()) {
                    return rows.next() && rows.getLong(1) > 0;
                }
            }
        });
    }

    /**
     * One SELECT of the row: owner, start and token, and the lease left by the database clock in the same
     * statement, so the client's clock plays no part. A hold whose lease ended is free, as for acquirers.
     */
    @Override
    public LockInfo inspect(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("inspecting '" + name + "'", connection -> {
            Dialect dialect = table.dialect();
            try (PreparedStatement select = connection.prepareStatement("SELECT owner, acquired_at, token, "
                    + dialect.microsUntil("expires_at") + " FROM " + table.name() + " WHERE lock_key = ?")) {
                select.setQueryTimeout(table.queryTimeoutSeconds());
                select.setBytes(1, key);
                try (ResultSet row = select.executeQuery()) {
                    if (!row.next()) {
                        return LockInfo.free(name, null);
                    }
                    String owner = row.getString(1);
                    Instant acquiredAt = dialect.instant(row, 2);
                    long token = row.getLong(3);
                    long leftMicros = row.getLong(4);
                    if (owner == null || leftMicros <= 0) {
                        LockInfo readers = table.readers() ? table.readersInfo(connection, name, key, token) : null;
                        // a row never acquired holds only the seed of its first token
                        return readers != null ? readers : LockInfo.free(name, acquiredAt == null ? null : token);
                    }
                    return LockInfo.held(name, owner, acquiredAt, Duration.of(leftMicros, ChronoUnit.MICROS), token);
                }
            }
        });
    }

    /**
     * Clears the owner of a live hold in one UPDATE, like a release by the owner, and deletes the live read holds'
     * rows. The holders learn at their next renewal, which finds the rows no longer their own, or at their unlock.
     */
    @Override
    public boolean forceRelease(String name) {
        byte[] key = LockTable.key(namespace, name);
        return table.call("force-releasing '" + name + "'", connection -> {
            Dialect dialect = table.dialect();
            int freed;
            try (PreparedStatement update = connection.prepareStatement("UPDATE " + table.name()
                    + " SET owner = NULL, expires_at = " + dialect.now() + " WHERE lock_key = ? AND owner IS NOT NULL"
                    + " AND expires_at > " + dialect.now())) {
                update.setQueryTimeout(table.queryTimeoutSeconds());
                update.setBytes(1, key);
                freed = update.executeUpdate();
            }
            if (table.readers()) {
                freed += table.deleteLiveReaders(connection, key);
            }
            return freed > 0;
        });
    }

    /**
     * On PostgreSQL, subscribes to the notifications of the row's releases (see {@link ReleaseListener}); the
     * first subscription starts the listener. Elsewhere null: the waiter polls.
     */
    @Override
    public Subscription subscribe(String name, Runnable onRelease) {
        Dialect dialect = table.dialect();
        if (dialect == null || !dialect.notifiesReleases()) {
            return null;
        }
        listenerLock.lock();
        try {
            if (closed) {
                return null;
            }
            if (listener == null) {
                listener = ReleaseListener.start(table, channel);
            }
            return listener.subscribe(HexFormat.of().formatHex(LockTable.key(namespace, name)), onRelease);
        } finally {
            listenerLock.unlock();
        }
    }

    /** The listener, once some waiter subscribed; for tests. */
    ReleaseListener listener() {
        listenerLock.lock();
        try {
            return listener;
        } finally {
            listenerLock.unlock();
        }
    }

    @Override
    public void close() {
        ReleaseListener running;
        listenerLock.lock();
        try {
            closed = true;
            running = listener;
        } finally {
            listenerLock.unlock();
        }
        if (running != null) {
            running.close(); // gives its connection back before the pool closes
        }
        table.close();
    }

    /**
     * One acquisition run: the name (for messages), its key, computed once per run, the run's owner id, and
     * whether it may have claimed a turn.
     */
    static final class LeaseHold {
        final String name;
        final byte[] key;
        final String owner;
        /** Whether this is a read hold, kept in a row of the readers' table. */
        final boolean shared;
        /** A read hold's downgrade: the owner id of the same thread's write hold, which does not keep it out. */
        final String ownWrite;
        /** A read run: set before its row is first written, cleared when a refused attempt deleted it again. */
        volatile boolean mayHaveRow;
        /**
         * A writer run that took the row past live readers and waits for them to leave: the token of that take,
         * -1 otherwise. Read and written by the run's attempts, then its release or abandon, which never overlap.
         */
        volatile long pendingToken = -1;
        /** Set before the run's first claim statement, so release and abandon end a claim only if there may be one. */
        volatile boolean mayHaveClaimed;
        /**
         * Whether the run's last claim statement answered that the run holds the claim: the row existed then, so
         * the claimant's next attempt, which comes soon, needs no insert-if-absent. (A row is deleted only when
         * nobody used it for the idle age given to {@link JdbcLockProviders#deleteIdleRows}; if it was all the
         * same, the claim finds no row, and the attempt after that inserts it.)
         */
        volatile boolean claimHeld;
        /**
         * The row's token when the run first found the lock busy, {@link Long#MAX_VALUE} until then: a claim of a
         * run with an older ticket takes the place of a younger one (see {@link Dialect#claimUpdate}). Read and
         * written by the run's attempts only, which never overlap.
         */
        long ticket = Long.MAX_VALUE;

        LeaseHold(String name, byte[] key, String owner, boolean shared, String ownWrite) {
            this.name = name;
            this.key = key;
            this.owner = owner;
            this.shared = shared;
            this.ownWrite = ownWrite;
        }

        @Override
        public String toString() {
            return "LeaseHold{'" + name + "', owner=" + owner + (shared ? ", read" : "") + '}';
        }
    }

    /** A row read back by a renewal: its key and owner, with value equality. */
    private record Row(byte[] key, String owner) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Row r && Arrays.equals(key, r.key) && owner.equals(r.owner);
        }

        @Override
        public int hashCode() {
            return 31 * Arrays.hashCode(key) + owner.hashCode();
        }

        @Override
        public String toString() {
            return HexFormat.of().formatHex(key) + '/' + owner;
        }
    }
}
