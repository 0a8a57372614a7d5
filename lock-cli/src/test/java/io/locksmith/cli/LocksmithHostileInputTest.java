package io.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.servers.DatabaseServer;
import io.locksmith.tests.servers.RedisServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * Hostile and mistaken input to {@code locksmith}, table-driven: malformed URIs, unknown schemes, bad ports,
 * missing hosts, wrong passwords, unreachable and silent stores, bad lock names, bad numbers and durations,
 * unknown options. Every case exits with status 2 and prints exactly one line on stderr that names what was
 * wrong, with no stack trace, no password and no raw control character; nothing on stdout; and leaves no thread,
 * Redis connection or hold behind.
 *
 * <p>Real servers: a redis-server with a password on its default user and an ACL user, MariaDB and PostgreSQL
 * from the lock-tests fixtures, ZooKeeper in this JVM; a closed port, and a "silent" port that accepts
 * connections (the kernel completes them) and never answers. The table runs in this JVM through
 * {@link Locksmith#run}; a selection runs again as a separate process through {@link Locksmith#main}, where
 * the client libraries' logging and the JVM's own stderr count too.
 */
@DisplayName("locksmith: hostile input and access control")
class LocksmithHostileInputTest {

    private static final String RANDOM = UUID.randomUUID().toString().substring(0, 8);
    /** The Redis default user's password. */
    private static final String PASSWORD = "Default-pw-" + RANDOM;
    /** The password of the Redis ACL user {@code app}. */
    private static final String APP_PASSWORD = "App-pw-" + RANDOM;
    /** The password of the Redis ACL user {@code other}, whose keys are {@code other:*}. */
    private static final String OTHER_PASSWORD = "Other-pw-" + RANDOM;
    /** A password no server accepts. */
    private static final String WRONG = "Wr0ng-pw-" + RANDOM;
    private static final List<String> SECRETS = List.of(PASSWORD, APP_PASSWORD, OTHER_PASSWORD, WRONG);
    /** Generous bound on one run: a hang guard, not a speed check (the cases use a 1 s operation timeout). */
    private static final Duration HANG_GUARD = Duration.ofSeconds(60);
    /** How long threads and connections of a finished run may take to end. */
    private static final Duration SETTLE = Duration.ofSeconds(20);
    /**
     * Threads that JVM-wide machinery starts once and keeps (or ends on its own schedule), not any provider's:
     * commons-pool's shared evictor timer, the JDK's process reaper, the common pool and cleaner.
     */
    private static final List<String> SHARED_THREADS = List.of("commons-pool-evictor", "process reaper",
            "ForkJoinPool.commonPool", "Common-Cleaner", "Attach Listener", "surefire-forkedjvm");

    private static RedisServer redis;
    private static Jedis redisAdmin;
    private static DatabaseServer mariadb;
    private static DatabaseServer postgres;
    private static TestingServer zookeeper;
    private static ServerSocket silent;
    private static int closedPort;
    private static ExecutorService runner;

    @BeforeAll
    static void startServers() throws Exception {
        redis = RedisServer.start("--user", "default", "on", ">" + PASSWORD, "~*", "&*", "+@all",
                "--user", "app", "on", ">" + APP_PASSWORD, "~locksmith:*", "&locksmith:*", "+@all",
                "--user", "other", "on", ">" + OTHER_PASSWORD, "~other:*", "&other:*", "+@all", "-@dangerous");
        redisAdmin = new Jedis(new HostAndPort(redis.host(), redis.port()),
                DefaultJedisClientConfig.builder().password(PASSWORD).timeoutMillis(5_000).build());
        mariadb = DatabaseServer.startMariaDb();
        postgres = DatabaseServer.startPostgres();
        zookeeper = new TestingServer(true);
        silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = probe.getLocalPort();
        }
        runner = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "cli-runner");
            t.setDaemon(true);
            return t;
        });
        // Threads that the first connection starts for good (the runner's, the in-JVM ZooKeeper server's
        // workers, drivers' shared ones) are no leak of a run: start them before any run counts threads.
        runner.submit(() -> {
            for (String uri : List.of("zookeeper://" + zookeeper.getConnectString(),
                    "redis://:" + PASSWORD + "@127.0.0.1:" + redis.port(), mariadbUrl("user=" + mariadb.user()),
                    postgresUrl("user=" + postgres.user()))) {
                try (LockProvider warmUp = LockProvider.open(uri)) {
                    warmUp.inspect("warm-up");
                }
            }
            return null;
        }).get(HANG_GUARD.toSeconds(), TimeUnit.SECONDS);
    }

    @AfterAll
    static void stopServers() throws Exception {
        if (runner != null) {
            runner.shutdownNow();
        }
        if (silent != null) {
            silent.close();
        }
        if (zookeeper != null) {
            zookeeper.close();
        }
        if (redisAdmin != null) {
            redisAdmin.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    // ------------------------------------------------------------------------------------------- the table

    private static Arguments row(String what, String expected, String... args) {
        return Arguments.of(what, List.of(args), expected);
    }

    private static String redisAt(int port) {
        return "redis://127.0.0.1:" + port;
    }

    private static String mariadbUrl(String parameters) {
        return mariadb.jdbcUrl() + (mariadb.jdbcUrl().contains("?") ? "&" : "?") + parameters;
    }

    private static String postgresUrl(String parameters) {
        return postgres.jdbcUrl() + (postgres.jdbcUrl().contains("?") ? "&" : "?") + parameters;
    }

    private static String withPort(String jdbcUrl, String port) {
        return jdbcUrl.replaceFirst("//([^/:?]+)(:\\d+)?", "//$1:" + port);
    }

    static Stream<Arguments> cases() {
        String redisUri = "redis://:" + PASSWORD + "@127.0.0.1:" + redis.port();
        String zk = "zookeeper://" + zookeeper.getConnectString();
        String silentPort = Integer.toString(silent.getLocalPort());
        String closed = Integer.toString(closedPort);
        String local = "local://hostile-" + RANDOM;
        List<Arguments> rows = new ArrayList<>(List.of(
                // malformed URIs
                row("malformed: space in the host", "Malformed lock store URI", "inspect", "x", "--backend",
                        "redis://bad host:6379"),
                row("malformed: no scheme name", "Malformed lock store URI", "inspect", "x", "--backend", "://x"),
                row("malformed: unclosed IPv6 bracket", "Malformed lock store URI", "inspect", "x", "--backend",
                        "redis://[::1:6379"),
                row("malformed: empty URI", "has no scheme", "inspect", "x", "--backend", ""),
                row("malformed: a bare word", "has no scheme", "inspect", "x", "--backend", "localhost"),
                row("malformed: a password with a space", "Malformed lock store URI", "inspect", "x", "--backend",
                        "redis://:" + WRONG + " x@127.0.0.1:" + redis.port()),
                row("malformed: a password with an unencoded '/'", "percent-encode", "inspect", "x", "--backend",
                        "redis://app:" + WRONG + "/x@127.0.0.1:" + redis.port()),
                row("malformed: a password with an unencoded '?' (ZooKeeper)", "percent-encode", "inspect", "x",
                        "--backend", "zookeeper://app:" + WRONG + "?x@127.0.0.1:2181"),
                row("malformed: Redis path that is no database", "database number", "inspect", "x", "--backend",
                        "redis://127.0.0.1:6379/zero"),
                row("malformed: unknown Redis parameter", "unknown query parameter 'timeout'", "inspect", "x",
                        "--backend", "redis://127.0.0.1:6379?timeout=5"),
                row("malformed: Redis fairness", "fairness must be bounded or fifo", "inspect", "x", "--backend",
                        "redis://127.0.0.1:6379?fairness=lottery"),
                row("malformed: unknown ZooKeeper parameter", "unknown parameter 'bogus'", "inspect", "x",
                        "--backend", zk + "?bogus=1"),
                row("malformed: ZooKeeper session timeout", "sessionTimeoutMs must be a positive number", "inspect",
                        "x", "--backend", zk + "?sessionTimeoutMs=-5"),
                row("malformed: Redlock over two masters", "at least 3", "inspect", "x", "--backend",
                        "redlock://127.0.0.1:" + closed + ",127.0.0.1:" + silentPort),
                row("malformed: bare jdbc:", "Malformed lock store URI", "inspect", "x", "--backend", "jdbc:"),
                row("malformed: unsupported database", "jdbc:mysql:", "inspect", "x", "--backend",
                        "jdbc:oracle:thin:@//db:1521/app"),
                row("malformed: unknown Locksmith parameter", "Unknown parameter 'locksmith.mood'", "inspect", "x",
                        "--backend", mariadbUrl("locksmith.mood=lease")),
                row("malformed: unknown JDBC mode", "locksmith.mode must be lease or session", "inspect", "x",
                        "--backend", mariadbUrl("locksmith.mode=exclusive")),
                row("malformed: SQL in the table name", "table must be an SQL identifier", "inspect", "x",
                        "--backend", mariadbUrl("locksmith.table=x%3BDROP%20TABLE%20y")),
                row("a password a message repeats is masked", "locksmith.mode must be lease or session, got '***'",
                        "inspect", "x", "--backend", mariadbUrl("user=root&password=" + WRONG + "&locksmith.mode="
                                + WRONG)),
                row("malformed: negative pool size", "locksmith.poolSize must be at least 1", "inspect", "x",
                        "--backend", postgresUrl("locksmith.poolSize=-1")),
                row("malformed: local:// with a path", "only a server name", "inspect", "x", "--backend",
                        "local://a/b/c"),
                // unknown schemes
                row("unknown scheme", "No Locksmith backend for scheme 'nosuch'", "inspect", "x", "--backend",
                        "nosuch://127.0.0.1:1"),
                row("unknown scheme with credentials", "No Locksmith backend for scheme 'mongodb'", "inspect", "x",
                        "--backend", "mongodb://admin:" + WRONG + "@127.0.0.1:27017"),
                row("unknown scheme: http", "No Locksmith backend for scheme 'http'", "release", "x", "--force",
                        "--backend", "http://127.0.0.1/"),
                // bad ports
                row("bad port: Redis 0", "port must be a number from 1 to 65535, got '0'", "inspect", "x",
                        "--backend", "redis://127.0.0.1:0"),
                row("bad port: Redis 70000", "got '70000'", "inspect", "x", "--backend", "redis://127.0.0.1:70000"),
                row("bad port: Redis abc", "got 'abc'", "inspect", "x", "--backend", "redis://127.0.0.1:abc"),
                row("bad port: ZooKeeper 0", "got '0'", "inspect", "x", "--backend", "zookeeper://127.0.0.1:0"),
                row("bad port: ZooKeeper 70000", "got '70000'", "inspect", "x", "--backend",
                        "zookeeper://127.0.0.1:2181,127.0.0.1:70000"),
                row("bad port: ZooKeeper abc", "got 'abc'", "inspect", "x", "--backend", "zookeeper://127.0.0.1:abc"),
                row("bad port: Redlock node abc", "node 2", "inspect", "x", "--backend",
                        "redlock://127.0.0.1:1,127.0.0.1:abc,127.0.0.1:3"),
                row("bad port: MariaDB 0", "port must be a number from 1 to 65535, got '0'", "inspect", "x",
                        "--backend", withPort(mariadb.jdbcUrl(), "0")),
                row("bad port: MariaDB 70000", "got '70000'", "inspect", "x", "--backend",
                        withPort(mariadb.jdbcUrl(), "70000")),
                row("bad port: MariaDB abc", "got 'abc'", "inspect", "x", "--backend",
                        withPort(mariadb.jdbcUrl(), "abc")),
                row("bad port: PostgreSQL 0", "got '0'", "inspect", "x", "--backend",
                        withPort(postgres.jdbcUrl(), "0")),
                row("bad port: PostgreSQL 70000", "got '70000'", "inspect", "x", "--backend",
                        withPort(postgres.jdbcUrl(), "70000")),
                row("bad port: PostgreSQL abc", "got 'abc'", "inspect", "x", "--backend",
                        withPort(postgres.jdbcUrl(), "abc")),
                // missing hosts
                row("missing host: redis://", "the host is missing", "inspect", "x", "--backend", "redis://"),
                row("missing host: redis://:6379", "the host is missing", "inspect", "x", "--backend",
                        "redis://:6379"),
                row("missing host: rediss:// with credentials", "the host is missing", "inspect", "x", "--backend",
                        "rediss://app:" + WRONG + "@:6379"),
                row("missing host: zookeeper://", "the hosts are missing", "inspect", "x", "--backend",
                        "zookeeper://"),
                row("missing host: empty ZooKeeper list entry", "a host is missing", "inspect", "x", "--backend",
                        "zookeeper://127.0.0.1:2181,,127.0.0.1:2182"),
                row("missing host: redlock://", "the nodes are missing", "inspect", "x", "--backend", "redlock://"),
                row("missing host: empty Redlock node", "empty node", "inspect", "x", "--backend",
                        "redlock://127.0.0.1:1,,127.0.0.1:3"),
                row("missing host: jdbc:mariadb:///test", "host, pipe or local socket must be set", "inspect", "x", "--timeout", "1s", "--backend",
                        "jdbc:mariadb:///test?user=root"),
                // wrong passwords
                row("wrong password: Redis default user", "refused the password", "inspect", "x", "--backend",
                        "redis://:" + WRONG + "@127.0.0.1:" + redis.port()),
                row("wrong password: Redis ACL user", "refused the user name or password", "inspect", "x",
                        "--backend", "redis://app:" + WRONG + "@127.0.0.1:" + redis.port()),
                row("unknown Redis ACL user", "refused the user name or password", "inspect", "x", "--backend",
                        "redis://nobody:" + APP_PASSWORD + "@127.0.0.1:" + redis.port()),
                row("no password: Redis requires one", "requires a password", "inspect", "x", "--backend",
                        "redis://127.0.0.1:" + redis.port()),
                row("right password, missing database", "database 99 does not exist", "inspect", "x", "--backend",
                        redisUri + "/99"),
                row("wrong password: TLS port that is not one", "rediss://127.0.0.1:" + redis.port(), "inspect",
                        "x", "--timeout", "1s", "--backend", "rediss://:" + PASSWORD + "@127.0.0.1:" + redis.port()),
                row("wrong password: Redlock", "quorum", "inspect", "x", "--backend",
                        "redlock://:" + WRONG + "@127.0.0.1:" + redis.port() + ",:" + WRONG + "@127.0.0.1:"
                                + redis.port() + ",:" + WRONG + "@127.0.0.1:" + redis.port()),
                row("wrong password: MariaDB", "Access denied", "inspect", "x", "--timeout", "1s", "--backend",
                        mariadbUrl("user=" + mariadb.user() + "&password=" + WRONG)),
                row("unknown user: PostgreSQL (trust authentication checks no password)", "does not exist",
                        "inspect", "x", "--timeout", "1s", "--backend",
                        postgresUrl("user=nobody_" + RANDOM.replace('-', '_') + "&password=" + WRONG)),
                // unreachable: nothing listens, or a port that never answers
                row("unreachable: Redis, closed port", "127.0.0.1:" + closed, "inspect", "x", "--timeout", "1s",
                        "--backend", redisAt(closedPort)),
                row("unreachable: Redis, silent port", "127.0.0.1:" + silentPort, "inspect", "x", "--timeout",
                        "1s", "--backend", redisAt(silent.getLocalPort())),
                row("unreachable: ZooKeeper, closed port", "operation timeout of 1000 ms", "inspect", "x",
                        "--timeout", "1s", "--backend", "zookeeper://127.0.0.1:" + closed),
                row("unreachable: ZooKeeper, silent port", "operation timeout of 1000 ms", "release", "x",
                        "--force", "--timeout", "1s", "--backend", "zookeeper://127.0.0.1:" + silentPort),
                row("unreachable: MariaDB, closed port", "operation timeout 1000 ms", "inspect", "x", "--timeout",
                        "1s", "--backend", withPort(mariadb.jdbcUrl(), closed)),
                row("unreachable: MariaDB, silent port", "operation timeout 1000 ms", "release", "x", "--force",
                        "--timeout", "1s", "--backend", withPort(mariadb.jdbcUrl(), silentPort)),
                row("unreachable: PostgreSQL, closed port", "operation timeout 1000 ms", "inspect", "x",
                        "--timeout", "1s", "--backend", withPort(postgres.jdbcUrl(), closed)),
                row("unreachable: PostgreSQL, silent port", "operation timeout 1000 ms", "inspect", "x",
                        "--timeout", "1s", "--backend", withPort(postgres.jdbcUrl(), silentPort)),
                row("unreachable: Redlock, closed and silent ports", "quorum", "inspect", "x", "--timeout", "1s",
                        "--backend", "redlock://127.0.0.1:" + closed + ",127.0.0.1:" + silentPort + ",127.0.0.1:"
                                + closed),
                row("unreachable: unknown host", "no-such-host.invalid", "inspect", "x", "--timeout", "1s",
                        "--backend", "redis://no-such-host.invalid:6379"),
                // bad lock names
                row("bad name: empty", "lock name must not be empty", "inspect", "", "--backend", local),
                row("bad name: newline", "control characters", "inspect", "a\nb", "--backend", local),
                row("bad name: terminal escape", "control characters", "release", "a\u001b[31mred", "--force",
                        "--backend", redisUri),
                row("bad name: terminal escape, without --force", "control characters", "release",
                        "\u001b]0;title\u0007", "--backend", local),
                row("bad name: NUL", "control characters", "inspect", "a\u0000b", "--backend", zk),
                row("bad name: DEL", "control characters", "inspect", "\u007f", "--backend",
                        mariadbUrl("user=" + mariadb.user())),
                row("bad name: 256 characters", "at most 255 code points", "inspect", "x".repeat(256), "--backend",
                        local),
                row("bad name: 100 000 characters", "at most 255 code points", "release", "y".repeat(100_000),
                        "--force", "--backend", local),
                row("bad name: unpaired surrogate", "well-formed Unicode", "inspect", "a\uD800", "--backend", local),
                row("bad name: demo --lock-name with a tab", "control characters", "demo", "--lock-name", "a\tb",
                        "--stock", "1", "--instances", "1", "--workers", "1", "--backend", local),
                // bad numbers and durations
                row("bad number: --stock abc", "'abc' is not an int", "demo", "--stock", "abc", "--backend", local),
                row("bad number: --stock 0", "--stock must be between 1 and", "demo", "--stock", "0", "--backend",
                        local),
                row("bad number: --stock overflow", "is not an int", "demo", "--stock", "99999999999", "--backend",
                        local),
                row("bad number: --instances -1", "--instances must be between 1 and 64", "demo", "--instances",
                        "-1", "--backend", local),
                row("bad number: --workers 1000", "--workers must be between 1 and 256", "demo", "--workers",
                        "1000", "--backend", local),
                row("bad duration: --timeout abc", "--timeout takes a duration", "inspect", "x", "--timeout", "abc",
                        "--backend", local),
                row("bad duration: --timeout 0", "--timeout takes a duration", "inspect", "x", "--timeout", "0",
                        "--backend", local),
                row("bad duration: --timeout 0s", "--timeout must be positive", "inspect", "x", "--timeout", "0s",
                        "--backend", local),
                row("bad duration: --timeout -5s", "--timeout must be positive", "inspect", "x", "--timeout", "-5s",
                        "--backend", local),
                row("bad duration: --timeout 1.5s", "--timeout takes a duration", "inspect", "x", "--timeout",
                        "1.5s", "--backend", local),
                row("bad duration: --timeout 3d", "--timeout takes a duration", "inspect", "x", "--timeout", "3d",
                        "--backend", local),
                row("bad duration: --timeout too long", "--timeout must be at most 24h", "inspect", "x",
                        "--timeout", "9999999999999999s", "--backend", local),
                row("bad duration: --timeout PT-1S", "--timeout must be positive", "release", "x", "--force",
                        "--timeout", "PT-1S", "--backend", local),
                row("bad duration: --work soon", "--work takes a duration", "demo", "--work", "soon", "--backend",
                        local),
                row("bad duration: --work too long", "--work must be at most 10s", "demo", "--work",
                        "99999999999999999us", "--backend", local),
                row("bad duration: --work -5us", "--work takes a duration", "demo", "--work", "-5us", "--backend",
                        local),
                // unknown and malformed options
                row("unknown option", "Unknown option: '--bogus'", "inspect", "x", "--bogus", "--backend", local),
                row("unknown option: --password", "Unknown option", "inspect", "x", "--password", "--backend",
                        local),
                row("option without its value", "Missing required parameter for option '--backend'", "inspect",
                        "x", "--backend"),
                row("boolean option with a value", "'maybe' is not a boolean", "release", "x", "--force=maybe",
                        "--backend", local),
                row("missing lock name", "Missing required parameter: 'NAME'", "inspect", "--backend", local),
                row("two lock names", "Unmatched argument", "release", "a", "b", "--force", "--backend", local),
                row("unknown subcommand", "'frobnicate'", "frobnicate"),
                row("no subcommand", "Missing required subcommand"),
                row("help for an unknown subcommand", "Unknown subcommand 'nosuch'", "help", "nosuch"),
                row("bad namespace: slash", "namespace must be", "inspect", "x", "--namespace", "a/b", "--backend",
                        local),
                row("bad namespace: empty", "namespace must be", "inspect", "x", "--namespace", "", "--backend",
                        redisUri),
                row("bad namespace: 65 characters", "namespace must be", "inspect", "x", "--namespace",
                        "n".repeat(65), "--backend", local)));
        return rows.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    @DisplayName("in this JVM: status 2, one line on stderr naming the problem, nothing else, nothing left")
    void oneLineAndNothingLeft(String what, List<String> args, String expected) throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        long redisClients = redisClients();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();

        Future<Integer> run = runner.submit(() -> Locksmith.run(args.toArray(String[]::new),
                new PrintWriter(out, true), new PrintWriter(err, true)));
        int status;
        try {
            status = run.get(HANG_GUARD.toSeconds(), TimeUnit.SECONDS);
        } catch (TimeoutException hung) {
            run.cancel(true);
            throw new AssertionError(what + ": locksmith " + args.get(0) + " still runs after " + HANG_GUARD);
        }

        assertOneLine(what, status, out.toString(), err.toString(), expected);
        awaitNoNewThreads(what, before);
        Await.until(what + ": Redis connections back to " + redisClients, SETTLE,
                () -> redisClients() == redisClients);
    }

    private static void assertOneLine(String what, int status, String out, String err, String expected) {
        assertThat(status).as("%s: exit status; stderr:%n%s", what, err).isEqualTo(Locksmith.USAGE);
        assertThat(out).as("%s: stdout", what).isEmpty();
        assertThat(err.lines().collect(Collectors.toList())).as("%s: lines on stderr", what).hasSize(1);
        assertThat(err).as("%s: stderr", what)
                .startsWith("locksmith")
                .contains(expected)
                .doesNotContain("\tat ")
                .doesNotContain("Caused by");
        assertThat(err.codePoints().filter(cp -> cp != '\n' && cp != '\r'
                && Character.getType(cp) == Character.CONTROL).count())
                .as("%s: raw control characters on stderr: %s", what, err).isZero();
        for (String secret : SECRETS) {
            assertThat(err).as("%s: stderr shows a password", what).doesNotContain(secret);
        }
    }

    @Test
    @DisplayName("the passwords of a --backend URI, raw and decoded, are what messages are searched for")
    void secretsOfTheBackendUri() {
        BackendOptions options = new BackendOptions();
        options.uri = "redlock://app:pw%2Fone@h1:6379,:second-pw@h2,h3/0";
        assertThat(options.secrets()).containsExactlyInAnyOrder("pw%2Fone", "pw/one", "second-pw");
        options.uri = "jdbc:postgresql://db/app?user=app&password=p%40ss-word&ssl=true";
        assertThat(options.secrets()).containsExactlyInAnyOrder("p%40ss-word", "p@ss-word");
        options.uri = "redis://:ab@h";
        assertThat(options.secrets()).as("too short to search for").isEmpty();
        options.uri = "zookeeper://h1:2181,h2:2181/chroot";
        assertThat(options.secrets()).isEmpty();
        assertThat(options.shownUri()).isEqualTo("zookeeper://h1:2181,h2:2181/chroot");
        options.uri = "redis://app:top/secret@h:6379";
        assertThat(options.shownUri()).isEqualTo("redis://***@h:6379");
        options.uri = "jdbc:mariadb://root:pw@db/app?user=x&password=p@ss";
        assertThat(options.shownUri()).isEqualTo("jdbc:mariadb://***@db/app?user=x&password=***");
    }

    // ------------------------------------------------------------------------------- holds on real servers

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"redis", "zookeeper", "mariadb", "postgresql"})
    @DisplayName("a release by a client without the right credentials fails in one line and the holder keeps its"
            + " lock")
    void failedReleaseLeavesTheHoldAlone(String store) throws Exception {
        String namespace = "hostile" + RANDOM;
        String holderUri;
        List<String> intruders;
        switch (store) {
            case "redis" -> {
                holderUri = "redis://app:" + APP_PASSWORD + "@127.0.0.1:" + redis.port();
                intruders = List.of("redis://other:" + OTHER_PASSWORD + "@127.0.0.1:" + redis.port(),
                        "redis://app:" + WRONG + "@127.0.0.1:" + redis.port(),
                        "redis://:" + WRONG + "@127.0.0.1:" + redis.port(), "redis://127.0.0.1:" + redis.port());
                namespace = "locksmith"; // the app user's keys are locksmith:*
            }
            case "zookeeper" -> {
                holderUri = "zookeeper://app:" + APP_PASSWORD + "@" + zookeeper.getConnectString();
                intruders = List.of("zookeeper://" + zookeeper.getConnectString(),
                        "zookeeper://app:" + WRONG + "@" + zookeeper.getConnectString());
            }
            case "mariadb" -> {
                holderUri = mariadbUrl("user=" + mariadb.user() + "&password=" + mariadb.password()
                        + "&locksmith.table=locksmith_cli_test");
                intruders = List.of(mariadbUrl("user=" + mariadb.user() + "&password=" + WRONG
                        + "&locksmith.table=locksmith_cli_test"));
            }
            default -> {
                holderUri = postgresUrl("user=" + postgres.user() + "&locksmith.table=locksmith_cli_test");
                intruders = List.of(postgresUrl("user=nobody_" + RANDOM.replace('-', '_') + "&password=" + WRONG
                        + "&locksmith.table=locksmith_cli_test"));
            }
        }
        String name = "job:" + store + "-" + RANDOM;
        try (LockProvider holder = LockProvider.open(holderUri, LockOptions.builder().namespace(namespace)
                .build())) {
            DistributedLock lock = holder.getLock(name);
            lock.lock();
            long token = lock.fencingToken();
            for (String intruder : intruders) {
                Set<Thread> before = Thread.getAllStackTraces().keySet();
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                List<String> args = List.of("release", name, "--force", "--timeout", "1s", "--namespace", namespace,
                        "--backend", intruder);
                int status = runner.submit(() -> Locksmith.run(args.toArray(String[]::new),
                        new PrintWriter(out, true), new PrintWriter(err, true))).get(HANG_GUARD.toSeconds(),
                        TimeUnit.SECONDS);
                String expected = switch (store) {
                    case "redis" -> "redis://127.0.0.1:" + redis.port();
                    case "zookeeper" -> "NOAUTH";
                    case "mariadb" -> "Access denied";
                    default -> "does not exist";
                };
                assertOneLine("release --force through " + intruder, status, out.toString(), err.toString(),
                        expected);
                awaitNoNewThreads("release --force through " + intruder, before);
                assertThat(lock.isHeldByCurrentThread()).as("the holder's view after %s", intruder).isTrue();
                assertThat(holder.inspect(name).owner()).as("the store's holder after %s", intruder)
                        .hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
                assertThat(holder.inspect(name).fencingToken()).as("the token after %s", intruder).hasValue(token);
            }
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            assertThat(Locksmith.run(new String[] {"release", name, "--namespace", namespace, "--backend",
                    holderUri}, new PrintWriter(out, true), new PrintWriter(err, true)))
                    .as("release with the right credentials but without --force").isEqualTo(Locksmith.USAGE);
            assertThat(err.toString()).contains("without --force");
            assertThat(holder.inspect(name).owner())
                    .hasValueSatisfying(owner -> assertThat(owner).startsWith(holder.clientId() + "."));
            lock.unlock();
            assertThat(holder.inspect(name).isLocked()).isFalse();
        }
    }

    // --------------------------------------------------------------------------- the real command, its own JVM

    static Stream<Arguments> processCases() {
        String silentPort = Integer.toString(silent.getLocalPort());
        String closed = Integer.toString(closedPort);
        return Stream.of(
                row("unknown option", "Unknown option: '--bogus'", "inspect", "x", "--bogus"),
                row("terminal escape in a name", "control characters", "inspect", "\u001b[2Jx", "--backend",
                        "local://"),
                row("malformed URI with a password", "Malformed lock store URI", "inspect", "x", "--backend",
                        "redis://:" + WRONG + " x@127.0.0.1:6379"),
                row("--timeout too long", "--timeout must be at most 24h", "inspect", "x", "--timeout",
                        "9999999999999999s", "--backend", "local://"),
                row("Redis: wrong password", "refused the password", "inspect", "x", "--backend",
                        "redis://:" + WRONG + "@127.0.0.1:" + redis.port()),
                row("Redis: silent port", "127.0.0.1:" + silentPort, "inspect", "x", "--timeout", "1s",
                        "--backend", redisAt(silent.getLocalPort())),
                row("Redlock: closed ports", "quorum", "inspect", "x", "--timeout", "1s", "--backend",
                        "redlock://127.0.0.1:" + closed + ",127.0.0.1:" + closed + ",127.0.0.1:" + closed),
                row("ZooKeeper: closed port", "operation timeout of 1000 ms", "inspect", "x", "--timeout", "1s",
                        "--backend", "zookeeper://127.0.0.1:" + closed),
                row("ZooKeeper: silent port", "operation timeout of 1000 ms", "inspect", "x", "--timeout", "1s",
                        "--backend", "zookeeper://127.0.0.1:" + silentPort),
                row("MariaDB: wrong password", "Access denied", "release", "x", "--force", "--timeout", "1s",
                        "--backend", mariadbUrl("user=" + mariadb.user() + "&password=" + WRONG)),
                row("MariaDB: closed port", "operation timeout 1000 ms", "inspect", "x", "--timeout", "1s",
                        "--backend", withPort(mariadb.jdbcUrl(), closed)),
                row("PostgreSQL: port abc", "got 'abc'", "inspect", "x", "--backend",
                        withPort(postgres.jdbcUrl(), "abc")),
                row("PostgreSQL: unknown user", "does not exist", "inspect", "x", "--timeout", "1s", "--backend",
                        postgresUrl("user=nobody_" + RANDOM.replace('-', '_') + "&password=" + WRONG)),
                row("PostgreSQL: silent port", "operation timeout 1000 ms", "inspect", "x", "--timeout", "1s",
                        "--backend", withPort(postgres.jdbcUrl(), silentPort)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("processCases")
    @DisplayName("as a process: status 2 and exactly one line on stderr, client libraries' logging included")
    void processPrintsOneLine(String what, List<String> args, String expected) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-cp", System.getProperty("java.class.path"), Locksmith.class.getName()));
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command);
        // the JVM announces these options on stderr itself
        builder.environment().keySet().removeAll(Set.of("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"));
        Process process = builder.start();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(process.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(process.getErrorStream()));
        if (!process.waitFor(HANG_GUARD.toSeconds(), TimeUnit.SECONDS)) {
            process.destroyForcibly();
            fail("%s: the process still runs after %s", what, HANG_GUARD);
        }
        assertOneLine(what, process.exitValue(), out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS),
                expected);
    }

    // ------------------------------------------------------------------------------------------- helpers

    private static String read(InputStream in) {
        try (in) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            in.transferTo(bytes);
            return bytes.toString(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long redisClients() {
        synchronized (redisAdmin) {
            return redisAdmin.clientList().lines().filter(line -> !line.isBlank()).count();
        }
    }

    /** Waits until every thread started since {@code before} has ended, except JVM-wide shared ones. */
    private static void awaitNoNewThreads(String what, Set<Thread> before) throws InterruptedException {
        Set<Thread> known = new HashSet<>(before);
        long deadline = System.nanoTime() + SETTLE.toNanos();
        List<String> left;
        do {
            left = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.isAlive() && !known.contains(t))
                    .map(Thread::getName)
                    .filter(name -> SHARED_THREADS.stream().noneMatch(name::startsWith))
                    .sorted()
                    .toList();
            if (left.isEmpty()) {
                return;
            }
            Thread.sleep(20);
        } while (System.nanoTime() - deadline < 0);
        fail("%s: threads still alive %s after the command returned: %s", what, SETTLE, left);
    }

    /** Polls a condition until it holds or the bound passes. */
    private static final class Await {
        private Await() {
        }

        static void until(String what, Duration bound, java.util.function.BooleanSupplier condition)
                throws InterruptedException {
            long deadline = System.nanoTime() + bound.toNanos();
            while (!condition.getAsBoolean()) {
                if (System.nanoTime() - deadline > 0) {
                    fail("timed out after %s waiting until %s", bound, what);
                }
                Thread.sleep(20);
            }
        }
    }
}
