package io.locksmith.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A provider's FIFO gate for one lock name: one owner at a time, threads and asynchronous acquisitions queued in
 * one line. Leaving hands the gate straight to the head of the line, so nobody barges past a waiter.
 *
 * <p>A thread waits parked; an asynchronous waiter leaves a callback, run by whoever hands it the gate, and
 * blocks nobody. Nothing here talks to a store, and the queue's lock is a {@link ReentrantLock}, never a monitor:
 * a virtual thread waiting here does not pin its carrier.
 */
final class Gate {

    private final ReentrantLock lock = new ReentrantLock();
    // guarded by lock
    private final ArrayDeque<Waiter> queue = new ArrayDeque<>();
    private boolean taken;
    /** The length of {@link #queue}, written under the lock at each change, read without it by {@link #mayHaveQueued}. */
    private volatile int queued;
    /** Set when the provider closes: everyone passes, and must then see the closed provider. */
    private boolean broken;

    /** A place in the line; {@link #entered} turns true when the gate is handed over. */
    static final class Waiter {
        private final Thread thread;
        private final Runnable onEntered;
        private volatile boolean entered;

        private Waiter(Thread thread, Runnable onEntered) {
            this.thread = thread;
            this.onEntered = onEntered;
        }

        boolean entered() {
            return entered;
        }

        private void wake() {
            if (thread != null) {
                LockSupport.unpark(thread);
            } else {
                onEntered.run();
            }
        }
    }

    /** Enters if the gate is free and nobody is waiting; never waits. */
    boolean tryEnter() {
        lock.lock();
        try {
            return takeIfFree();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Enters, waiting in line at most {@code nanos} ({@code forever}: without limit).
     *
     * @return whether the caller entered; false if the time ran out first
     * @throws InterruptedException if interrupted while waiting; the place in line, or the gate if it was handed
     *     over at that moment, is given up
     */
    boolean enter(long nanos, boolean forever) throws InterruptedException {
        Waiter me;
        lock.lock();
        try {
            if (takeIfFree()) {
                return true;
            }
            if (!forever && nanos <= 0) {
                return false;
            }
            me = new Waiter(Thread.currentThread(), null);
            queue.add(me);
            queued = queue.size();
        } finally {
            lock.unlock();
        }
        long deadline = System.nanoTime() + nanos;
        while (!me.entered) {
            if (forever) {
                LockSupport.park(this);
            } else {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return !withdraw(me);
                }
                LockSupport.parkNanos(this, left);
            }
            if (Thread.interrupted()) {
                if (!withdraw(me)) {
                    leave(); // handed over at the moment of the interrupt: pass it on
                }
                throw new InterruptedException();
            }
        }
        return true;
    }

    /**
     * Queues an asynchronous waiter; {@code onEntered} runs once, in the thread that hands the gate over (or in
     * this one if the gate is free), and must not block.
     *
     * @return the waiter, to {@link #withdraw} it
     */
    Waiter enterLater(Runnable onEntered) {
        Waiter waiter = new Waiter(null, onEntered);
        boolean now;
        lock.lock();
        try {
            now = takeIfFree();
            if (now) {
                waiter.entered = true;
            } else {
                queue.add(waiter);
                queued = queue.size();
            }
        } finally {
            lock.unlock();
        }
        if (now) {
            onEntered.run();
        }
        return waiter;
    }

    /**
     * Takes {@code waiter} out of the line.
     *
     * @return true if it had not entered; false if the gate was already handed to it (the caller owns the gate)
     */
    boolean withdraw(Waiter waiter) {
        lock.lock();
        try {
            if (waiter.entered) {
                return false;
            }
            queue.remove(waiter);
            queued = queue.size();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Leaves the gate: the head of the line enters, or the gate is free. */
    void leave() {
        Waiter next;
        lock.lock();
        try {
            if (broken) {
                return;
            }
            next = queue.poll();
            if (next == null) {
                taken = false;
                return;
            }
            queued = queue.size();
            next.entered = true;
        } finally {
            lock.unlock();
        }
        next.wake();
    }

    /**
     * Hands the gate to the head of the line, if anyone waits and {@code handing} agrees; otherwise the caller keeps
     * the gate. {@code handing} runs under the line's lock, after the head is chosen and before it can see that it
     * entered or withdraw: what it publishes is there when the new owner enters. It must be short and must not block.
     *
     * @return true if the gate was handed over; false if nobody waits, the gate is broken open, or {@code handing}
     *     refused, and the caller still owns the gate
     */
    boolean handTo(BooleanSupplier handing) {
        Waiter next;
        lock.lock();
        try {
            if (broken || queue.isEmpty() || !handing.getAsBoolean()) {
                return false;
            }
            next = queue.poll();
            queued = queue.size();
            next.entered = true;
        } finally {
            lock.unlock();
        }
        next.wake();
        return true;
    }

    /**
     * Whether anyone may wait in line, without taking the line's lock: a hint for the uncontended path, which then
     * never locks; {@link #handTo} decides under the lock.
     */
    boolean mayHaveQueued() {
        return queued > 0;
    }

    /** Whether anyone waits in line. */
    boolean hasQueued() {
        lock.lock();
        try {
            return !queue.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /** Lets everyone in line through, now and from now on: the provider closed. */
    void breakOpen() {
        List<Waiter> waiting;
        lock.lock();
        try {
            broken = true;
            waiting = new ArrayList<>(queue);
            queue.clear();
            queued = 0;
            for (Waiter waiter : waiting) {
                waiter.entered = true;
            }
        } finally {
            lock.unlock();
        }
        waiting.forEach(Waiter::wake);
    }

    private boolean takeIfFree() {
        if (broken) {
            return true;
        }
        if (taken) {
            return false;
        }
        taken = true;
        return true;
    }
}
