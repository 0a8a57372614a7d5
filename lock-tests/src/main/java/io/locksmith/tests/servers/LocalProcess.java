package io.locksmith.tests.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A server process the tests started, with its own temp directory: it can be killed, paused with SIGSTOP,
 * resumed and restarted with the same command, and never outlives the JVM.
 */
final class LocalProcess implements Control {

    private static final long EXIT_WAIT_SECONDS = 10;

    private final List<String> command;
    private final Path directory;
    private final Path log;
    private Process process;
    private boolean closed;

    private LocalProcess(List<String> command, Path directory, Path log) {
        this.command = List.copyOf(command);
        this.directory = directory;
        this.log = log;
    }

    /**
     * Starts {@code command} in {@code directory}, which the process then owns and deletes on close; stdout and
     * stderr go to {@code directory/<name>.log}.
     */
    static LocalProcess start(String name, List<String> command, Path directory) throws IOException {
        LocalProcess local = new LocalProcess(command, directory, directory.resolve(name + ".log"));
        ExitCleanup.register(local);
        try {
            local.launch();
        } catch (IOException | RuntimeException e) {
            local.close();
            throw e;
        }
        return local;
    }

    private synchronized void launch() throws IOException {
        process = new ProcessBuilder(command)
                .directory(directory.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
    }

    /** Returns the operating-system id of the current process. */
    synchronized long pid() {
        return process.pid();
    }

    /** Returns why the ended process ended, for error messages: its exit code and the last line of its log. */
    private String exitReport() {
        // the log itself goes with the temp directory, so its last line is quoted rather than its path given
        return "exited with code " + process.exitValue() + ", last log line: \"" + lastLogLine() + "\"";
    }

    /** Returns whether the log holds {@code text}; used to recognise e.g. a port already in use. */
    boolean logContains(String text) {
        try (Stream<String> lines = Files.lines(log)) {
            return lines.anyMatch(line -> line.contains(text));
        } catch (IOException | UncheckedIOException e) {
            return false;
        }
    }

    private String lastLogLine() {
        try (Stream<String> lines = Files.lines(log)) {
            return lines.filter(line -> !line.isBlank()).reduce((first, second) -> second).orElse("").strip();
        } catch (IOException | UncheckedIOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    @Override
    public synchronized void checkRunning() {
        if (!process.isAlive()) {
            throw new ServerUnavailableException(String.join(" ", command) + " " + exitReport());
        }
    }

    @Override
    public synchronized void kill() {
        process.destroyForcibly();
        awaitExit();
    }

    @Override
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException("Cannot restart a closed server (" + describe() + ")");
        }
        kill();
        try {
            launch();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not restart " + String.join(" ", command), e);
        }
    }

    @Override
    public synchronized void pause() {
        signal("STOP");
    }

    @Override
    public synchronized void resume() {
        signal("CONT");
    }

    private void signal(String signal) {
        if (!process.isAlive()) {
            throw new IllegalStateException("Cannot send SIG" + signal + " to pid " + process.pid()
                    + ": it is not running (" + exitReport() + ")");
        }
        // the JDK can only send TERM and KILL; kill(1) sends the rest
        ProcessBuilder kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                .redirectErrorStream(true);
        try {
            Process sender = kill.start();
            String output = new String(sender.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!sender.waitFor(EXIT_WAIT_SECONDS, TimeUnit.SECONDS) || sender.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Could not run kill -" + signal + " " + process.pid(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while sending SIG" + signal + " to pid " + process.pid(), e);
        }
    }

    private void awaitExit() {
        try {
            if (!process.waitFor(EXIT_WAIT_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException("pid " + process.pid() + " did not exit within "
                        + EXIT_WAIT_SECONDS + " s of SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while waiting for pid " + process.pid() + " to exit", e);
        }
    }

    @Override
    public String describe() {
        return "own process, pid " + pid();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (process != null) {
                kill();
            }
        } finally {
            deleteDirectory();
            ExitCleanup.unregister(this);
        }
    }

    private void deleteDirectory() {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // a leftover temp directory is harmless; a failing close would hide the test's own failure
        }
    }
}
