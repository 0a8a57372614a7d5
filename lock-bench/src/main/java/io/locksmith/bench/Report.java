package io.locksmith.bench;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes {@code benchmarks.md} from the raw results of one run ({@code benchmarks/jmh.json}, {@code run.json},
 * {@code renewal.json}): machine facts, a table per scenario, and each Locksmith backend's ratio to its peers and to
 * the floor, all from the same run.
 */
public final class Report {

    private static final List<String[]> SCENARIOS = List.of(
            new String[] {"CycleBenchmark.cycle", "Uncontended cycle",
                "one thread, `lock()` + `unlock()` on one name"},
            new String[] {"ReentrantBenchmark.reenter", "Reentrant",
                "one thread already holds the lock; `lock()` + `unlock()` of one more hold"},
            new String[] {"ContendedBenchmark.handoff", "Contended",
                "8 threads over 4 providers (4 \"processes\"), one name, empty critical section; a sample is one"
                        + " thread's `lock()` (its wait) + `unlock()`, ops/s are handoffs per second"},
            new String[] {"ManyNamesBenchmark.randomName", "Many names",
                "8 threads over 4 providers, 1 000 names chosen uniformly at random"});

    private static final String[] PERCENTILES = {"50.0", "90.0", "99.0", "99.9", "100.0"};

    private Report() {
    }

    /** Regenerates {@code DIR/benchmarks.md} from {@code DIR/benchmarks/*.json}; the argument is DIR [docs]. */
    public static void main(String[] args) throws IOException {
        write(Path.of(args.length > 0 ? args[0] : "docs"));
    }

    static void write(Path out) throws IOException {
        Path raw = out.resolve("benchmarks");
        JsonArray jmh = JsonParser.parseString(jmhJson(raw)).getAsJsonArray();
        JsonObject run = JsonParser.parseString(Files.readString(raw.resolve("run.json"))).getAsJsonObject();
        JsonArray renewal = JsonParser.parseString(Files.readString(raw.resolve("renewal.json"))).getAsJsonArray();
        JsonArray commands = JsonParser.parseString(Files.readString(raw.resolve("commands.json"))).getAsJsonArray();
        // where the run's figures are explained (profiles, causes, bounds): written by hand, kept across runs
        Path analysis = raw.resolve("analysis.md");
        String page = render(jmh, run, renewal, commands);
        if (Files.exists(analysis)) {
            page = page + "\n" + Files.readString(analysis);
        }
        Files.writeString(out.resolve("benchmarks.md"), page);
    }

