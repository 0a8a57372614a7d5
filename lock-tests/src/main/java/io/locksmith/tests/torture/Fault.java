package io.locksmith.tests.torture;

import io.locksmith.tests.StoreControl;
import java.time.Duration;
import java.util.Objects;

/**
 * A failure a {@link TortureRun} injects while its workers run, such as killing a client that holds a lock or
 * restarting the store. {@link #inject} returns once the fault is over (healed); the run then waits until the
 * workers make progress again and measures how long that took.
 *
 * <p>Client-side faults come from the factories below; store-side faults are lambdas over the backend's test server:
 * <pre>{@code
 * Fault restart = Fault.named("redis kill -9 + restart", run -> {
 *     redis.kill();
 *     run.sleep(Duration.ofSeconds(1));
 *     redis.restart();
 * });
 * }</pre>
 */
@FunctionalInterface
public interface Fault {

    /** How long the client faults look for a worker that holds a lock before giving up. */
    Duration FIND_HOLDER_LIMIT = Duration.ofSeconds(15);

    /**
     * Puts the fault into effect and heals it.
     *
     * @param run the running run, to reach its worker processes
     */
    void inject(RunContext run);

    /** A short label for reports, such as {@code client kill -9}. */
    default String name() {
        return "fault";
    }

    /** {@code fault} with the label {@code name}. */
    static Fault named(String name, Fault fault) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(fault, "fault");
        return new Fault() {
            @Override
            public void inject(RunContext run) {
                fault.inject(run);
            }

            @Override
            public String name() {
                return name;
            }

            @Override
            public String toString() {
                return name;
            }
        };
    }

    /**
     * Kills (SIGKILL) a client process while it holds a lock, then starts a replacement worker so the load stays
     * the same. Its locks must be free again within the lease (plus a renewal period): the checker reports the time
     * until another process acquired each name the killed one held.
     */
    static Fault killClientHolding() {
        return killClientHolding(true);
    }

    /**
     * Kills (SIGKILL) a client process while it holds a lock.
     *
     * @param replace whether to start a replacement worker afterwards
     */
    static Fault killClientHolding(boolean replace) {
        return named("client kill -9", run -> {
            WorkerProcess victim = run.freezeHolder(FIND_HOLDER_LIMIT);
            run.kill(victim);
            if (replace) {
                run.startWorker();
            }
        });
    }

    /**
     * Stops (SIGSTOP) a client process while it holds a lock for {@code pause}, then resumes it (SIGCONT). With a
     * pause past the lease another process may get the lock meanwhile (the schedule decides; see
     * {@link #pauseClientUntilTakenOver(Duration)} to make it certain); the resumed one must then learn that its hold
     * was lost, and the fenced resource must reject its late writes.
     */
    static Fault pauseClientHolding(Duration pause) {
        Objects.requireNonNull(pause, "pause");
        return named("client SIGSTOP " + pause.toMillis() + " ms", run -> {
            WorkerProcess victim = run.freezeHolder(FIND_HOLDER_LIMIT);
            try {
                run.sleep(pause);
            } finally {
                run.resume(victim);
            }
        });
    }

    /**
     * Stops (SIGSTOP) a client process while it holds a lock for twice its lease plus a renewal period, so its lease
     * certainly ends, then resumes it. Whether another process takes the lock meanwhile is up to the schedule (see
     * {@link #pauseClientUntilTakenOver()}).
     */
    static Fault pauseClientPastLease() {
        return named("client SIGSTOP past lease", run -> {
            WorkerProcess victim = run.freezeHolder(FIND_HOLDER_LIMIT);
            try {
                run.sleep(run.leaseTime().multipliedBy(2).plus(run.renewInterval()));
            } finally {
                run.resume(victim);
            }
        });
    }

    /**
     * Stops (SIGSTOP) a client process while it holds a lock, for at least twice its lease plus a renewal period and
     * until another worker has acquired every name it held ({@link RunContext#awaitTakeover}), then resumes it. Unlike
     * {@link #pauseClientPastLease()}, the run then certainly shows another owner holding a lock while the frozen
     * one slept, and the resumed client must report that hold lost; for stores that end a hold by its lease alone
     * (not for JDBC session mode, whose frozen client keeps its row lock while its connection lives).
     */
    static Fault pauseClientUntilTakenOver() {
        return named("client SIGSTOP past lease until taken over", run -> {
            WorkerProcess victim = run.freezeHolder(FIND_HOLDER_LIMIT);
            try {
                run.sleep(run.leaseTime().multipliedBy(2).plus(run.renewInterval()));
                run.awaitTakeover(victim);
            } finally {
                run.resume(victim);
            }
        });
    }

    /**
     * Stops (SIGSTOP) a client process while it holds a lock, for at least {@code pause} and until another worker has
     * acquired every name it held ({@link RunContext#awaitTakeover}), then resumes it: for a store whose holds end
     * with something other than the lease, such as a ZooKeeper session, with {@code pause} past that.
     */
    static Fault pauseClientUntilTakenOver(Duration pause) {
        Objects.requireNonNull(pause, "pause");
        return named("client SIGSTOP " + pause.toMillis() + " ms until taken over", run -> {
            WorkerProcess victim = run.freezeHolder(FIND_HOLDER_LIMIT);
            try {
                run.sleep(pause);
                run.awaitTakeover(victim);
            } finally {
                run.resume(victim);
            }
        });
    }

    /**
     * Injects {@code kind} through the store's control, waits {@code outage}, and heals it: kill then restart,
     * pause then resume, or drop connections (which heals itself).
     */
    static Fault store(StoreControl control, StoreControl.Fault kind, Duration outage) {
        Objects.requireNonNull(control, "control");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(outage, "outage");
        String label = switch (kind) {
            case KILL -> "store kill + restart";
            case PAUSE -> "store pause " + outage.toMillis() + " ms";
            case DROP_CONNECTIONS -> "store drops connections";
        };
        return named(label, run -> {
            kind.inject(control);
            try {
                run.sleep(outage);
            } finally {
                kind.heal(control);
            }
        });
    }
}
