/**
 * The many-process torture test: {@link io.locksmith.tests.torture.TortureRun} starts worker JVMs that hammer a few
 * locks through a backend while a schedule of {@link io.locksmith.tests.torture.Fault}s (client kill -9, client
 * SIGSTOP, store kill, pause, …) runs, and {@link io.locksmith.tests.torture.TortureChecker} reads their histories
 * into a {@link io.locksmith.tests.torture.TortureReport}: overlapping holds, lost updates on an unguarded counter,
 * fencing tokens that did not grow, stale writes a fenced resource accepted, operations that never finished, and the
 * time to recover from each fault. See {@code docs/reliability.md}.
 *
 * <p>Linux only: the checker compares {@code System.nanoTime()} across processes, which is sound where it is the
 * machine-wide {@code CLOCK_MONOTONIC}, and the runner sends SIGSTOP/SIGCONT with {@code kill(1)}.
 */
package io.locksmith.tests.torture;
