package io.locksmith.tests.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A server process the tests started, with its own temp directory: it can be killed, paused with SIGSTOP,
 * resumed and restarted with the same command, and never outlives the JVM.
 *
 * <p>Faults reach the whole process tree, as they would on a real machine: a server that forks workers
 * (PostgreSQL's postmaster and its backends) is killed or frozen with all of them. To kill, the process is frozen
 * first so that it forks no more and cannot react (PostgreSQL's postmaster would otherwise start its own crash
 * recovery when a backend dies), then every process of the tree gets SIGKILL; nothing is written after the first
 * SIGKILL that a crash would have lost.
 */
final class LocalProcess implements Control {

    private static final long EXIT_WAIT_SECONDS = 10;
    private static final int PORT_ATTEMPTS = 3;
    private static final long STOP_CONFIRM_SECONDS = 5;

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

    /** Starts a server process that listens on {@code port}, in a new temp directory of its own. */
    @FunctionalInterface
    interface Launch {
        LocalProcess start(int port) throws IOException;
    }

    /** Waits until a started server serves on {@code port} and returns it; throws if it does not. */
    @FunctionalInterface
    interface Ready<T> {
        T await(int port, LocalProcess process);
    }

    /**
     * Starts a server on a free loopback port and waits until it is ready; if it did not come up because another
     * process took the port meanwhile ("Address already in use" in its log), closes it and tries a new port, three
     * times at most.
     *
     * @throws ServerUnavailableException from {@code ready}, if the server did not come up for another reason or the
     *     port was taken every time
     */
    static <T> T startOnFreePort(Launch launch, Ready<T> ready) throws IOException {
        ServerUnavailableException portTaken = null;
        for (int attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
            int port = Tcp.freePort();
            LocalProcess process = launch.start(port);
            try {
                return ready.await(port, process);
            } catch (ServerUnavailableException e) {
                boolean retry = process.logContains("Address already in use");
                process.close();
                if (!retry) {
                    throw e;
                }
                portTaken = e;
            }
        }
        throw portTaken;
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
        List<ProcessHandle> descendants = process.descendants().toList();
        if (!descendants.isEmpty() && process.isAlive()) {
            signal("STOP", List.of(process.pid()), false); // it may have died by itself meanwhile
            descendants = process.descendants().toList();
            descendants.forEach(ProcessHandle::destroyForcibly);
        }
        process.destroyForcibly();
        awaitExit();
        awaitGone(descendants);
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

    /** Freezes the process and then every process it started, and returns once /proc shows all of them stopped. */
    @Override
    public synchronized void pause() {
        checkAlive("STOP");
        // the parent first, so that it starts no process after the list below was taken
        signal("STOP", List.of(process.pid()), true);
        List<Long> pids = new ArrayList<>(List.of(process.pid()));
        List<Long> descendants = process.descendants().map(ProcessHandle::pid).toList();
        if (!descendants.isEmpty()) {
            signal("STOP", descendants, false); // one may have exited meanwhile
            pids.addAll(descendants);
        }
        awaitStopped(pids);
    }

    @Override
    public synchronized void resume() {
        checkAlive("CONT");
        List<Long> pids = new ArrayList<>(List.of(process.pid()));
        pids.addAll(process.descendants().map(ProcessHandle::pid).toList());
        signal("CONT", pids, pids.size() == 1); // with several, one may have exited meanwhile
    }

    private void checkAlive(String signal) {
        if (!process.isAlive()) {
            throw new IllegalStateException("Cannot send SIG" + signal + " to pid " + process.pid()
                    + ": it is not running (" + exitReport() + ")");
        }
    }

    /**
     * Sends {@code signal} to {@code pids} with kill(1), since the JDK can only send TERM and KILL.
     *
     * @param strict whether a pid that no longer exists is an error
     */
    private static void signal(String signal, List<Long> pids, boolean strict) {
        List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
        pids.forEach(pid -> command.add(Long.toString(pid)));
        String shown = String.join(" ", command);
        try {
            Process sender = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = new String(sender.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!sender.waitFor(EXIT_WAIT_SECONDS, TimeUnit.SECONDS)) {
                sender.destroyForcibly();
                throw new IllegalStateException(shown + " did not finish within " + EXIT_WAIT_SECONDS + " s");
            }
            if (strict && sender.exitValue() != 0) {
                throw new IllegalStateException(shown + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Could not run " + shown, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while running " + shown, e);
        }
    }

    /** Waits until every thread of every one of {@code pids} is stopped (or gone), as /proc shows. */
    private static void awaitStopped(List<Long> pids) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(STOP_CONFIRM_SECONDS);
        for (long pid : pids) {
            while (!ProcState.stopped(pid)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("pid " + pid + " did not stop within " + STOP_CONFIRM_SECONDS
                            + " s of SIGSTOP");
                }
                sleepBriefly();
            }
        }
    }

    /**
     * Waits until the killed processes of the tree are gone. They are not this JVM's children, so once orphaned
     * they may linger as zombies (which hold no memory, files or ports): those count as gone.
     */
    private static void awaitGone(List<ProcessHandle> processes) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(EXIT_WAIT_SECONDS);
        for (ProcessHandle handle : processes) {
            while (ProcState.running(handle)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("pid " + handle.pid() + " did not exit within "
                            + EXIT_WAIT_SECONDS + " s of SIGKILL");
                }
                sleepBriefly();
            }
        }
    }

    private static void sleepBriefly() {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while waiting for a signal to take effect", e);
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
            deleteDirectory(directory);
            ExitCleanup.unregister(this);
        }
    }

    /** Deletes {@code directory} and everything in it, quietly: a leftover temp directory is harmless. */
    static void deleteDirectory(Path directory) {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // a leftover temp directory is harmless; a failing close would hide the test's own failure
        }
    }
}
