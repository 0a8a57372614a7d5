package io.locksmith.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.AcquisitionObserver;
import io.locksmith.DistributedLock;
import io.locksmith.LockBackendException;
import io.locksmith.LockObserver;
import io.locksmith.LockObserver.HoldEnd;
import io.locksmith.LockObserver.Outcome;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.local.LocalLockServer;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.LockStores;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What the machinery tells a {@link LockObserver}, over the real in-JVM store. */
class LockObserverTest {

    private final LocalLockServer server = LocalLockServer.named("observer-" + UUID.randomUUID());
    private final Recorder recorder = new Recorder();
    private final List<LockProvider> providers = new ArrayList<>();

    @AfterEach
    void closeProviders() {
        providers.forEach(LockProvider::close);
        assertThat(server.heldKeys()).as("locks left in the store").isEmpty();
    }

    private LockProvider provider(LockObserver observer, UnaryOperator<LockStore<?>> decorate) {
        LockOptions options = LockOptions.builder()
                .leaseTime(Duration.ofHours(1)) // the test runs renewal rounds itself
                .operationTimeout(Duration.ofSeconds(1))
                .observer(observer)
                .build();
        LockProvider provider = LockStores.newProvider(decorate.apply(server.newStore(options)), options);
        providers.add(provider);
        return provider;
    }

    private LockProvider observed() {
        return provider(recorder, UnaryOperator.identity());
    }

    private LockProvider unobserved() {
        return provider(LockObserver.NONE, UnaryOperator.identity());
    }

    @Test
    void anAcquisitionAndItsReleaseAreReportedOnceAndAReentryIsNot() {
        DistributedLock lock = observed().getLock("cycle");
        lock.lock();
        lock.lock();
        long token = lock.fencingToken();
        lock.unlock();
        lock.unlock();
        assertThat(recorder.events).containsExactly(
                "started cycle",
                "ended cycle ACQUIRED token=" + token,
                "hold cycle RELEASED");
    }

    @Test
    void aSingleAttemptOnAHeldLockIsBusyAndAnEndedWaitTimedOut() throws Exception {
        DistributedLock theirs = unobserved().getLock("taken");
        theirs.lock();
        DistributedLock ours = observed().getLock("taken");
        assertThat(ours.tryLock()).isFalse();
        assertThat(ours.tryLock(20, TimeUnit.MILLISECONDS)).isFalse();
        assertThat(recorder.events).containsExactly(
                "started taken", "ended taken BUSY token=-1",
                "started taken", "ended taken TIMED_OUT token=-1");
        theirs.unlock();
    }

    @Test
    void anInterruptedWaitIsReportedAsInterrupted() throws Exception {
        DistributedLock theirs = unobserved().getLock("wait");
        theirs.lock();
        DistributedLock ours = observed().getLock("wait");
        AtomicBoolean threw = new AtomicBoolean();
        Thread waiter = new Thread(() -> {
            try {
                ours.lockInterruptibly();
            } catch (InterruptedException expected) {
                threw.set(true);
            }
        });
        waiter.start();
        // once the acquisition has started, an interrupt ends it whatever step it is at: the holder keeps the lock
        while (recorder.events.isEmpty()) {
            Thread.onSpinWait();
        }
        waiter.interrupt();
        waiter.join();
        assertThat(threw).isTrue();
        assertThat(recorder.events).containsExactly("started wait", "ended wait INTERRUPTED token=-1");
        theirs.unlock();
    }

