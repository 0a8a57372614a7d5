package io.locksmith.bench;

import io.locksmith.DistributedLock;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import redis.clients.jedis.Jedis;

/**
 * Renewal at scale, a plain measured program rather than a JMH benchmark: one thread holds many locks on one
 * provider for several lease periods, and Redis's own counters ({@code INFO commandstats}) say how many calls the
 * renewals cost; the JVM says how many threads that took and how much CPU the process burnt meanwhile.
 */
final class RenewalAtScale {

    static final Duration LEASE = Duration.ofSeconds(3);
    static final Duration PERIOD = LEASE.dividedBy(3);

    private RenewalAtScale() {
    }

    /** Measures Locksmith and Redisson, each holding {@code locks} locks for {@code periods} renew periods. */
    static List<Map<String, Object>> run(int locks, int periods) throws Exception {
        List<Map<String, Object>> results = new ArrayList<>();
        results.add(measure("redis-locksmith", locks, periods));
        results.add(measure("redis-redisson", locks, periods));
        return results;
    }

    /** Counts the Redis commands of one uncontended lock + unlock of each subject, over {@code cycles} cycles. */
    static List<Map<String, Object>> cycleCommands(int cycles) throws Exception {
        List<Map<String, Object>> results = new ArrayList<>();
        String[] hostPort = Servers.get(Servers.REDIS).split(":");
        for (String subject : List.of("redis-locksmith", "redis-redisson", "redis-redisson-fenced",
                "redis-spring-pubsub", "redis-spring-spin", "redis-floor")) {
            try (Jedis admin = new Jedis(hostPort[0], Integer.parseInt(hostPort[1]));
                 Contender contender = Subjects.open(subject)) {
                Lock lock = contender.lock("bench-commands");
                lock.lock();
                lock.unlock();
                Map<String, Long> before = commandCalls(admin);
                for (int i = 0; i < cycles; i++) {
                    lock.lock();
                    lock.unlock();
                }
                Map<String, Long> after = commandCalls(admin);
                Map<String, Double> perCycle = new LinkedHashMap<>();
                after.forEach((command, calls) -> {
                    long d = calls - before.getOrDefault(command, 0L) - (command.equals("info") ? 1 : 0);
                    if (d > 0) {
                        perCycle.put(command, (double) d / cycles);
                    }
                });
                Map<String, Object> result = new LinkedHashMap<>();
                result.put("subject", subject);
                result.put("cycles", cycles);
                result.put("commandsPerCycle", perCycle);
                results.add(result);
            }
        }
        return results;
    }

    private static Map<String, Object> measure(String subject, int count, int periods) throws Exception {
        String[] hostPort = Servers.get(Servers.REDIS).split(":");
        int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
        try (Jedis admin = new Jedis(hostPort[0], Integer.parseInt(hostPort[1]));
             Holder holder = open(subject)) {
            List<Lock> held = new ArrayList<>(count);
            long acquireStart = System.nanoTime();
            for (int i = 0; i < count; i++) {
                Lock lock = holder.lock("bench-renew-" + i);
                lock.lock();
                held.add(lock);
            }
            long acquireNanos = System.nanoTime() - acquireStart;
            int threadsHolding = ManagementFactory.getThreadMXBean().getThreadCount();
            // let the first renewals of the acquisition burst pass, then count whole periods
            Thread.sleep(PERIOD.toMillis());
            Map<String, Long> before = commandCalls(admin);
            long cpuBefore = processCpuNanos();
            long start = System.nanoTime();
            Thread.sleep(PERIOD.toMillis() * periods);
            long elapsed = System.nanoTime() - start;
            long cpu = processCpuNanos() - cpuBefore;
            Map<String, Long> after = commandCalls(admin);
            int threadsAfter = ManagementFactory.getThreadMXBean().getThreadCount();
            for (Lock lock : held) {
                lock.unlock();
            }

            double measuredPeriods = (double) elapsed / PERIOD.toNanos();
            Map<String, Long> delta = new LinkedHashMap<>();
            after.forEach((command, calls) -> {
                long d = calls - before.getOrDefault(command, 0L) - (command.equals("info") ? 1 : 0);
                if (d > 0) {
                    delta.put(command, d);
                }
            });
            // commandstats also counts the commands a script runs; the client's calls are the script calls and
            // any command no script runs here (PING from a client's keep-alive)
            long total = delta.entrySet().stream()
                    .filter(e -> e.getKey().startsWith("eval") || e.getKey().startsWith("fcall")
                            || e.getKey().equals("ping"))
                    .mapToLong(Map.Entry::getValue).sum();
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("subject", subject);
            result.put("locks", count);
            result.put("leaseMs", LEASE.toMillis());
            result.put("periodMs", PERIOD.toMillis());
            result.put("periods", measuredPeriods);
            result.put("acquireAllMs", acquireNanos / 1e6);
            result.put("callsPerPeriod", total / measuredPeriods);
            result.put("callsPer100LocksPerPeriod", total / measuredPeriods / count * 100);
            result.put("commands", delta);
            result.put("processCpuMsPerPeriod", cpu / 1e6 / measuredPeriods);
            result.put("threadsBefore", threadsBefore);
            result.put("threadsHolding", threadsHolding);
            result.put("threadsAfterPeriods", threadsAfter);
            return result;
        }
    }

    private interface Holder extends AutoCloseable {
        Lock lock(String name);

        @Override
        void close();
    }

    private static Holder open(String subject) {
        String address = Servers.get(Servers.REDIS);
        if (subject.equals("redis-locksmith")) {
            LockProvider provider = LockProvider.open("redis://" + address,
                    LockOptions.builder().leaseTime(LEASE).renewInterval(PERIOD).build());
            return new Holder() {
                @Override
                public DistributedLock lock(String name) {
                    return provider.getLock(name);
                }

                @Override
                public void close() {
                    provider.close();
                }
            };
        }
        // Redisson's watchdog renews every lockWatchdogTimeout / 3, as Locksmith renews every lease / 3
        Config config = Subjects.redissonConfig(address);
        config.setLockWatchdogTimeout(LEASE.toMillis());
        RedissonClient client = Redisson.create(config);
        return new Holder() {
            @Override
            public Lock lock(String name) {
                return client.getLock("redisson:" + name);
            }

            @Override
            public void close() {
                client.shutdown(0, 5, TimeUnit.SECONDS);
            }
        };
    }

    private static Map<String, Long> commandCalls(Jedis admin) {
        Map<String, Long> calls = new LinkedHashMap<>();
        for (String line : admin.info("commandstats").split("\r?\n")) {
            // cmdstat_evalsha:calls=123,usec=...
            if (line.startsWith("cmdstat_")) {
                String command = line.substring("cmdstat_".length(), line.indexOf(':'));
                String stats = line.substring(line.indexOf(':') + 1);
                for (String field : stats.split(",")) {
                    if (field.startsWith("calls=")) {
                        calls.put(command, Long.parseLong(field.substring("calls=".length())));
                    }
                }
            }
        }
        return calls;
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }
}
