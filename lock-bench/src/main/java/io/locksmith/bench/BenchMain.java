package io.locksmith.bench;

import com.google.gson.GsonBuilder;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import redis.clients.jedis.Jedis;

/**
 * The benchmark run: starts the servers with the lock-tests fixtures, runs every JMH scenario for every subject
 * against them, measures renewal at scale, and writes the raw results and {@code benchmarks.md}.
 *
 * <p>Arguments (defaults in brackets): {@code --out DIR} [docs], {@code --forks N} [1], {@code --warmup N} [2],
 * {@code --warmup-time T} [5s], {@code --iterations N} [3], {@code --time T} [5s], {@code --include REGEX} [all],
 * {@code --subjects A,B} [each scenario's own list],
 * {@code --renewal-locks N} [10000], {@code --renewal-periods N} [5], {@code --label TEXT} ["full run" with
 * these defaults, "preliminary: shortened run" otherwise],
 * {@code --command TEXT} [scripts/bench], {@code --prof PROFILER} [none; a JMH profiler such as {@code gc},
 * {@code jfr} or {@code stack}, for finding where a subject spends its time]. Times are JMH's ({@code 5s},
 * {@code 100ms}).
 *
 * <p>{@code --paired A,B,… [ROUNDS [CYCLES]]} instead starts the servers and interleaves the uncontended cycles of the
 * given subjects in this JVM ({@link Paired}; defaults 30 rounds of 1000 cycles), for a machine too busy for JMH.
 *
 * <p>{@code --multiprocess SUBJECT[,SUBJECT...]|all [--processes K] [--threads T] [--seconds S] [--hold-ms H]}
 * instead starts the servers those subjects need and runs, for each subject, K worker JVMs of T threads contending
 * for one lock for S seconds with a critical section of H ms ({@link MultiProcess}; defaults 4, 2, 15, 1), and
 * prints one Markdown table row per subject; it exits 1 if any subject failed or let two holders overlap.
 */
public final class BenchMain {

    private BenchMain() {
    }

