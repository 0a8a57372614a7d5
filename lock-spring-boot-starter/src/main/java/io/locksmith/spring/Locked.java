package io.locksmith.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated bean method while holding a distributed lock from the application's
 * {@link io.locksmith.LockProvider}:
 *
 * <pre>{@code
 * @Locked(name = "'stock:' + #sku", waitFor = "5s")
 * @Transactional
 * public void deduct(String sku, int quantity) { ... }
 *
 * @Scheduled(cron = "0 * * * * *")
 * @Locked(name = "'nightly-report'", lease = "10m", atLeast = "30s")
 * public void report() { ... }
 * }</pre>
 *
 * <p>The lock is taken before, and released after, every other advice on the same call that has a lower
 * precedence than {@code locksmith.advisor-order} (by default: {@code @Transactional}), so another instance
 * finds the lock free only after the method's transaction has committed.
 *
 * <p>Inside the method the hold's fencing token is available from {@link CurrentLock#fencingToken()}, or as a
 * {@code long} parameter annotated {@link FencingToken}. A nested {@code @Locked} method naming a lock the thread
 * already holds through an enclosing one re-enters it.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Locked {

    /**
     * The lock's name: a SpEL expression over the method's arguments ({@code #sku}, or {@code #p0} / {@code #a0}
     * by position; by name needs the {@code -parameters} compiler flag, which Spring Boot's build plugins set),
     * beans ({@code @bean}), and {@code #root.method}, {@code #root.args}, {@code #root.target}. A fixed name is a
     * string literal: {@code "'report'"}. The expression must give a non-empty string that follows
     * {@link io.locksmith.LockNames}' rules.
     */
    String name();

    /**
     * How long to wait for a held lock: a duration such as {@code 5s}, {@code 500ms}, {@code PT1M}, or a
     * {@code ${property}} placeholder. Empty (the default): without limit for {@link OnBusy#WAIT}, no wait at all
     * otherwise.
     */
    String waitFor() default "";

    /**
     * The hold's lease, not renewed: the lock frees itself at the latest when it ends, even if the method still
     * runs (ShedLock's {@code lockAtMostFor}). Empty (the default): the provider's lease, renewed while the method
     * runs.
     */
    String lease() default "";

    /**
     * The shortest time the lock stays held after the method started, even if it returned sooner (ShedLock's
     * {@code lockAtLeastFor}): for scheduled jobs, so that the other instances, whose clocks fire a little later,
     * find the lock held and skip. Empty or zero (the default): released when the method returns.
     */
    String atLeast() default "";

    /** What to do when the lock is held by somebody else (after {@link #waitFor()}, if any). */
    OnBusy onBusy() default OnBusy.AUTO;

    /** The name of the {@link io.locksmith.LockProvider} bean to use; empty: the only (or primary) one. */
    String provider() default "";

    /** What a {@link Locked} method does when the lock stays held by somebody else. */
    enum OnBusy {
        /** {@link #SKIP} on a method annotated {@code @Scheduled}, {@link #WAIT} on any other. */
        AUTO,
        /** Wait for the lock: without limit, or until {@link Locked#waitFor()} ends and then throw as {@link #FAIL}. */
        WAIT,
        /** Throw {@link LockBusyException} without running the method. */
        FAIL,
        /**
         * Return without running the method: {@code null}, {@code Optional.empty()}, or zero / false for a
         * primitive return type.
         */
        SKIP
    }
}
