package io.locksmith.spring.internal;

import io.locksmith.DistributedLock;
import io.locksmith.LockException;
import io.locksmith.LockProvider;
import io.locksmith.spring.Locked.OnBusy;
import io.locksmith.spring.LockBusyException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.core.MethodClassKey;
import org.springframework.util.StringValueResolver;

/**
 * Runs {@link io.locksmith.spring.Locked} methods while holding their lock.
 *
 * <p>A call evaluates the lock's name, takes the lock as the annotation says (waiting, failing or skipping when it
 * is held), runs the method with the hold's fencing token reachable, and releases the lock when the method ends.
 * The calling thread owns the hold, as with {@code lock()}; a method with {@code atLeast} hands the hold to a
 * {@link HolderThreads holder thread} instead, which keeps it past the method's return. A nested locked call
 * naming a lock the thread already holds through an enclosing one re-enters it without asking the store.
 */
public final class LockedInterceptor implements MethodInterceptor {

    private static final Logger log = LoggerFactory.getLogger(LockedInterceptor.class);
    /** The locked calls running on each thread, innermost first. */
    private static final ThreadLocal<Deque<Frame>> FRAMES = ThreadLocal.withInitial(ArrayDeque::new);
    /** A wait with no limit: the machinery treats a wait this long as unbounded. */
    private static final Duration FOREVER = Duration.ofNanos(Long.MAX_VALUE);

    private final LockProviders providers;
    private final StringValueResolver placeholders;
    private final BeanFactory beans;
    private final HolderThreads holders;
    private final Map<MethodClassKey, LockedMethod> methods = new ConcurrentHashMap<>();

    public LockedInterceptor(LockProviders providers, StringValueResolver placeholders, BeanFactory beans,
            HolderThreads holders) {
        this.providers = Objects.requireNonNull(providers, "providers");
        this.placeholders = placeholders;
        this.beans = beans;
        this.holders = Objects.requireNonNull(holders, "holders");
    }

    /** The innermost locked call on this thread; {@code what} names the accessor for the error. */
    public static Frame current(String what) {
        Frame frame = FRAMES.get().peek();
        if (frame == null) {
            throw new IllegalStateException("CurrentLock." + what + "(): no @Locked method is running on thread '"
                    + Thread.currentThread().getName() + "'");
        }
        return frame;
    }

    /** Whether a locked call runs on this thread. */
    public static boolean isPresent() {
        return !FRAMES.get().isEmpty();
    }

    /**
     * Reads and checks the annotation of {@code method} as called on {@code targetClass}, once; null if the method
     * is not locked.
     *
     * @throws IllegalStateException naming the method if the annotation is wrong
     */
    LockedMethod prepare(Method method, Class<?> targetClass) {
        MethodClassKey key = new MethodClassKey(method, targetClass);
        LockedMethod known = methods.get(key);
        if (known != null) {
            return known;
        }
        LockedMethod parsed = LockedMethod.of(AopUtils.getMostSpecificMethod(method, targetClass), placeholders);
        if (parsed == null) {
            return null;
        }
        LockedMethod raced = methods.putIfAbsent(key, parsed);
        return raced != null ? raced : parsed;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Class<?> targetClass = target == null ? invocation.getMethod().getDeclaringClass()
                : AopUtils.getTargetClass(target);
        LockedMethod locked = prepare(invocation.getMethod(), targetClass);
        if (locked == null) {
            return invocation.proceed();
        }
        String name = locked.lockName(target, invocation.getArguments(), beans);
        LockProvider provider = providers.get(locked.provider, locked.description);
        Deque<Frame> frames = FRAMES.get();
        for (Frame frame : frames) {
            if (frame.provider == provider && frame.name.equals(name)) {
                return proceed(invocation, locked, frames, frame); // held by an enclosing locked call
            }
        }
        DistributedLock lock = provider.getLock(name);
        if (locked.atLeast != null) {
            return invokeHeldByHolder(invocation, locked, provider, lock, frames);
        }
        long start = System.nanoTime();
        if (!acquire(lock, locked, false)) {
            return busy(locked, name, provider, start);
        }
        Throwable failure = null;
        try {
            return proceed(invocation, locked, frames, new Frame(provider, name, lock.fencingToken()));
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            unlock(lock, failure);
        }
    }

    private Object invokeHeldByHolder(MethodInvocation invocation, LockedMethod locked, LockProvider provider,
            DistributedLock lock, Deque<Frame> frames) throws Throwable {
        long start = System.nanoTime();
        HolderThreads.Hold hold = holders.hold(lock, target -> acquire(target, locked, true), locked.atLeast,
                locked.description);
        if (hold == null) {
            return busy(locked, lock.name(), provider, start);
        }
        try {
            return proceed(invocation, locked, frames, new Frame(provider, lock.name(), hold.fencingToken()));
        } finally {
            hold.methodEnded();
        }
    }

    private static Object proceed(MethodInvocation invocation, LockedMethod locked, Deque<Frame> frames, Frame frame)
            throws Throwable {
        if (locked.tokenParameter >= 0) {
            // the invocation's argument array is the one the target method is called with
            invocation.getArguments()[locked.tokenParameter] = frame.token;
        }
        frames.push(frame);
        try {
            return invocation.proceed();
        } finally {
            frames.pop();
        }
    }

    /**
     * Takes the lock as the method's annotation says.
     *
     * @param interruptible whether a wait without limit ends on interrupt (a holder thread's must)
     * @return false if it stayed held by somebody else
     * @throws LockException if interrupted while waiting; the thread's interrupt flag is set again
     */
    static boolean acquire(DistributedLock lock, LockedMethod locked, boolean interruptible) {
        Duration wait = locked.wait != null ? locked.wait : locked.onBusy == OnBusy.WAIT ? FOREVER : Duration.ZERO;
        try {
            if (locked.lease != null) {
                return lock.tryLock(wait, locked.lease);
            }
            if (wait == FOREVER && !interruptible) {
                lock.lock();
                return true;
            }
            return wait.isZero() ? lock.tryLock() : lock.tryLock(wait.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockException("Interrupted while waiting for lock '" + lock.name() + "' of " + locked.description,
                    e);
        }
    }

    private static Object busy(LockedMethod locked, String name, LockProvider provider, long start) {
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        if (locked.onBusy == OnBusy.SKIP) {
            log.debug("Skipped {}: lock '{}' on {} is held elsewhere (waited {} ms)", locked.description, name,
                    provider.backend(), waited);
            return locked.skippedResult();
        }
        throw new LockBusyException("Lock '" + name + "' on " + provider.backend() + " of " + locked.description
                + " is held elsewhere: waited " + waited + " ms"
                + (locked.wait == null ? "" : " (wait limit " + locked.wait.toMillis() + " ms)"));
    }

    private static void unlock(DistributedLock lock, Throwable failure) {
        try {
            lock.unlock();
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            // the method's own failure is what the caller must see; the release problem rides along with it
            failure.addSuppressed(e);
        }
    }

    /** One locked call on a thread: its provider, lock name and fencing token. */
    public record Frame(LockProvider provider, String name, long token) {
    }
}