    /** Runs the benchmarks; exits non-zero if any benchmark fails. */
    public static void main(String[] args) throws Exception {
        if (args.length > 1 && args[0].equals("--paired")) {
            try (Servers servers = Servers.start()) {
                System.out.print(Paired.run(args[1].split(","), args.length > 2 ? Integer.parseInt(args[2]) : 30,
                        args.length > 3 ? Integer.parseInt(args[3]) : 1000));
            }
            System.exit(0);
            return;
        }
        if (args.length > 0 && args[0].equals("--multiprocess")) {
            int status = MultiProcess.main(Arrays.copyOfRange(args, 1, args.length));
            System.out.flush();
            // the in-JVM ZooKeeper's and clients' non-daemon threads must not keep the run alive
            System.exit(status);
            return;
        }
        Settings settings;
        try {
            settings = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\nOptions: --out DIR, --forks N, --warmup N, --warmup-time T,"
                    + " --iterations N, --time T, --include REGEX, --subjects A,B, --renewal-locks N,"
                    + " --renewal-periods N, --label TEXT, --prof PROFILER (see docs/benchmarks.md)");
            System.exit(2);
            return;
        }
        run(settings);
        // the in-JVM ZooKeeper and clients' non-daemon threads must not keep the run alive
        System.exit(0);
    }

    /** What one run does. */
    record Settings(Path out, int forks, int warmup, String warmupTime, int iterations, String time, String include,
                    String subjects, int renewalLocks, int renewalPeriods, String label, String command,
                    String prof) {

        static Settings parse(String... args) {
            Map<String, String> given = new LinkedHashMap<>();
            for (int i = 0; i < args.length; i += 2) {
                if (!args[i].startsWith("--") || i + 1 >= args.length) {
                    throw new IllegalArgumentException("Expected --option value pairs, got '" + args[i] + "'");
                }
                given.put(args[i].substring(2), args[i + 1]);
            }
            Settings settings = new Settings(Path.of(given.getOrDefault("out", "docs")),
                    Integer.parseInt(given.getOrDefault("forks", "1")),
                    Integer.parseInt(given.getOrDefault("warmup", "2")),
                    given.getOrDefault("warmup-time", "5s"),
                    Integer.parseInt(given.getOrDefault("iterations", "3")),
                    given.getOrDefault("time", "5s"),
                    given.getOrDefault("include", ".*Benchmark.*"),
                    given.getOrDefault("subjects", ""),
                    Integer.parseInt(given.getOrDefault("renewal-locks", "10000")),
                    Integer.parseInt(given.getOrDefault("renewal-periods", "5")),
                    given.getOrDefault("label", null),
                    given.getOrDefault("command", "scripts/bench"),
                    given.getOrDefault("prof", ""));
            if (settings.label() == null) {
                boolean full = settings.forks() == 1 && settings.warmup() == 2 && settings.warmupTime().equals("5s")
                        && settings.iterations() == 3 && settings.time().equals("5s")
                        && settings.include().equals(".*Benchmark.*") && settings.subjects().isEmpty()
                        && settings.renewalLocks() == 10_000
                        && settings.renewalPeriods() >= 5 && settings.prof().isEmpty();
                settings = new Settings(settings.out(), settings.forks(), settings.warmup(), settings.warmupTime(),
                        settings.iterations(), settings.time(), settings.include(), settings.subjects(),
                        settings.renewalLocks(),
                        settings.renewalPeriods(), full ? "full run" : "preliminary: shortened run",
                        settings.command(), settings.prof());
            }
            List<String> known = List.of("out", "forks", "warmup", "warmup-time", "iterations", "time", "include",
                    "subjects", "renewal-locks", "renewal-periods", "label", "command", "prof");
            given.keySet().stream().filter(k -> !known.contains(k)).findFirst().ifPresent(k -> {
                throw new IllegalArgumentException("Unknown option --" + k + "; known: " + known);
            });
            return settings;
        }
    }

    /** Runs everything and writes the results under {@code settings.out()}; returns the JMH results. */
    static Collection<RunResult> run(Settings settings) throws Exception {
        Path raw = settings.out().resolve("benchmarks");
        Files.createDirectories(raw);
        Path jmhJson = raw.resolve("jmh.json");
        try (Servers servers = Servers.start()) {
            Map<String, Object> run = facts(settings, servers);
            ChainedOptionsBuilder options = new OptionsBuilder()
                    .include("io\\.locksmith\\.bench\\." + settings.include())
                    .forks(settings.forks())
                    .warmupIterations(settings.warmup())
                    .warmupTime(TimeValue.fromString(settings.warmupTime()))
                    .measurementIterations(settings.iterations())
                    .measurementTime(TimeValue.fromString(settings.time()))
                    .shouldFailOnError(true)
                    .resultFormat(ResultFormatType.JSON)
                    .result(jmhJson.toString())
                    .jvmArgsAppend(servers.jvmArgs().toArray(String[]::new));
            if (!settings.subjects().isEmpty()) {
                options.param("subject", settings.subjects().split(","));
            }
            if (!settings.prof().isEmpty()) {
                int colon = settings.prof().indexOf(':');
                if (colon < 0) {
                    options.addProfiler(settings.prof());
                } else {
                    options.addProfiler(settings.prof().substring(0, colon), settings.prof().substring(colon + 1));
                }
            }
            Collection<RunResult> results;
            try {
                results = new Runner(options.build()).run();
            } catch (RunnerException e) {
                throw new IllegalStateException("A benchmark failed: " + e.getMessage(), e);
            }
            List<Map<String, Object>> renewal = RenewalAtScale.run(settings.renewalLocks(), settings.renewalPeriods());
            write(raw.resolve("run.json"), run);
            write(raw.resolve("renewal.json"), renewal);
            write(raw.resolve("commands.json"), RenewalAtScale.cycleCommands(1000));
            Report.write(settings.out());
            return results;
        }
    }

    private static void write(Path file, Object value) throws IOException {
        Files.writeString(file, new GsonBuilder().setPrettyPrinting().create().toJson(value));
    }

    /** Machine facts, server versions and the settings of the run. */
    private static Map<String, Object> facts(Settings settings, Servers servers) {
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("date", Instant.now().toString());
        facts.put("label", settings.label());
        facts.put("command", settings.command());
        facts.put("jmh", "forks " + settings.forks() + ", warmup " + settings.warmup() + " × " + settings.warmupTime()
                + ", measurement " + settings.iterations() + " × " + settings.time() + ", mode SampleTime");
        facts.put("cores", Runtime.getRuntime().availableProcessors());
        facts.put("cpu", cpuModel());
        facts.put("memory", memory());
        facts.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                + System.getProperty("os.arch"));
        facts.put("jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        Map<String, String> versions = new LinkedHashMap<>(servers.descriptions());
        versions.put("Redis version", redisVersion());
        versions.put("MariaDB version", databaseVersion(Servers.MARIADB));
        versions.put("PostgreSQL version", databaseVersion(Servers.POSTGRES));
        facts.put("servers", versions);
        facts.put("libraries", Map.of(
                "Redisson", String.valueOf(org.redisson.Redisson.class.getPackage().getImplementationVersion()),
                "Curator", String.valueOf(org.apache.curator.framework.CuratorFramework.class.getPackage()
                        .getImplementationVersion()),
                "Spring Integration", String.valueOf(org.springframework.integration.jdbc.lock.JdbcLockRegistry.class
                        .getPackage().getImplementationVersion()),
                "ShedLock", mavenVersion("net.javacrumbs.shedlock", "shedlock-provider-jdbc-template"),
                "Jedis", mavenVersion("redis.clients", "jedis")));
        return facts;
    }

    private static String mavenVersion(String groupId, String artifactId) {
        String resource = "/META-INF/maven/" + groupId + "/" + artifactId + "/pom.properties";
        try (var in = BenchMain.class.getResourceAsStream(resource)) {
            if (in == null) {
                return "unknown";
            }
            java.util.Properties properties = new java.util.Properties();
            properties.load(in);
            return properties.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String cpuModel() {
        try (Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
            return lines.filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).strip())
                    .findFirst().orElse("unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String memory() {
        long bytes = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
        return (bytes >> 20) + " MiB";
    }

    private static String redisVersion() {
        String[] hostPort = Servers.get(Servers.REDIS).split(":");
        try (Jedis jedis = new Jedis(hostPort[0], Integer.parseInt(hostPort[1]))) {
            return jedis.info("server").lines().filter(l -> l.startsWith("redis_version:"))
                    .map(l -> l.substring("redis_version:".length())).findFirst().orElse("unknown");
        }
    }

    private static String databaseVersion(String database) {
        try (Connection connection = DriverManager.getConnection(Servers.get(database + ".url"),
                Servers.get(database + ".user"), Servers.get(database + ".password"))) {
            return connection.getMetaData().getDatabaseProductName() + " "
                    + connection.getMetaData().getDatabaseProductVersion();
        } catch (SQLException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }
}
