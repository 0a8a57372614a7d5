package io.locksmith.tests;

import io.locksmith.LockBackendException;
import io.locksmith.spi.Acquisition;
import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import io.locksmith.spi.RenewResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.WeakHashMap;
import java.util.function.Supplier;

/**
 * A {@link LockStore} that forwards to a real one and injects the faults a network and a busy server produce at
 * the store boundary, per call: a call that fails before it reaches the store, a call the store applies whose
 * answer is then lost (the caller sees a timeout), a call that arrives late, after later calls of the same client,
 * and a call held up longer than the caller waits.
 *
 * <p>Install it with {@link io.locksmith.LockOptions.Builder#storeWrapper}, so it sits between the shared machinery
 * and any backend. Faults are armed one at a time for the next call of a kind about one lock name
 * ({@link #arm}), or drawn at random for every call ({@link #randomFaults}) by a torture run; both stop with
 * {@link #stop()}, which a test calls before its providers close.
 *
 * @param <H> the wrapped store's hold type
 */
public final class FaultyStore<H> extends ForwardingLockStore<H> {

    /**
     * The calls faults can be armed for. {@link #TAKE_OVER} is the attempt of a run to which another run of the same
     * provider handed the lock ({@link LockStore#takeOver}); faults armed for a name stop at the lock of that name.
     */
    public enum Call { ACQUIRE, RELEASE, RENEW, TAKE_OVER }

    /** What happens to a call. */
    public enum Fault {
        /** The call never reaches the store; the caller gets a {@link LockBackendException}. */
        FAIL,
        /** The store applies the call; its answer is lost and the caller gets a timeout. */
        APPLY_THEN_TIMEOUT,
        /**
         * The call is held back and the caller gets a timeout; {@link #deliverLate()} hands it to the store
         * later, after whatever the client did meanwhile, as a retransmitted packet or a resumed server would.
         */
        DELIVER_LATE,
        /**
         * The call reaches the store after the caller's operation timeout: the caller gets a timeout, the store
         * applies the call a moment later on its own.
         */
        DELAY
    }

