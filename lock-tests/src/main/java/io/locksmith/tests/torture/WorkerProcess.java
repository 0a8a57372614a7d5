package io.locksmith.tests.torture;

import java.util.Set;

/** One worker process of a torture run, as a {@link Fault} sees it. */
public interface WorkerProcess {

    /** The worker's number in the run: 0 to processes − 1 for the first ones, higher for replacements. */
    int id();

    /** The operating-system process id. */
    long pid();

    /** Whether the process is still running (a stopped process is running). */
    boolean isAlive();

    /** Whether the run has stopped the process with SIGSTOP and not resumed it yet. */
    boolean isStopped();

    /** The lock names the worker holds according to its history so far. */
    Set<String> heldNames();
}
