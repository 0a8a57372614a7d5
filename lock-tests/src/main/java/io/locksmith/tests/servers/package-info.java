/**
 * Test-server fixtures: Redis, ZooKeeper, MariaDB/MySQL and PostgreSQL servers for backend tests, resolved per run.
 *
 * <p>Each fixture takes the first path that works:
 * <ol>
 *   <li>an address given by environment variable or system property ({@code LOCKSMITH_REDIS_URI},
 *       {@code LOCKSMITH_ZOOKEEPER}, {@code LOCKSMITH_MARIADB_URL}, {@code LOCKSMITH_POSTGRES_URL}, or
 *       {@code -Dlocksmith.redis.uri} and so on; a system property wins). The tests cannot kill or pause such a
 *       server, and the fixture's {@code isControllable()} says so;</li>
 *   <li>a local server: {@code redis-server} processes of our own, in-JVM ZooKeeper through curator-test (or, for
 *       faults that need a process to kill or freeze, ZooKeeper in a child JVM of its own), the MariaDB and
 *       PostgreSQL servers at their usual local ports;</li>
 *   <li>a container through Testcontainers, when it is on the classpath and a Docker engine answers.</li>
 * </ol>
 * A server that cannot be had fails with {@link io.locksmith.tests.servers.ServerUnavailableException}, whose one-line
 * message says what to install or set; nothing is skipped. Each fixture logs which path it took.
 *
 * <p>The machine's MariaDB and PostgreSQL servers are shared, so the tests must not kill or freeze them: for those
 * faults {@link io.locksmith.tests.servers.DatabaseServer#startOwnMariaDb()} and
 * {@link io.locksmith.tests.servers.DatabaseServer#startOwnPostgres()} start private servers from the installed
 * binaries, on free ports with data directories of their own.
 */
package io.locksmith.tests.servers;
