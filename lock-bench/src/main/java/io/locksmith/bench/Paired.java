package io.locksmith.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.Lock;

/**
 * Uncontended cycles of several subjects interleaved in one JVM, for a machine too busy for JMH's one subject after
 * the other: each round runs a block of cycles of every subject in turn (the order rotating from round to round),
 * and each subject's figure is the median over the rounds of its block's time against the first subject's block of
 * the same round. Noise that lasts longer than a round hits both sides of each ratio alike.
 *
 * <p>Beside the times, the CPU each subject's cycles used: this JVM's (the client's; the in-JVM servers idle
 * meanwhile) and that of the {@code redis-server} processes the run started, from {@code /proc}. On a machine
 * with fewer cores than busy processes a cycle cannot take less time than its CPU divided by the cores.
 */
final class Paired {

    /** The fewest uncontended cycles of each subject before any counts: C2 compiles a path after some 10,000 calls. */
    static final int WARM_UP_CYCLES = 20_000;

    private Paired() {
    }

    /** Runs {@code rounds} rounds of {@code cycles} cycles per subject and returns the table, first subject first. */
    static String run(String[] subjects, int rounds, int cycles) throws Exception {
        int n = subjects.length;
        Contender[] contenders = new Contender[n];
        Lock[] locks = new Lock[n];
        double[][] micros = new double[n][rounds];
        long[] clientCpuNanos = new long[n];
        long[] redisCpuTicks = new long[n];
        List<Path> redisStats = redisServerStats();
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try {
            for (int i = 0; i < n; i++) {
                contenders[i] = Subjects.open(subjects[i]);
                locks[i] = contenders[i].lock("bench-paired");
            }
            // warm-up: three rounds, and at least WARM_UP_CYCLES of every subject, so that the JIT has compiled
            // each subject's path before its blocks count (the compiler threads' CPU would land in the blocks
            // running meanwhile, and the code under it runs slower until then)
            int warmUpRounds = Math.max(3, (WARM_UP_CYCLES + cycles - 1) / cycles);
            for (int round = -warmUpRounds; round < rounds; round++) {
                for (int turn = 0; turn < n; turn++) {
                    int i = (turn + Math.max(round, 0)) % n;
                    Lock lock = locks[i];
                    long cpu = os.getProcessCpuTime();
                    long ticks = cpuTicks(redisStats);
                    long start = System.nanoTime();
                    for (int c = 0; c < cycles; c++) {
                        lock.lock();
                        lock.unlock();
                    }
                    if (round >= 0) {
                        micros[i][round] = (System.nanoTime() - start) / 1e3 / cycles;
                        clientCpuNanos[i] += os.getProcessCpuTime() - cpu;
                        redisCpuTicks[i] += cpuTicks(redisStats) - ticks;
                    }
                }
            }
        } finally {
            for (Contender contender : contenders) {
                if (contender != null) {
                    contender.close();
                }
            }
        }
        StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                "%d rounds of %d cycles per subject, interleaved, after at least %d of each to warm up; ratio = %s's block time / the subject's in the same"
                        + " round (above 1: faster than %s); CPU µs per cycle: this JVM (client), the redis-server"
                        + " processes (%d found), and their sum over the machine's %d cores%n%-22s %10s %10s %10s"
                        + " %20s %12s %12s %14s%n", rounds, cycles, WARM_UP_CYCLES, subjects[0], subjects[0], redisStats.size(),
                Runtime.getRuntime().availableProcessors(), "subject", "median µs", "p25 µs", "min µs",
                "ratio (IQR)", "client CPU", "redis CPU", "CPU / cores"));
        for (int i = 0; i < n; i++) {
            double[] ratios = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratios[r] = micros[0][r] / micros[i][r];
            }
            Arrays.sort(ratios);
            double[] sorted = micros[i].clone();
            Arrays.sort(sorted);
            double client = clientCpuNanos[i] / 1e3 / rounds / cycles;
            double redis = redisCpuTicks[i] * TICK_MICROS / rounds / cycles;
            table.append(String.format(Locale.ROOT,
                    "%-22s %10.1f %10.1f %10.1f %6.3f (%.3f-%.3f) %12.1f %12.1f %14.1f%n", subjects[i], sorted[rounds / 2], sorted[rounds / 4], sorted[0], ratios[rounds / 2],
                    ratios[rounds / 4], ratios[3 * rounds / 4], client, redis,
                    (client + redis) / Runtime.getRuntime().availableProcessors()));
        }
        return table.toString();
    }

    /** Linux's clock tick ({@code USER_HZ}, 100 on every mainstream architecture), in µs. */
    private static final double TICK_MICROS = 10_000;

    /** The {@code /proc/<pid>/stat} files of the {@code redis-server} processes this JVM started. */
    private static List<Path> redisServerStats() {
        // by the name it was started under: Debian's redis-server is a link to another binary
        return ProcessHandle.current().descendants().map(p -> Path.of("/proc", Long.toString(p.pid())))
                .filter(dir -> {
                    try {
                        return Files.readString(dir.resolve("comm")).trim().equals("redis-server");
                    } catch (IOException gone) {
                        return false;
                    }
                }).map(dir -> dir.resolve("stat")).toList();
    }

    /** User + system CPU of the processes, in clock ticks. */
    private static long cpuTicks(List<Path> stats) {
        long ticks = 0;
        for (Path stat : stats) {
            try {
                String text = Files.readString(stat);
                // fields after the command name, which is in parentheses: state is field 3, utime 14, stime 15
                String[] fields = text.substring(text.lastIndexOf(')') + 2).split(" ");
                ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
            } catch (IOException | RuntimeException gone) {
                // a server that stopped adds nothing
            }
        }
        return ticks;
    }
}
