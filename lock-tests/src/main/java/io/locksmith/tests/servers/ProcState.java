package io.locksmith.tests.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What Linux's {@code /proc} tells about a process that the JDK does not: whether it is stopped, and whether it is
 * a zombie. Without {@code /proc} the answers fall back to what the JDK knows.
 */
final class ProcState {

    private static final Path PROC = Path.of("/proc");

    private ProcState() {
    }

    /** Returns whether every thread of {@code pid} is stopped (SIGSTOP) or the process is gone. */
    static boolean stopped(long pid) {
        Path tasks = PROC.resolve(Long.toString(pid)).resolve("task");
        if (!Files.isDirectory(PROC)) {
            return true; // nothing to confirm with: kill(1) delivered the signal
        }
        try (Stream<Path> threads = Files.list(tasks)) {
            return threads.allMatch(thread -> {
                char state = state(thread.resolve("stat"));
                return state == 'T' || state == 't' || state == 'Z' || state == 'X' || state == '?';
            });
        } catch (NoSuchFileException gone) {
            return true;
        } catch (IOException | UncheckedIOException e) {
            return true; // the process went away while its threads were listed
        }
    }

    /** Returns whether the process runs: exists and is not a zombie. */
    static boolean running(ProcessHandle process) {
        if (!Files.isDirectory(PROC)) {
            return process.isAlive();
        }
        char state = state(PROC.resolve(Long.toString(process.pid())).resolve("stat"));
        return state != 'Z' && state != 'X' && state != '?';
    }

    /** The state letter of a {@code stat} file, or {@code ?} if it cannot be read (the process or thread ended). */
    private static char state(Path stat) {
        String line;
        try {
            line = Files.readString(stat, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return '?';
        }
        // "pid (comm) S ...": the command may hold anything, parentheses too, so the state follows the last ')'
        int close = line.lastIndexOf(')');
        return close >= 0 && close + 2 < line.length() ? line.charAt(close + 2) : '?';
    }
}
