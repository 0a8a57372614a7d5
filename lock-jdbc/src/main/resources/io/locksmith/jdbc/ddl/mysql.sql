-- Locksmith lock table for MySQL 8.0+ and MariaDB 10.6+ (InnoDB).
-- ${table} is the table name given to the provider (default locksmith_locks).
--
-- Session mode draws fencing tokens from this AUTO_INCREMENT counter, each with an INSERT that commits at once
-- (so the counter survives a crash); one draw in 64 deletes the rows below it. A value is never handed out
-- twice, also after its row is deleted.
-- It is created before the lock table, so a process that finds the table finds the counter too.
CREATE TABLE IF NOT EXISTS ${table}_token (
    token BIGINT NOT NULL AUTO_INCREMENT,
    PRIMARY KEY (token)
) ENGINE = InnoDB;

-- Read holds of read-write locks in lease mode: one row per read hold, keyed by the lock's key and the holding
-- run's owner id, with the hold's own lease. The lock's row keeps in readers_until the latest lease end of its
-- read holds, so that a writer's compare-and-set refuses while readers may live and only then counts these rows.
-- Locksmith creates this table, and adds readers_until, beside a lock table made by an earlier version.
CREATE TABLE IF NOT EXISTS ${table}_readers (
    lock_key   BINARY(32)   NOT NULL,
    owner      VARCHAR(64)  CHARACTER SET ascii NOT NULL,
    expires_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (lock_key, owner)
) ENGINE = InnoDB;

-- lock_key is SHA-256 over UTF-8 (namespace, NUL, name): binary, so names that differ only by case or by
-- trailing spaces are different keys whatever the server's default collation. namespace and name are kept for
-- tools. One row per distinct name ever locked; rows stay after release so the fencing token keeps growing.
--
-- In session mode a holder records owner, token, acquired_at and holder (its CONNECTION_ID(), for a forced
-- release) inside the transaction that holds the row. That transaction never commits: only READ UNCOMMITTED
-- readers see the record, and the rollback that ends the hold erases it.
--
-- In lease mode a waiter of another process claims the next turn: claimant is its owner id, claim_token the
-- row's token when it claimed (after 8 more grants to others only the claimant may take the lock), claim_until
-- when the claim lapses unless the waiter refreshes it. Locksmith adds these three columns to an older table.
-- readers_until: see ${table}_readers above.
CREATE TABLE IF NOT EXISTS ${table} (
    lock_key    BINARY(32)   NOT NULL,
    namespace   VARCHAR(64)  CHARACTER SET ascii NOT NULL,
    name        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    owner       VARCHAR(64)  CHARACTER SET ascii NULL,
    token       BIGINT       NOT NULL,
    acquired_at DATETIME(6)  NULL,
    expires_at  DATETIME(6)  NOT NULL,
    holder      BIGINT       NULL,
    claimant    VARCHAR(64)  CHARACTER SET ascii NULL,
    claim_token BIGINT       NULL,
    claim_until DATETIME(6)  NULL,
    readers_until DATETIME(6) NULL,
    PRIMARY KEY (lock_key)
) ENGINE = InnoDB;
