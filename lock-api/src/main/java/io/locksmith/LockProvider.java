package io.locksmith;

import io.locksmith.internal.LeaderElection;
import io.locksmith.internal.MultiLock;
import io.locksmith.internal.SlotSemaphore;
import io.locksmith.spi.LockProviderFactory;
import io.locksmith.spi.Uris;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.ServiceLoader;
import java.util.TreeSet;

/**
 * A client of one lock store: hands out {@link DistributedLock}s, renews their leases, and releases them all
 * when closed.
 *
 * <pre>{@code
 * try (LockProvider locks = LockProvider.open("redis://127.0.0.1:6379")) {
 *     DistributedLock lock = locks.getLock("stock:sku-42");
 *     lock.lock();
 *     try {
 *         // critical section
 *     } finally {
 *         lock.unlock();
 *     }
 * }
 * }</pre>
 *
 * <p>A provider is thread-safe and meant to be shared: one per store per application. Each provider is a
 * separate client with its own {@link #clientId()}, even inside one JVM.
 */
public interface LockProvider extends AutoCloseable {

    /**
     * The lock with the given name. The same name on the same provider gives an equal lock that shares the
     * same holds.
     *
     * @param name any non-empty string of at most {@value LockNames#MAX_LENGTH} code points without control
     *     characters; see {@link LockNames}
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     * @throws IllegalStateException if the provider is closed
     */
    DistributedLock getLock(String name);

    /**
     * Takes the locks of all {@code names} together, as one handle, or none of them: they are taken one after
     * another in the names' natural ({@link String}) order, each waiting for what is left of {@code wait}, and if
     * one is not had in time, those already taken are released and the result is empty. All callers take
     * overlapping names in the same order, so two callers asking for overlapping sets in different orders never
     * deadlock. Each hold is like one from {@link DistributedLock#tryAcquire(Duration)}: the calling thread's,
     * renewed, fenced; close the handle on that thread.
     *
     * @param names one or more distinct lock names, each as {@link #getLock} takes it
     * @param wait how long to wait for all of them in all; zero makes one attempt per lock
     * @return the handle, or empty if the locks were not all had within {@code wait}
     * @throws NullPointerException if {@code names}, one of them, or {@code wait} is null
     * @throws IllegalArgumentException if {@code names} is empty, names a lock twice or breaks a naming rule, or
     *     {@code wait} is negative; nothing is taken then
     * @throws InterruptedException if the thread is interrupted while waiting; nothing is held then
     * @throws LockBackendException if the store fails; nothing is held then (a release that could not reach the
     *     store is retried in the background)
     * @throws IllegalStateException if the provider is closed
     */
    default Optional<MultiLockHandle> acquireAll(Collection<String> names, Duration wait) throws InterruptedException {
        return MultiLock.acquireAll(this, names, wait);
    }

    /**
     * The read-write lock {@code name}: many readers or one writer, across every process of the namespace. Its
     * write lock is the lock {@link #getLock getLock(name)}. See {@link DistributedReadWriteLock}.
     *
     * @param name the lock's name, as {@link #getLock} takes it
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     * @throws UnsupportedOperationException if the backend keeps no read holds (the default)
     * @throws IllegalStateException if the provider is closed
     */
    default DistributedReadWriteLock getReadWriteLock(String name) {
        throw new UnsupportedOperationException(backend() + " has no read-write locks");
    }

    /**
     * The semaphore {@code name} with {@code permits} permits: at most that many {@link Permit}s are held at once
     * by all providers of the namespace. Its permits are the locks {@code <name>#permit-0} to
     * {@code <name>#permit-<permits - 1>}, each permit a hold with its own lease and fencing token; every process
     * must open the semaphore with the same number of permits. See {@link DistributedSemaphore}.
     *
     * @param name the semaphore's name, as {@link #getLock} takes it, with room for {@code #permit-<i>}
     * @param permits 1 to 1024
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} breaks a naming rule or {@code permits} is out of range
     * @throws IllegalStateException if the provider is closed
     */
    default DistributedSemaphore getSemaphore(String name, int permits) {
        return SlotSemaphore.open(this, name, permits);
    }

    /**
     * The semaphore {@code name} whose permit count is kept in the store, set by {@link #setSemaphorePermits}:
     * every take reads the count there (one more round trip), so changing it needs no restart of any process.
     * Otherwise as {@link #getSemaphore(String, int)}: its permits are the locks {@code <name>#permit-<i>} for
     * {@code i} below the count. Do not mix it with {@code getSemaphore(name, permits)} for the same name.
     *
     * @param name the semaphore's name, as {@link #getSemaphore(String, int)} takes it
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     * @throws IllegalStateException if the store keeps no permit count for {@code name}, or the provider is closed
     * @throws UnsupportedOperationException if the backend keeps no permit counts
     * @throws LockBackendException if the store cannot be reached or fails
     */
    default DistributedSemaphore getSemaphore(String name) {
        return SlotSemaphore.openStored(this, name);
    }

    /**
     * The permit count the store keeps for semaphore {@code name} (see {@link #getSemaphore(String)}), or empty
     * if none was ever set.
     *
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     * @throws UnsupportedOperationException if the backend keeps no permit counts (the default)
     * @throws LockBackendException if the store cannot be reached or fails
     */
    default OptionalInt semaphorePermits(String name) {
        throw new UnsupportedOperationException(backend() + " keeps no semaphore permit counts");
    }

