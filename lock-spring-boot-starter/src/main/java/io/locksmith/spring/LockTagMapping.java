package io.locksmith.spring;

/**
 * Maps a lock's name to the value of the {@code lock} tag of Locksmith's meters and observations: declare it as a
 * bean to tag them by lock. Keep the set of values small (the part of the name before the first ':', say): each
 * value is a time series for the life of the application. Return null for {@code other}.
 */
@FunctionalInterface
public interface LockTagMapping {

    /** The tag value for {@code lockName}. */
    String tagFor(String lockName);
}