    private final Duration operationTimeout;
    private final Map<Call, ConcurrentLinkedQueue<Armed>> armed = new EnumMap<>(Call.class);
    private final Map<Call, AtomicInteger> calls = new EnumMap<>(Call.class);
    private final Map<Fault, AtomicInteger> injected = new EnumMap<>(Fault.class);
    private final List<Runnable> late = new ArrayList<>();
    /** The lock name of each live hold, for faults armed by name; weak, so ended runs leave nothing behind. */
    private final Map<H, String> names = Collections.synchronizedMap(new WeakHashMap<>());
    private final Set<Call> randomCalls = ConcurrentHashMap.newKeySet();
    private final ExecutorService delayer = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "faulty-store-delay");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean stopped;
    private volatile double randomRate;
    private volatile Random random;
    private volatile List<Fault> randomFaults = List.of();

    /**
     * @param operationTimeout how long a caller waits for the store, as the provider's options say: a
     *     {@link Fault#DELAY delayed} call reaches the store after it
     */
    public FaultyStore(LockStore<H> delegate, Duration operationTimeout) {
        super(delegate);
        this.operationTimeout = operationTimeout;
        for (Call call : Call.values()) {
            armed.put(call, new ConcurrentLinkedQueue<>());
            calls.put(call, new AtomicInteger());
        }
        for (Fault fault : Fault.values()) {
            injected.put(fault, new AtomicInteger());
        }
    }

    /** Makes the next {@code call} that concerns lock {@code name} suffer {@code fault}; faults queue in order. */
    public FaultyStore arm(Call call, String name, Fault fault) {
        armed.get(call).add(new Armed(name, fault));
        return this;
    }

    /**
     * From now on, every call of the given kinds suffers {@link Fault#FAIL} or {@link Fault#APPLY_THEN_TIMEOUT}
     * (even odds) with probability {@code rate}, drawn from {@code random}.
     */
    public FaultyStore randomFaults(double rate, Random random, Call... kinds) {
        return randomFaults(rate, random, List.of(Fault.FAIL, Fault.APPLY_THEN_TIMEOUT), kinds);
    }

    /**
     * From now on, every call of the given kinds suffers one of {@code faults} ({@link Fault#FAIL} or
     * {@link Fault#APPLY_THEN_TIMEOUT}, equally likely) with probability {@code rate}, drawn from {@code random}.
     */
    public FaultyStore randomFaults(double rate, Random random, List<Fault> faults, Call... kinds) {
        if (faults.isEmpty() || !List.of(Fault.FAIL, Fault.APPLY_THEN_TIMEOUT).containsAll(faults)) {
            throw new IllegalArgumentException("random faults are FAIL and APPLY_THEN_TIMEOUT, got " + faults);
        }
        this.random = random;
        this.randomFaults = List.copyOf(faults);
        this.randomRate = rate;
        randomCalls.addAll(List.of(kinds));
        return this;
    }

    /** Ends every fault: armed and random faults are dropped, calls go straight to the store. */
    public void stop() {
        stopped = true;
        for (ConcurrentLinkedQueue<Armed> queue : armed.values()) {
            queue.clear();
        }
        randomCalls.clear();
    }

    /** Hands the calls held back by {@link Fault#DELIVER_LATE} to the store now, in the order they were made. */
    public void deliverLate() {
        List<Runnable> due;
        synchronized (late) {
            due = List.copyOf(late);
            late.clear();
        }
        for (Runnable call : due) {
            call.run();
        }
    }

    /** How many calls of this kind the machinery has made. */
    public int calls(Call call) {
        return calls.get(call).get();
    }

    /** How many times this fault was injected. */
    public int injected(Fault fault) {
        return injected.get(fault).get();
    }

    /** Whether every armed fault has been used. */
    public boolean allArmedUsed() {
        return armed.values().stream().allMatch(ConcurrentLinkedQueue::isEmpty);
    }

    // ---------------------------------------------------------------- the store

    @Override
    public H newHold(String name, String owner) {
        H hold = delegate.newHold(name, owner);
        names.put(hold, name);
        return hold;
    }

    @Override
    public H newSharedHold(String name, String owner, H ownWrite) {
        H hold = delegate.newSharedHold(name, owner, ownWrite);
        names.put(hold, name);
        return hold;
    }

    @Override
    public Acquisition tryAcquire(H hold, Duration lease, Duration wait, Runnable wakeUp) {
        // a late attempt makes one attempt: its caller is no longer waiting for it
        return call(Call.ACQUIRE, Set.of(nameOf(hold)), () -> delegate.tryAcquire(hold, lease, wait, wakeUp),
                () -> delegate.tryAcquire(hold, lease, Duration.ZERO, null));
    }

    @Override
    public Acquisition takeOver(H previous, H hold, Duration lease, Runnable wakeUp) {
        // late, the attempt is made for a caller that no longer waits for it, as a late tryAcquire is
        return call(Call.TAKE_OVER, Set.of(nameOf(hold)), () -> delegate.takeOver(previous, hold, lease, wakeUp),
                () -> delegate.takeOver(previous, hold, lease, null));
    }

    @Override
    public boolean release(H hold) {
        return call(Call.RELEASE, Set.of(nameOf(hold)), () -> delegate.release(hold), null);
    }

    @Override
    public RenewResult<H> renew(List<H> holds, Duration lease) {
        List<H> copy = List.copyOf(holds);
        Set<String> renewed = new HashSet<>();
        for (H hold : copy) {
            renewed.add(nameOf(hold));
        }
        return call(Call.RENEW, renewed, () -> delegate.renew(copy, lease), () -> delegate.renew(copy, lease));
    }

    private String nameOf(H hold) {
        String name = names.get(hold);
        if (name == null) {
            throw new IllegalStateException("FaultyStore: " + hold + " was not made by this store's newHold");
        }
        return name;
    }

    @Override
    public void close() {
        stop();
        delayer.shutdownNow();
        delegate.close();
    }

    @Override
    public String toString() {
        return "FaultyStore{" + delegate.address() + '}';
    }

    // ---------------------------------------------------------------- faults

    private <T> T call(Call call, Set<String> names, Supplier<T> body, Supplier<T> lateBody) {
        calls.get(call).incrementAndGet();
        Fault fault = stopped ? null : take(call, names);
        if (fault == null) {
            return body.get();
        }
        injected.get(fault).incrementAndGet();
        String what = call.name().toLowerCase() + " of " + names;
        switch (fault) {
            case FAIL -> throw new LockBackendException("injected fault: the " + what + " failed before it reached "
                    + delegate.address());
            case APPLY_THEN_TIMEOUT -> {
                body.get();
                throw new LockBackendException("injected fault: " + delegate.address() + " applied the " + what
                        + ", and its answer was lost (timed out)");
            }
            case DELIVER_LATE -> {
                Supplier<T> deferred = lateBody != null ? lateBody : body;
                synchronized (late) {
                    late.add(() -> quietly(deferred));
                }
                throw new LockBackendException("injected fault: the " + what + " timed out on its way to "
                        + delegate.address() + " (it will arrive late)");
            }
            case DELAY -> {
                Future<T> arriving = delayer.submit(() -> {
                    TimeUnit.NANOSECONDS.sleep(operationTimeout.toNanos());
                    return (lateBody != null ? lateBody : body).get();
                });
                try {
                    return arriving.get(operationTimeout.toNanos(), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    throw new LockBackendException("injected fault: the " + what + " was delayed past the "
                            + "operation timeout of " + operationTimeout.toMillis() + " ms; " + delegate.address()
                            + " applies it a moment later");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new LockBackendException("interrupted while waiting for the " + what, e);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof RuntimeException r ? r : new LockBackendException(what, e);
                }
            }
            default -> throw new AssertionError(fault);
        }
    }

    private Fault take(Call call, Set<String> names) {
        ConcurrentLinkedQueue<Armed> queue = armed.get(call);
        for (Armed a : queue) {
            if (names.contains(a.name) && queue.remove(a)) {
                return a.fault;
            }
        }
        if (randomCalls.contains(call)) {
            Random r = random;
            synchronized (r) {
                if (r.nextDouble() < randomRate) {
                    List<Fault> drawn = randomFaults;
                    return drawn.get(r.nextInt(drawn.size()));
                }
            }
        }
        return null;
    }

    private static <T> void quietly(Supplier<T> call) {
        try {
            call.get();
        } catch (RuntimeException e) {
            // a late call's answer goes nowhere, like the late packet's
        }
    }

    private record Armed(String name, Fault fault) {
    }
}
