/**
 * The JDBC backend: locks in a table of MySQL/MariaDB, PostgreSQL or H2, in lease mode (a row per lock with an
 * expiry on the database's clock) or session mode (a row lock held by an open transaction).
 *
 * <p>Build a provider with {@link io.locksmith.jdbc.JdbcLockProviders#builder(javax.sql.DataSource)}, or open one
 * from a {@code jdbc:} URI through {@link io.locksmith.LockProvider#open(String)} (see
 * {@link io.locksmith.jdbc.JdbcLockProviderFactory}).
 */
package io.locksmith.jdbc;
