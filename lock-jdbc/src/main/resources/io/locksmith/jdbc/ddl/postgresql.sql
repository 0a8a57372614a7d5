-- Locksmith lock table for PostgreSQL 9.5+.
-- ${table} is the table name given to the provider (default locksmith_locks).
--
-- Session mode draws fencing tokens from this sequence: nextval() is never rolled back.
-- It is created before the lock table, so a process that finds the table finds the counter too.
CREATE SEQUENCE IF NOT EXISTS ${table}_token;

-- Read holds of read-write locks in lease mode: one row per read hold, keyed by the lock's key and the holding
-- run's owner id, with the hold's own lease. The lock's row keeps in readers_until the latest lease end of its
-- read holds, so that a writer's compare-and-set refuses while readers may live and only then counts these rows.
-- Locksmith creates this table, and adds readers_until, beside a lock table made by an earlier version.
CREATE TABLE IF NOT EXISTS ${table}_readers (
    lock_key   BYTEA        NOT NULL,
    owner      VARCHAR(64) NOT NULL,
    expires_at TIMESTAMPTZ(6) NOT NULL,
    PRIMARY KEY (lock_key, owner)
);

-- lock_key is SHA-256 over UTF-8 (namespace, NUL, name); namespace and name are kept for tools. One row per
-- distinct name ever locked; rows stay after release so the fencing token keeps growing.
--
-- In lease mode a waiter of another process claims the next turn: claimant is its owner id, claim_token the
-- row's token when it claimed (after 8 more grants to others only the claimant may take the lock), claim_until
-- when the claim lapses unless the waiter refreshes it. Locksmith adds these three columns to an older table.
-- readers_until: see ${table}_readers above.
CREATE TABLE IF NOT EXISTS ${table} (
    lock_key    BYTEA          NOT NULL PRIMARY KEY,
    namespace   VARCHAR(64)    NOT NULL,
    name        VARCHAR(255)   NOT NULL,
    owner       VARCHAR(64),
    token       BIGINT         NOT NULL,
    acquired_at TIMESTAMPTZ(6),
    expires_at  TIMESTAMPTZ(6) NOT NULL,
    claimant    VARCHAR(64),
    claim_token BIGINT,
    claim_until TIMESTAMPTZ(6),
    readers_until TIMESTAMPTZ(6)
);