    /**
     * An operator's change of the permit count of semaphore {@code name}, kept in the store for
     * {@link #getSemaphore(String)} in every process: takes that start after it see the new count. Raising it
     * lets waiters take the new permits at their next look; lowering it takes no permit from its holder: permits
     * numbered at or above the new count stay held until their handles close, and meanwhile new takes use only
     * the permits below it, so the number held falls to the new count as the old ones are given back.
     *
     * @param permits 1 to 1024
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} breaks a naming rule or {@code permits} is out of range
     * @throws UnsupportedOperationException if the backend keeps no permit counts (the default)
     * @throws LockBackendException if the store cannot be reached or fails; the count may then be the old one or
     *     the new one
     */
    default void setSemaphorePermits(String name, int permits) {
        throw new UnsupportedOperationException(backend() + " keeps no semaphore permit counts");
    }

    /**
     * Starts contending for leadership of {@code name}: a thread of the candidacy's own waits for the lock of that
     * name, and while it holds it this process is the leader. {@code listener} is told of each election (with its
     * epoch, the hold's fencing token) and of its end (relinquished, lost, closed); after a loss or a relinquish
     * the candidacy contends again, until {@link Leadership#close()} or this provider's close. A store failure
     * while contending is retried with backoff. See {@link Leadership}.
     *
     * @param name the lock's name, as {@link #getLock} takes it
     * @throws NullPointerException if {@code name} or {@code listener} is null
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     * @throws IllegalStateException if the provider is closed
     */
    default Leadership leadership(String name, LeadershipListener listener) {
        return LeaderElection.start(this, name, listener);
    }

    /** This provider's identity in the store: random, 128 bits, unique per provider instance. */
    String clientId();

    /** A description of the store this provider talks to, without credentials (for logs and messages). */
    String backend();

    /** The options this provider was built with. */
    LockOptions options();

    /**
     * What the store knows about the lock now: holder, since when, lease left, fencing token; for operators and
     * tools. A round trip or two; fields a backend cannot know are empty (see the backend's documentation).
     *
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     * @throws UnsupportedOperationException if the backend cannot tell
     * @throws LockBackendException if the store cannot be reached or fails
     */
    default LockInfo inspect(String name) {
        throw new UnsupportedOperationException(backend() + " cannot inspect locks");
    }

    /**
     * Frees the lock whoever holds it: an operator's override for a holder that is stuck. The holder is not
     * told until its next renewal or unlock, and may still be inside its critical section; only fencing
     * protects the resource from it.
     *
     * @return true if the lock was held and is now free
     * @throws IllegalArgumentException if {@code name} breaks a naming rule
     * @throws UnsupportedOperationException if the backend cannot do it
     * @throws LockBackendException if the store cannot be reached or fails
     */
    default boolean forceRelease(String name) {
        throw new UnsupportedOperationException(backend() + " cannot force a release");
    }

    /**
     * Releases every hold taken through this provider (best effort, within about twice the operation timeout
     * in all; holds it could not release free themselves when their lease ends), wakes its waiters with {@link IllegalStateException} and stops its threads. Later use throws
     * {@link IllegalStateException}. Closing twice does nothing.
     */
    @Override
    void close();

    /**
     * Opens a provider for the store the URI names, with default options.
     *
     * @see #open(String, LockOptions)
     */
    static LockProvider open(String uri) {
        return open(uri, LockOptions.defaults());
    }

    /**
     * Opens a provider for the store the URI names, choosing the backend by the URI's scheme among the
     * {@link LockProviderFactory} services on the class path: {@code local://}, {@code redis://},
     * {@code zookeeper://}, {@code jdbc:…}, {@code redlock://}, …
     *
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the URI is malformed or no backend on the class path serves its
     *     scheme (the message lists the schemes that are)
     * @throws LockBackendException if the store cannot be reached
     */
    static LockProvider open(String uri, LockOptions options) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        URI parsed;
        String text = uri.strip();
        if (text.endsWith("://")) {
            text += "/"; // "local://": an empty authority, which java.net.URI only accepts with a path
        }
        try {
            parsed = new URI(text);
        } catch (URISyntaxException e) {
            // the exception's own message repeats the input, credentials included
            throw new IllegalArgumentException("Malformed lock store URI '" + Uris.redact(uri) + "': " + e.getReason()
                    + (e.getIndex() >= 0 ? " at index " + e.getIndex() : ""));
        }
        String scheme = parsed.getScheme();
        if (scheme == null) {
            throw new IllegalArgumentException("Lock store URI '" + Uris.redact(uri)
                    + "' has no scheme; expected something like redis://host:6379 or local://");
        }
        scheme = scheme.toLowerCase(Locale.ROOT);
        List<LockProviderFactory> factories = new ArrayList<>();
        ServiceLoader.load(LockProviderFactory.class, LockProvider.class.getClassLoader()).forEach(factories::add);
        if (Thread.currentThread().getContextClassLoader() != null) {
            ServiceLoader.load(LockProviderFactory.class).forEach(f -> {
                if (factories.stream().noneMatch(known -> known.getClass() == f.getClass())) {
                    factories.add(f);
                }
            });
        }
        TreeSet<String> known = new TreeSet<>();
        for (LockProviderFactory factory : factories) {
            if (factory.schemes().contains(scheme)) {
                return factory.create(parsed, options);
            }
            known.addAll(factory.schemes());
        }
        throw new IllegalArgumentException("No Locksmith backend for scheme '" + scheme + "' in '" + Uris.redact(uri)
                + "'; backends on the class path serve: " + String.join(", ", known)
                + " (add the module for the backend you want, e.g. io.locksmith:lock-redis)");
    }
}
