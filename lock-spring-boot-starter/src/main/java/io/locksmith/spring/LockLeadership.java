package io.locksmith.spring;

import io.locksmith.Leadership;
import io.locksmith.LeadershipListener;
import io.locksmith.LockBackendException;
import io.locksmith.LockLostException;
import io.locksmith.LockNames;
import io.locksmith.LockProvider;
import java.util.Objects;
import java.util.OptionalLong;
import org.springframework.context.SmartLifecycle;

/**
 * Leader election as a Spring bean: contends for leadership of a name ({@link LockProvider#leadership}) while the
 * application context runs, from its start (after every bean is ready, so {@link LeadershipListener#elected} may
 * use them) until its stop, when a leader steps down ({@link LeadershipListener.Reason#CLOSED}) before the provider
 * closes.
 *
 * <pre>{@code
 * @Bean
 * LockLeadership reportLeadership(LockProvider locks, ReportScheduler scheduler) {
 *     return new LockLeadership(locks, "nightly-report", scheduler); // scheduler implements LeadershipListener
 * }
 * }</pre>
 *
 * <p>It starts in the last phase and stops in the first ({@link SmartLifecycle#DEFAULT_PHASE}); after a stop, a
 * start contends again.
 */
public final class LockLeadership implements SmartLifecycle {

    private final LockProvider locks;
    private final String name;
    private final LeadershipListener listener;
    private volatile Leadership leadership;

    /**
     * A leadership of {@code name} on {@code locks}, told to {@code listener}; nothing contends before
     * {@link #start()}.
     *
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     */
    public LockLeadership(LockProvider locks, String name, LeadershipListener listener) {
        this.locks = Objects.requireNonNull(locks, "locks");
        this.name = LockNames.check(name);
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    /** The name whose lock decides the leadership. */
    public String name() {
        return name;
    }

    /** Whether this instance leads now; see {@link Leadership#isLeader()}. */
    public boolean isLeader() {
        Leadership current = leadership;
        return current != null && current.isLeader();
    }

    /** The epoch of the current leadership, for fencing the leader's writes; empty when not leading. */
    public OptionalLong epoch() {
        Leadership current = leadership;
        return current == null ? OptionalLong.empty() : current.epoch();
    }

    /** Steps down if leading, and contends again after a pause; see {@link Leadership#relinquish()}. */
    public void relinquish() {
        Leadership current = leadership;
        if (current != null) {
            current.relinquish();
        }
    }

    @Override
    public synchronized void start() {
        if (leadership == null) {
            leadership = locks.leadership(name, listener);
        }
    }

    @Override
    public synchronized void stop() {
        Leadership current = leadership;
        leadership = null;
        if (current != null) {
            try {
                current.close();
            } catch (LockLostException | LockBackendException e) {
                // the leadership logged it; an application's shutdown goes on
            }
        }
    }

    @Override
    public boolean isRunning() {
        return leadership != null;
    }

    @Override
    public String toString() {
        Leadership current = leadership;
        return current == null ? "LockLeadership{'" + name + "', stopped}" : current.toString();
    }
}
