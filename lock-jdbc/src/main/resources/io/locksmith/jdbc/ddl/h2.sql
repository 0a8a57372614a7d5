-- Locksmith lock table for H2 2.x.
-- ${table} is the table name given to the provider (default locksmith_locks).
--
-- Session mode draws fencing tokens from this sequence: NEXT VALUE FOR is never rolled back.
-- It is created before the lock table, so a process that finds the table finds the counter too.
CREATE SEQUENCE IF NOT EXISTS ${table}_token;

-- Read holds of read-write locks in lease mode: one row per read hold, keyed by the lock's key and the holding
-- run's owner id, with the hold's own lease. The lock's row keeps in readers_until the latest lease end of its
-- read holds, so that a writer's compare-and-set refuses while readers may live and only then counts these rows.
-- Locksmith creates this table, and adds readers_until, beside a lock table made by an earlier version.
CREATE TABLE IF NOT EXISTS ${table}_readers (
    lock_key   BINARY(32)   NOT NULL,
    owner      VARCHAR(64) NOT NULL,
    expires_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    PRIMARY KEY (lock_key, owner)
);

-- lock_key is SHA-256 over UTF-8 (namespace, NUL, name); namespace and name are kept for tools (H2 counts
-- VARCHAR length in UTF-16 units, hence 510 for 255 code points). One row per distinct name ever locked; rows
-- stay after release so the fencing token keeps growing.
--
-- In session mode a holder records owner, token, acquired_at and holder (its SESSION_ID(), for a forced release)
-- inside the transaction that holds the row. That transaction never commits: only READ UNCOMMITTED readers see
-- the record, and the rollback that ends the hold erases it.
--
-- In lease mode a waiter of another process claims the next turn: claimant is its owner id, claim_token the
-- row's token when it claimed (after 8 more grants to others only the claimant may take the lock), claim_until
-- when the claim lapses unless the waiter refreshes it. Locksmith adds these three columns to an older table.
-- readers_until: see ${table}_readers above.
-- Session-mode waiters poll on H2 and claim too, in a row of its own per name (lock_key SHA-256 over namespace,
-- NUL, name, NUL; owner always NULL), since the holder's transaction keeps the lock's row locked.
CREATE TABLE IF NOT EXISTS ${table} (
    lock_key    BINARY(32)                  NOT NULL PRIMARY KEY,
    namespace   VARCHAR(64)                 NOT NULL,
    name        VARCHAR(510)                NOT NULL,
    owner       VARCHAR(64),
    token       BIGINT                      NOT NULL,
    acquired_at TIMESTAMP(6) WITH TIME ZONE,
    expires_at  TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    holder      BIGINT,
    claimant    VARCHAR(64),
    claim_token BIGINT,
    claim_until TIMESTAMP(6) WITH TIME ZONE,
    readers_until TIMESTAMP(6) WITH TIME ZONE
);
