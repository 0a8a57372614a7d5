package io.locksmith.tests.torture;

import java.time.Duration;
import java.util.List;

/**
 * What a {@link Fault} can do to a running torture run: find, freeze, kill, resume and start worker processes, and
 * wait. Every signal it sends is recorded in the run's history with the time it took effect, so the checker can
 * tell a hold that ended because its process was killed from one that overlapped another.
 */
public interface RunContext {

    /** Every worker process started so far, replacements included, dead ones included. */
    List<WorkerProcess> workers();

    /**
     * Stops (SIGSTOP) a live worker that holds at least one lock at that moment and returns it stopped. The process
     * is frozen first and its history read afterwards, so the hold is certain: it cannot have been released in
     * between. Workers that turn out to hold nothing are resumed at once and another is tried.
     *
     * @param limit how long to look for a holder
     * @throws IllegalStateException if no worker held a lock within {@code limit}
     */
    WorkerProcess freezeHolder(Duration limit);

    /**
     * Waits, while {@code worker} stays frozen, until another worker has acquired every name {@code worker} held when
     * {@link #freezeHolder} froze it: proof that the store ended those holds and gave them to somebody else. The
     * workers keep contending for every name until the fault schedule is over, so this only waits for the store; the
     * run's recovery timeout bounds it.
     *
     * @throws IllegalStateException if {@code worker} is not frozen holding locks, or no other worker acquired them
     *     within the recovery timeout
     */
    void awaitTakeover(WorkerProcess worker);

    /**
     * Waits until some worker has recorded a failed call since the current fault began: for a store fault that
     * keeps the store away until the workers have certainly met it, however the machine schedules them. The workers
     * keep calling the store until the fault schedule is over; the run's recovery timeout bounds the wait.
     *
     * @throws IllegalStateException if no call failed within the recovery timeout
     */
    void awaitFailedCall();

    /** Stops {@code worker} with SIGSTOP and returns once every one of its threads is stopped. */
    void stop(WorkerProcess worker);

    /** Resumes a stopped {@code worker} with SIGCONT. */
    void resume(WorkerProcess worker);

    /** Kills {@code worker} with SIGKILL and returns once it is gone. */
    void kill(WorkerProcess worker);

    /** Starts one more worker process like the first ones (for instance in place of a killed one). */
    WorkerProcess startWorker();

    /** Sleeps for {@code duration}; an interrupt ends the fault with an exception and keeps the flag. */
    void sleep(Duration duration);

    /** The lease of the workers' providers. */
    Duration leaseTime();

    /** The renewal interval of the workers' providers. */
    Duration renewInterval();

    /** The operation timeout of the workers' providers. */
    Duration operationTimeout();
}