    /** {@code jmh.json}, or {@code jmh.json.gz} as the repository keeps it. */
    private static String jmhJson(Path raw) throws IOException {
        Path plain = raw.resolve("jmh.json");
        if (Files.exists(plain)) {
            return Files.readString(plain);
        }
        try (var in = new java.util.zip.GZIPInputStream(Files.newInputStream(raw.resolve("jmh.json.gz")))) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    /** One subject's result in one scenario. */
    record Row(String subject, int threads, double meanMicros, Map<String, Double> percentiles, long samples) {

        double opsPerSecond() {
            return threads * 1e6 / meanMicros;
        }
    }

    static String render(JsonArray jmh, JsonObject run, JsonArray renewal, JsonArray commands) {
        StringBuilder md = new StringBuilder();
        String label = run.get("label").getAsString();
        md.append("# Benchmarks\n\n");
        if (!label.equals("full run")) {
            md.append("> **").append(label).append("**: shorter than the documented full run, so the figures are"
                    + " noisier. Regenerate with `scripts/bench` (see [Running](#running)).\n\n");
        }
        md.append("Every backend against its peer libraries and the bare-client floor, against the very same servers"
                + " in one run, on one machine. Produced by `").append(run.get("command").getAsString())
                .append("` on ").append(run.get("date").getAsString()).append(" (").append(label).append(").\n\n");
        md.append("## Machine\n\n| | |\n|---|---|\n");
        for (String key : List.of("cores", "cpu", "memory", "os", "jdk", "jmh")) {
            md.append("| ").append(key).append(" | ").append(run.get(key).getAsString()).append(" |\n");
        }
        for (Map.Entry<String, JsonElement> server : run.getAsJsonObject("servers").entrySet()) {
            md.append("| ").append(server.getKey()).append(" | ").append(server.getValue().getAsString())
                    .append(" |\n");
        }
        for (Map.Entry<String, JsonElement> library : run.getAsJsonObject("libraries").entrySet()) {
            md.append("| ").append(library.getKey()).append(" | ").append(library.getValue().getAsString())
                    .append(" |\n");
        }
        md.append("\nServers and clients share the machine's cores, so these are latency-bound figures of a small"
                + " box, comparable only within the run. JMH mode SampleTime: every figure comes from the sampled"
                + " durations of one benchmark operation; ops/s = threads / mean duration.\n");

        Map<String, Map<String, Row>> byScenario = new LinkedHashMap<>();
        for (JsonElement element : jmh) {
            JsonObject result = element.getAsJsonObject();
            String benchmark = result.get("benchmark").getAsString();
            String scenario = benchmark.substring(benchmark.lastIndexOf('.', benchmark.lastIndexOf('.') - 1) + 1);
            JsonObject metric = result.getAsJsonObject("primaryMetric");
            Map<String, Double> percentiles = new LinkedHashMap<>();
            JsonObject given = metric.getAsJsonObject("scorePercentiles");
            for (String p : PERCENTILES) {
                percentiles.put(p, given.get(p).getAsDouble());
            }
            long samples = 0;
            if (metric.has("rawDataHistogram")) {
                for (JsonElement fork : metric.getAsJsonArray("rawDataHistogram")) {
                    for (JsonElement iteration : fork.getAsJsonArray()) {
                        for (JsonElement bucket : iteration.getAsJsonArray()) {
                            samples += bucket.getAsJsonArray().get(1).getAsLong();
                        }
                    }
                }
            }
            String subject = result.getAsJsonObject("params").get("subject").getAsString();
            byScenario.computeIfAbsent(scenario, s -> new LinkedHashMap<>()).put(subject,
                    new Row(subject, result.get("threads").getAsInt(), metric.get("score").getAsDouble(),
                            percentiles, samples));
        }

        String masters = redlockMasters(run);
        md.append(targets(byScenario, renewal, masters));
        md.append(subjects(masters));

        for (String[] scenario : SCENARIOS) {
            Map<String, Row> rows = byScenario.get(scenario[0]);
            if (rows == null) {
                continue;
            }
            md.append("\n## ").append(scenario[1]).append("\n\n").append(scenario[2]).append(".\n\n");
            md.append("| subject | ops/s | mean µs | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | samples |\n");
            md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            for (Row row : rows.values()) {
                md.append("| ").append(row.subject()).append(" | ").append(num(row.opsPerSecond())).append(" | ")
                        .append(num(row.meanMicros()));
                for (String p : PERCENTILES) {
                    md.append(" | ").append(num(row.percentiles().get(p)));
                }
                md.append(" | ").append(row.samples()).append(" |\n");
            }
            md.append("\nLocksmith's ratio to each peer and to the floor (ops/s ratio: above 1 means Locksmith is"
                    + " faster; p99 ratio: below 1 means Locksmith's tail is shorter):\n\n");
            md.append("| store | Locksmith ops/s | against | their ops/s | ops/s ratio | p99 ratio |\n");
            md.append("|---|---:|---|---:|---:|---:|\n");
            for (String[] subjects : orderedStores()) {
                Row ours = rows.get(subjects[0]);
                if (ours == null) {
                    continue;
                }
                for (int i = 1; i < subjects.length; i++) {
                    Row theirs = rows.get(subjects[i]);
                    if (theirs == null) {
                        continue;
                    }
                    md.append("| ").append(subjects[0].substring(0, subjects[0].indexOf('-'))).append(" | ")
                            .append(num(ours.opsPerSecond())).append(" | ").append(subjects[i]).append(" | ")
                            .append(num(theirs.opsPerSecond())).append(" | ")
                            .append(ratio(ours.opsPerSecond() / theirs.opsPerSecond())).append(" | ")
                            .append(ratio(ours.percentiles().get("99.0") / theirs.percentiles().get("99.0")))
                            .append(" |\n");
                }
            }
        }

        md.append("\n## Renewal at scale\n\n")
                .append("One thread holds N locks on one provider (lease 3 s, renewed every 1 s: Locksmith's")
                .append(" `renewInterval`, Redisson's `lockWatchdogTimeout` / 3) for several periods. Redis's")
                .append(" `INFO commandstats` counts the commands the server ran meanwhile: calls are the client's")
                .append(" calls (script calls and pings), the commands column also lists those the scripts ran.")
                .append(" The JVM counts threads and process CPU. A plain measured program, not JMH.\n\n");
        md.append("| subject | locks | periods | calls / period | calls / 100 locks / period | commands |"
                + " process CPU ms / period | threads before → holding → after periods | acquire all, ms |\n");
        md.append("|---|---:|---:|---:|---:|---|---:|---|---:|\n");
        for (JsonElement element : renewal) {
            JsonObject r = element.getAsJsonObject();
            StringBuilder counted = new StringBuilder();
            for (Map.Entry<String, JsonElement> c : r.getAsJsonObject("commands").entrySet()) {
                counted.append(counted.length() == 0 ? "" : ", ").append(c.getKey()).append(' ')
                        .append(c.getValue().getAsLong());
            }
            md.append("| ").append(r.get("subject").getAsString()).append(" | ").append(r.get("locks").getAsInt())
                    .append(" | ").append(num(r.get("periods").getAsDouble())).append(" | ")
                    .append(num(r.get("callsPerPeriod").getAsDouble())).append(" | ")
                    .append(num(r.get("callsPer100LocksPerPeriod").getAsDouble())).append(" | ")
                    .append(counted).append(" | ").append(num(r.get("processCpuMsPerPeriod").getAsDouble()))
                    .append(" | ").append(r.get("threadsBefore").getAsInt()).append(" → ")
                    .append(r.get("threadsHolding").getAsInt()).append(" → ")
                    .append(r.get("threadsAfterPeriods").getAsInt()).append(" | ")
                    .append(num(r.get("acquireAllMs").getAsDouble())).append(" |\n");
        }
        md.append("\n## Redis commands per uncontended cycle\n\nWhat one `lock()` + `unlock()` costs the server,")
                .append(" counted with `INFO commandstats` over 1 000 cycles: `evalsha`/`eval` are round trips, the")
                .append(" commands after them run inside those scripts.\n\n")
                .append("| subject | commands per cycle |\n|---|---|\n");
        for (JsonElement element : commands) {
            JsonObject c = element.getAsJsonObject();
            StringBuilder list = new StringBuilder();
            // round trips first, then what the scripts ran, alphabetically
            List<Map.Entry<String, JsonElement>> sorted = c.getAsJsonObject("commandsPerCycle").entrySet().stream()
                    .filter(e -> e.getValue().getAsDouble() >= 0.01)
                    .sorted(Comparator.comparing((Map.Entry<String, JsonElement> e) -> !e.getKey().startsWith("eval"))
                            .thenComparing(Map.Entry::getKey))
                    .toList();
            for (Map.Entry<String, JsonElement> command : sorted) {
                list.append(list.length() == 0 ? "" : ", ").append(command.getKey()).append(' ')
                        .append(num(command.getValue().getAsDouble()));
            }
            md.append("| ").append(c.get("subject").getAsString()).append(" | ").append(list).append(" |\n");
        }
        md.append("\n## Running\n\n```sh\nscripts/bench                 # the full run, about 30 minutes on 2 cores\n"
                + "scripts/bench --include 'Cycle.*' --warmup 1 --iterations 2   # a subset, shorter\n```\n\n"
                + "It builds `lock-bench`, starts the servers with the lock-tests fixtures (a `redis-server` of its own"
                + " plus five for Redlock, or N with `-Dbench.redlock.masters=N` on BenchMain's `java` command line,"
                + " e.g. through `JAVA_TOOL_OPTIONS`; an in-JVM ZooKeeper, MariaDB and PostgreSQL at their local"
                + " ports), runs"
                + " JMH (defaults: 1 fork, warmup 2 × 5 s, measurement 3 × 5 s; `--forks`, `--warmup`,"
                + " `--warmup-time`, `--iterations`, `--time`, `--include` change them), measures renewal at scale,"
                + " and writes this page from the raw results kept beside it in"
                + " [benchmarks/](benchmarks/) (`jmh.json`, stored gzipped here as `jmh.json.gz` to keep the"
                + " repository small, `run.json`, `renewal.json`, `commands.json`), followed"
                + " by `analysis.md` from there, written by hand. The page"
                + " alone is regenerated from those with\n`java -cp \"lock-bench/target/classes:$(cat"
                + " lock-bench/target/classpath.txt)\" io.locksmith.bench.Report docs`. `--prof PROFILER` adds a"
                + " JMH profiler to a run (`gc`, or `jfr` for a flight recording per benchmark); `--paired A,B,…"
                + " [ROUNDS [CYCLES]]` interleaves the uncontended cycles of some subjects in one JVM instead, for"
                + " a machine too busy for one subject after the other, and reports the CPU each subject's cycles"
                + " used (the client JVM's and the `redis-server` processes'); `--multiprocess SUBJECT[,…]` runs"
                + " several worker JVMs on one lock instead and prints a table of its own (see [Several processes"
                + " on one lock](#several-processes-on-one-lock)).\n\nThe smoke form, one"
                + " 100 ms iteration of every benchmark without forking plus a small renewal run, runs in"
                + " `mvn verify` (`BenchmarkSmokeTest`, about 50 s) and fails the build if a benchmark throws; it"
                + " asserts nothing about speed; `MultiProcessSmokeTest` runs the multi-process form there with"
                + " 2 processes × 2 threads for 2 s on Redis.\n");
        return md.toString();
    }

    /** DESIGN.md's performance targets, each with the measurement of this run that decides it. */
    private static String targets(Map<String, Map<String, Row>> runs, JsonArray renewal, String masters) {
        StringBuilder md = new StringBuilder("\n## Targets (DESIGN.md)\n\n| target | measured in this run | met? |\n"
                + "|---|---|---|\n");
        String cycle = SCENARIOS.get(0)[0];
        String reentrant = SCENARIOS.get(1)[0];
        String contended = SCENARIOS.get(2)[0];
        String many = SCENARIOS.get(3)[0];
        ratioTarget(md, runs, "Redis uncontended cycle ≥ 0.95× the protocol floor (Locksmith's own two scripts on"
                + " one bare connection, `redis-floor-scripts`: no client machinery at all)", cycle,
                "redis-locksmith", "redis-floor-scripts", 0.95);
        Row protocol = row(runs, cycle, "redis-floor-scripts");
        Row trivial = row(runs, cycle, "redis-floor");
        if (protocol != null && trivial != null) {
            md.append("| … the protocol floor against the bare floor (`redis-floor`, a trivial script): the scripts'"
                    + " own work | ").append(num(protocol.opsPerSecond())).append(" against ")
                    .append(num(trivial.opsPerSecond())).append(" ops/s: ")
                    .append(ratio(protocol.opsPerSecond() / trivial.opsPerSecond())).append(" | not a target |\n");
        }
        ratioTarget(md, runs, "Redis uncontended cycle faster than Redisson `RLock`", cycle, "redis-locksmith",
                "redis-redisson", 1.0);
        Row reenter = row(runs, reentrant, "redis-locksmith");
        Row floor = row(runs, cycle, "redis-floor");
        if (reenter != null && floor != null) {
            double roundTrip = floor.meanMicros() / 2;
            md.append("| Redis reentrant acquire costs 0 round trips | mean ").append(num(reenter.meanMicros()))
                    .append(" µs for acquire + release against ").append(num(roundTrip))
                    .append(" µs for one bare round trip | ").append(reenter.meanMicros() < roundTrip / 10 ? "yes"
                            : "**no**").append(" |\n");
        }
        ratioTarget(md, runs, "Redis contended handoffs ≥ 2× Redisson", contended, "redis-locksmith",
                "redis-redisson", 2.0);
        Row ours = row(runs, contended, "redis-locksmith");
        Row theirs = row(runs, contended, "redis-redisson");
        if (ours != null && theirs != null) {
            md.append("| Redis contended: a bounded tail of wait times | p99 / p99.9 / max ")
                    .append(num(ours.percentiles().get("99.0"))).append(" / ")
                    .append(num(ours.percentiles().get("99.9"))).append(" / ")
                    .append(num(ours.percentiles().get("100.0"))).append(" µs (Redisson ")
                    .append(num(theirs.percentiles().get("99.0"))).append(" / ")
                    .append(num(theirs.percentiles().get("99.9"))).append(" / ")
                    .append(num(theirs.percentiles().get("100.0"))).append(" µs) | ")
                    .append(ours.percentiles().get("100.0") <= theirs.percentiles().get("100.0")
                            ? "yes, shorter than Redisson's" : "**no**, longer than Redisson's").append(" |\n");
        }
        for (JsonElement element : renewal) {
            JsonObject r = element.getAsJsonObject();
            if (!r.get("subject").getAsString().equals("redis-locksmith")) {
                continue;
            }
            double per100 = r.get("callsPer100LocksPerPeriod").getAsDouble();
            md.append("| ").append(r.get("locks").getAsInt()).append(" held locks renew with ~1 call per 100 locks per")
                    .append(" period | ").append(num(per100)).append(" calls per 100 locks per period | ")
                    .append(per100 <= 1.5 ? "yes" : "**no**").append(" |\n");
            int before = r.get("threadsBefore").getAsInt();
            int holding = r.get("threadsHolding").getAsInt();
            int after = r.get("threadsAfterPeriods").getAsInt();
            md.append("| … with a constant number of threads | ").append(before).append(" before opening, ")
                    .append(holding).append(" holding, ").append(after).append(" after the periods | ")
                    .append(holding == after && holding - before <= 4 ? "yes" : "**no**").append(" |\n");
        }
        for (String scenario : List.of(cycle, contended, many)) {
            String name = scenario.substring(0, scenario.indexOf("Benchmark"));
            ratioTarget(md, runs, "ZooKeeper at least as fast as Curator `InterProcessMutex` (" + name + ")",
                    scenario, "zookeeper-locksmith", "zookeeper-curator", 1.0);
        }
        for (String database : List.of("mariadb", "postgres")) {
            for (String scenario : List.of(cycle, contended, many)) {
                String name = scenario.substring(0, scenario.indexOf("Benchmark"));
                ratioTarget(md, runs, "JDBC lease mode (" + database + ") faster than Spring `JdbcLockRegistry` ("
                        + name + ")", scenario, database + "-locksmith", database + "-spring", 1.0);
            }
            ratioTarget(md, runs, "JDBC lease cycle (" + database + ") at least as fast as ShedLock's", cycle,
                    database + "-locksmith", database + "-shedlock", 1.0);
            ratioTarget(md, runs, "JDBC lease cycle (" + database + ") ≥ 0.9× the floor of two bare statements",
                    cycle, database + "-locksmith", database + "-floor", 0.9);
        }
        Row redlock = row(runs, cycle, "redlock-locksmith");
        Row single = row(runs, cycle, "redis-locksmith");
        Row scriptsFanOut = row(runs, cycle, "redlock-floor-scripts");
        // The best any client running the contract's scripts did on these masters, against the target's
        // own yardstick: above 1.5, the target is out of reach of every client on this machine.
        double protocolBound = scriptsFanOut != null && single != null
                ? scriptsFanOut.meanMicros() / single.meanMicros() : 0;
        if (redlock != null && single != null) {
            double slower = redlock.meanMicros() / single.meanMicros();
            md.append("| Redlock cycle latency close to one node's (taken as ≤ 1.5×) | ")
                    .append(num(redlock.meanMicros())).append(" µs against ").append(num(single.meanMicros()))
                    .append(" µs on one node: ").append(ratio(slower)).append(" | ")
                    .append(slower <= 1.5 ? "yes" : protocolBound > 1.5
                            ? "**no**: out of reach on this machine, see the protocol's bound two rows down"
                            : "**no**").append(" |\n");
        }
        Row fanOut = row(runs, cycle, "redlock-floor");
        Row oneNode = row(runs, cycle, "redis-floor");
        if (fanOut != null && oneNode != null) {
            double bound = fanOut.meanMicros() / oneNode.meanMicros();
            md.append("| … the bound this machine sets: one thread writing a trivial script call to all " + masters
                    + " masters before reading their answers (`redlock-floor`) against one master (`redis-floor`) | ")
                    .append(num(fanOut.meanMicros())).append(" µs against ").append(num(oneNode.meanMicros()))
                    .append(" µs: ").append(ratio(bound)).append(" | ").append(bound <= 1.5 ? "within reach"
                            : "**out of reach** of any client here: every master's share of the work needs CPU,"
                            + " and the machine's cores (see Machine) serve " + masters + " servers and the client")
                    .append(" |\n");
        }
        if (scriptsFanOut != null && single != null) {
            md.append("| … the bound the protocol sets: a bare client writing Locksmith's own acquire and release"
                    + " scripts to all " + masters + " masters before reading their answers"
                    + " (`redlock-floor-scripts`) against Locksmith on one master (`redis-locksmith`) | ")
                    .append(num(scriptsFanOut.meanMicros())).append(" µs against ").append(num(single.meanMicros()))
                    .append(" µs: ").append(ratio(protocolBound)).append(" | ").append(protocolBound <= 1.5
                            ? "within reach" : "**out of reach** of any client running these scripts here: " + masters
                            + " servers' script work and the client share the machine's cores (see Machine)")
                    .append(" |\n");
            if (redlock != null) {
                double over = redlock.meanMicros() / scriptsFanOut.meanMicros();
                // Not a target of its own, and two subjects measured minutes apart differ by up to ~20 % here:
                // the interleaved comparison in analysis.md is the finer measure of the client's share.
                md.append("| … Redlock cycle against that protocol floor (what Locksmith's client side adds) | ")
                        .append(num(redlock.meanMicros())).append(" µs against ")
                        .append(num(scriptsFanOut.meanMicros())).append(" µs: ").append(ratio(over))
                        .append(" | not a target; interleaved figures in the analysis below |\n");
            }
        }
        md.append("\nThe subjects of this run were measured one after another; on a machine whose speed drifts by"
                + " 20 % within minutes, a ratio near its target is decided by the interleaved runs (`--paired`)"
                + " and the multi-process runs (`--multiprocess`, for DESIGN.md's target on several processes) in the"
                + " analysis below.\n");
        return md.toString();
    }

    private static Row row(Map<String, Map<String, Row>> runs, String scenario, String subject) {
        Map<String, Row> rows = runs.get(scenario);
        return rows == null ? null : rows.get(subject);
    }

    private static void ratioTarget(StringBuilder md, Map<String, Map<String, Row>> runs, String target,
            String scenario, String ours, String theirs, double atLeast) {
        Row a = row(runs, scenario, ours);
        Row b = row(runs, scenario, theirs);
        if (a == null || b == null) {
            return;
        }
        double value = a.opsPerSecond() / b.opsPerSecond();
        md.append("| ").append(target).append(" | ").append(num(a.opsPerSecond())).append(" against ")
                .append(num(b.opsPerSecond())).append(" ops/s: ").append(ratio(value)).append(" | ")
                .append(value >= atLeast ? "yes" : "**no**").append(" |\n");
    }

    /** What each subject is, in the configuration measured. */
    private static String subjects(String masters) {
        return "\n## Subjects\n\n"
                + "Each library in its default configuration, as an application would first use it; every subject"
                + " opens its own clients (4 of them in the 8-thread scenarios, one \"process\" each).\n\n"
                + "| subject | what |\n|---|---|\n"
                + "| `*-locksmith` | `LockProvider.open(uri, LockOptions.defaults())`: lease 30 s renewed every 10 s,"
                + " JDBC in lease mode with its own HikariCP pool |\n"
                + "| `redis-redisson`, `redis-redisson-fenced` | Redisson `RLock` / `RFencedLock`, single-server"
                + " config, defaults (watchdog 30 s) |\n"
                + "| `redis-spring-pubsub`, `redis-spring-spin` | Spring Integration `RedisLockRegistry` over Lettuce,"
                + " `PUB_SUB_LOCK` / `SPIN_LOCK` (100 ms between tries) |\n"
                + "| `redlock-*` | 5 independent Redis masters; Redisson: `RedissonRedLock` over 5 clients |\n"
                + "| `zookeeper-curator` | Curator `InterProcessMutex`, one Curator client per contender |\n"
                + "| `*-spring` (JDBC) | Spring Integration `JdbcLockRegistry` + `DefaultLockRepository` (HikariCP,"
                + " `INT_LOCK` table from the jar's DDL, 100 ms between tries) |\n"
                + "| `*-shedlock` | ShedLock `JdbcTemplateLockProvider` (its JDBC provider since 7.0): it never waits, so cycle only |\n"
                + "| `redis-floor` | bare Jedis: two `EVALSHA` of a trivial loaded script on one connection |\n"
                + "| `redis-floor-scripts` | bare Jedis: Locksmith's own acquire and release scripts, as its Redis"
                + " backend calls them, on one connection: the protocol's floor |\n"
                + "| `redlock-floor` | bare Jedis, one connection per master: a trivial loaded script call written to"
                + " all " + masters + " masters before reading their answers, once to acquire and once to release |\n"
                + "| `redlock-floor-scripts` | the same, with Locksmith's own acquire and release scripts as its"
                + " Redis backend calls them: the protocol's floor over " + masters + " masters |\n"
                + "| `zookeeper-floor` | bare Curator: `create(EPHEMERAL_SEQUENTIAL)` + `getChildren` to acquire,"
                + " `delete` to release |\n"
                + "| `*-floor` (JDBC) | one `UPDATE` to acquire and one to release on one bare auto-commit"
                + " connection |\n"
                + "| `local-locksmith` | the in-JVM `local://` store: the machinery's own cost, no network (its 4"
                + " contenders are 4 providers on one in-JVM server) |\n";
    }

    /**
     * How many Redlock masters the run used, in words, from its Machine table ("5 × local redis-server …"); the
     * default count where the run recorded none.
     */
    static String redlockMasters(JsonObject run) {
        int count = Servers.DEFAULT_REDLOCK_MASTERS;
        JsonObject servers = run.getAsJsonObject("servers");
        JsonElement masters = servers == null ? null : servers.get("Redlock masters");
        if (masters != null) {
            Matcher counted = Pattern.compile("^(\\d+) ×").matcher(masters.getAsString());
            if (counted.find()) {
                count = Integer.parseInt(counted.group(1));
            }
        }
        String[] words = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
        return count < words.length ? words[count] : Integer.toString(count);
    }

    private static List<String[]> orderedStores() {
        return List.of("redis", "redlock", "zookeeper", "mariadb", "postgres").stream()
                .map(Subjects.BY_STORE::get).toList();
    }

    static String num(double value) {
        if (value >= 100) {
            return String.format(Locale.ROOT, "%,.0f", value);
        }
        if (value >= 10) {
            return String.format(Locale.ROOT, "%.1f", value);
        }
        return String.format(Locale.ROOT, "%.2f", value);
    }

    private static String ratio(double value) {
        if (value >= 10) {
            return String.format(Locale.ROOT, "%,.0f×", value);
        }
        if (value >= 0.01) {
            return String.format(Locale.ROOT, "%.2f×", value);
        }
        return String.format(Locale.ROOT, "%.1e×", value);
    }
}
