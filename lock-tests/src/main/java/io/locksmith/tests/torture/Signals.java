package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/** SIGSTOP and SIGCONT for worker processes, which the JDK cannot send itself. */
final class Signals {

    private static final long STOP_CONFIRM_NANOS = TimeUnit.SECONDS.toNanos(5);

    private Signals() {
    }

    /**
     * Sends SIGSTOP to {@code pid} and returns once every thread of it is stopped, as {@code /proc} shows; SIGSTOP
     * takes effect asynchronously, and a hold read from the history of a process that still runs is no proof.
     */
    static void stop(long pid) {
        send("STOP", pid);
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        if (!Files.isDirectory(tasks)) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // no /proc: give the signal time to land
            return;
        }
        long deadline = System.nanoTime() + STOP_CONFIRM_NANOS;
        while (!allStopped(tasks)) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("pid " + pid + " did not stop within 5 s of SIGSTOP");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    static void resume(long pid) {
        send("CONT", pid);
    }

    private static boolean allStopped(Path tasks) {
        try (DirectoryStream<Path> threads = Files.newDirectoryStream(tasks)) {
            for (Path thread : threads) {
                String stat;
                try {
                    stat = Files.readString(thread.resolve("stat"), StandardCharsets.US_ASCII);
                } catch (IOException gone) {
                    continue; // the thread ended meanwhile
                }
                // "tid (comm) S …": the state follows the last ')', since comm may hold anything
                char state = stat.charAt(stat.lastIndexOf(')') + 2);
                if (state != 'T' && state != 't' && state != 'Z' && state != 'X') {
                    return false;
                }
            }
            return true;
        } catch (IOException e) {
            return true; // the process is gone
        }
    }

    private static void send(String signal, long pid) {
        ProcessBuilder kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true);
        try {
            Process sender = kill.start();
            String output = new String(sender.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!sender.waitFor(10, TimeUnit.SECONDS) || sender.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Could not run kill -" + signal + " " + pid, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while sending SIG" + signal + " to pid " + pid, e);
        }
    }
}
