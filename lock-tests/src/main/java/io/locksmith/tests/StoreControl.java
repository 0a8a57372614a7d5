package io.locksmith.tests;

import java.util.Set;

/**
 * A remote control for the store under test, with which {@link LockProviderContract} injects failures: kill
 * and restart it, pause and resume it, drop its connections.
 *
 * <p>A backend's contract test offers the faults its test fixture can produce through {@link #faults()} and
 * implements the matching methods; the kit generates the failure tests for exactly those faults. Every method
 * returns once the fault is in effect (or healed), so the kit can observe its consequences right away.
 */
public interface StoreControl {

    /** A failure the kit knows how to inject, observe and heal. */
    enum Fault {
        /**
         * The store process dies and loses its lock state; calls fail (connection refused or time out).
         * Injected by {@link #kill()}, healed by {@link #restart()}.
         */
        KILL,
        /**
         * The store stops answering but keeps its state, like a process stopped with {@code SIGSTOP}: calls
         * hang until the client's operation timeout, and leases keep running out on the store's clock.
         * Injected by {@link #pause()}, healed by {@link #resume()}.
         */
        PAUSE,
        /**
         * The store closes every client connection but keeps running with its state; clients must reconnect
         * by themselves. Injected by {@link #dropConnections()}; heals itself.
         */
        DROP_CONNECTIONS;

        /** Puts this fault into effect through {@code control}. */
        public void inject(StoreControl control) {
            switch (this) {
                case KILL -> control.kill();
                case PAUSE -> control.pause();
                case DROP_CONNECTIONS -> control.dropConnections();
                default -> throw new AssertionError(this);
            }
        }

        /** Ends this fault through {@code control}; nothing to do for {@link #DROP_CONNECTIONS}. */
        public void heal(StoreControl control) {
            switch (this) {
                case KILL -> control.restart();
                case PAUSE -> control.resume();
                case DROP_CONNECTIONS -> { }
                default -> throw new AssertionError(this);
            }
        }

        /** Whether the store keeps its lock state through this fault. */
        public boolean keepsState() {
            return this != KILL;
        }
    }

    /** The faults this control can inject; the kit runs the failure tests for these and no others. */
    Set<Fault> faults();

    /** Takes the store down and discards its lock state; returns once clients can no longer reach it. */
    default void kill() {
        throw new UnsupportedOperationException("this store control cannot kill the store");
    }

    /** Brings a killed store back; returns once it accepts clients again. */
    default void restart() {
        throw new UnsupportedOperationException("this store control cannot restart the store");
    }

    /** Freezes the store so that calls hang; returns once it has stopped answering. */
    default void pause() {
        throw new UnsupportedOperationException("this store control cannot pause the store");
    }

    /** Lets a paused store answer again. */
    default void resume() {
        throw new UnsupportedOperationException("this store control cannot resume the store");
    }

    /** Closes every client connection of the store, which keeps running. */
    default void dropConnections() {
        throw new UnsupportedOperationException("this store control cannot drop connections");
    }
}
