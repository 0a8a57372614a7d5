package io.locksmith;

/**
 * A monotonic clock in nanoseconds, like {@link System#nanoTime()}; injectable so tests can control time.
 *
 * <p>Only differences between two readings are meaningful.
 */
@FunctionalInterface
public interface TimeSource {

    /** The current reading in nanoseconds. */
    long nanoTime();

    /** The system's monotonic clock. */
    static TimeSource system() {
        return System::nanoTime;
    }
}