    @Test
    void aLeaseThatEndsIsALossWithItsReason() throws Exception {
        DistributedLock lock = observed().getLock("short");
        assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(30))).isTrue();
        String end = recorder.holdEnds.poll(30, TimeUnit.SECONDS);
        assertThat(end).startsWith("LOST").contains("lease of 30 ms ended");
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
    }

    @Test
    void aFailedAcquireIsAFailedOutcomeAndABackendFailure() {
        DistributedLock lock = provider(recorder, store -> new ForwardingStore(store) {
            @Override
            public Acquisition tryAcquire(Object hold, Duration lease, Duration wait, Runnable wakeUp) {
                throw new LockBackendException("connection refused");
            }
        }).getLock("down");
        assertThatThrownBy(lock::tryLock).isInstanceOf(LockBackendException.class);
        assertThat(recorder.events).containsExactly(
                "started down",
                "failure down acquire connection refused",
                "ended down FAILED token=-1");
    }

    @Test
    void aReleaseWhoseAnswerWasLostEndsTheHoldUnconfirmed() {
        AtomicBoolean failNextRelease = new AtomicBoolean(true);
        DistributedLock lock = provider(recorder, store -> new ForwardingStore(store) {
            @Override
            public boolean release(Object hold) {
                boolean released = super.release(hold);
                if (failNextRelease.getAndSet(false)) {
                    throw new LockBackendException("response timed out");
                }
                return released;
            }
        }).getLock("unsure");
        lock.lock();
        assertThatThrownBy(lock::unlock).isInstanceOf(LockBackendException.class);
        assertThat(recorder.events).startsWith("started unsure").contains(
                "failure unsure release response timed out",
                "hold unsure RELEASE_UNCONFIRMED");
        lock.unlock(); // the thread's retry: the release had gone through
    }

    @Test
    void aRenewalRoundIsReportedWithItsCounts() {
        LockProvider provider = observed();
        DistributedLock a = provider.getLock("a");
        DistributedLock b = provider.getLock("b");
        a.lock();
        b.lock();
        ((StoreLockProvider<?>) provider).renewAll();
        assertThat(recorder.rounds).containsExactly("holds=2 renewed=2 gone=0 failure=null");
        a.unlock();
        b.unlock();
    }

    @Test
    void anObserverThatThrowsChangesNothingAndTheOthersStillHear() {
        LockObserver throwing = new LockObserver() {
            @Override
            public AcquisitionObserver acquisitionStarted(String backend, String lockName) {
                throw new IllegalStateException("broken observer");
            }

            @Override
            public void renewalRound(String backend, int holds, int renewed, int gone, long nanos,
                    RuntimeException failure) {
                throw new IllegalStateException("broken observer");
            }
        };
        LockProvider provider = provider(LockObserver.composite(throwing, recorder), UnaryOperator.identity());
        DistributedLock lock = provider.getLock("robust");
        lock.lock();
        long token = lock.fencingToken();
        ((StoreLockProvider<?>) provider).renewAll();
        lock.unlock();
        assertThat(recorder.events).containsExactly("started robust", "ended robust ACQUIRED token=" + token,
                "hold robust RELEASED");
        assertThat(recorder.rounds).hasSize(1);

        DistributedLock alone = provider(throwing, UnaryOperator.identity()).getLock("robust");
        lock.lock();
        assertThat(alone.tryLock()).isFalse();
        lock.unlock();
        assertThat(alone.tryLock()).isTrue();
        alone.unlock();
    }

    /** Records what it is told, as short lines. */
    private static final class Recorder implements LockObserver {
        final List<String> events = new CopyOnWriteArrayList<>();
        final BlockingQueue<String> holdEnds = new LinkedBlockingQueue<>();
        final List<String> rounds = new CopyOnWriteArrayList<>();

        @Override
        public AcquisitionObserver acquisitionStarted(String backend, String lockName) {
            // an assertion here would throw into the machinery: record what is checked instead
            events.add("started " + lockName + (backend.startsWith("local://") ? "" : " on " + backend));
            return new AcquisitionObserver() {
                @Override
                public void acquisitionEnded(Outcome outcome, long waitedNanos, long fencingToken,
                        Throwable failure) {
                    events.add("ended " + lockName + " " + outcome + " token=" + fencingToken
                            + (waitedNanos < 0 ? " negative wait" : ""));
                }

                @Override
                public void holdEnded(HoldEnd end, long heldNanos, String reason) {
                    events.add("hold " + lockName + " " + end + (heldNanos < 0 ? " negative time held" : ""));
                    holdEnds.add(end + (reason == null ? "" : ": " + reason));
                }
            };
        }

        @Override
        public void backendFailed(String backend, String lockName, String operation, RuntimeException failure) {
            events.add("failure " + lockName + " " + operation + " " + failure.getMessage());
        }

        @Override
        public void renewalRound(String backend, int holds, int renewed, int gone, long nanos,
                RuntimeException failure) {
            rounds.add("holds=" + holds + " renewed=" + renewed + " gone=" + gone + " failure=" + failure);
        }
    }
}
