package io.locksmith.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.Lock;

/**
 * Uncontended cycles of several subjects interleaved in one JVM, for a machine too busy for JMH's one subject after
 * the other: each round runs a block of cycles of every subject in turn (the order rotating from round to round),
 * and each subject's figure is the median over the rounds of its block's time against the first subject's block of
 * the same round. Noise that lasts longer than a round hits both sides of each ratio alike.
 */
final class Paired {

    private Paired() {
    }

    /** Runs {@code rounds} rounds of {@code cycles} cycles per subject and returns the table, first subject first. */
    static String run(String[] subjects, int rounds, int cycles) throws Exception {
        int n = subjects.length;
        Contender[] contenders = new Contender[n];
        Lock[] locks = new Lock[n];
        double[][] micros = new double[n][rounds];
        try {
            for (int i = 0; i < n; i++) {
                contenders[i] = Subjects.open(subjects[i]);
                locks[i] = contenders[i].lock("bench-paired");
            }
            for (int round = -3; round < rounds; round++) { // three rounds of warm-up
                for (int turn = 0; turn < n; turn++) {
                    int i = (turn + Math.max(round, 0)) % n;
                    Lock lock = locks[i];
                    long start = System.nanoTime();
                    for (int c = 0; c < cycles; c++) {
                        lock.lock();
                        lock.unlock();
                    }
                    if (round >= 0) {
                        micros[i][round] = (System.nanoTime() - start) / 1e3 / cycles;
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
                "%d rounds of %d cycles per subject, interleaved; ratio = %s's block time / the subject's in the same"
                        + " round (above 1: faster than %s)%n%-22s %10s %10s %10s %16s%n", rounds, cycles,
                subjects[0], subjects[0], "subject", "median µs", "p25 µs", "min µs", "ratio (IQR)"));
        for (int i = 0; i < n; i++) {
            double[] ratios = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratios[r] = micros[0][r] / micros[i][r];
            }
            Arrays.sort(ratios);
            double[] sorted = micros[i].clone();
            Arrays.sort(sorted);
            table.append(String.format(Locale.ROOT, "%-22s %10.1f %10.1f %10.1f %6.3f (%.3f-%.3f)%n", subjects[i],
                    sorted[rounds / 2], sorted[rounds / 4], sorted[0], ratios[rounds / 2], ratios[rounds / 4],
                    ratios[3 * rounds / 4]));
        }
        return table.toString();
    }
}
