package io.locksmith.tests;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Locale;

/**
 * The one place the kit's worker threads come from: platform threads, or virtual threads when the system
 * property {@value #PROPERTY} is {@code virtual}.
 *
 * <p>The kit is compiled for Java 17, so virtual threads are reached through {@code Thread.ofVirtual()} by
 * method handle. Asking for them on a JDK without them fails at once with a message naming the JDK; the kit never
 * falls back to platform threads, which would pass a run that was meant to prove virtual-thread callers.
 */
final class TestThreads {

    /** The system property that picks the kind of the kit's worker threads: {@code platform} (default) or {@code virtual}. */
    static final String PROPERTY = "locksmith.tests.threads";

    /** {@code (name, body) -> Thread.ofVirtual().name(name).unstarted(body)}, or why the JDK has none. */
    private static final Object UNSTARTED_VIRTUAL = findUnstartedVirtual();

    private TestThreads() {
    }

    /** Whether {@value #PROPERTY} asks for virtual threads; fails on a value that is neither kind. */
    static boolean virtualByProperty() {
        String value = System.getProperty(PROPERTY, "platform").trim().toLowerCase(Locale.ROOT);
        return switch (value) {
            case "", "platform" -> false;
            case "virtual" -> true;
            default -> throw new IllegalStateException("system property " + PROPERTY + "=" + value
                    + " is not a kind of thread: use 'platform' (the default) or 'virtual'");
        };
    }

    /** A new, unstarted worker thread of the kind {@value #PROPERTY} asks for, running {@code body}. */
    static Thread worker(String name, Runnable body) {
        return virtualByProperty() ? virtual(name, body) : platform(name, body);
    }

    /** A new, unstarted daemon platform thread. */
    static Thread platform(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    /**
     * A new, unstarted virtual thread.
     *
     * @throws IllegalStateException on a JDK without virtual threads (before 21)
     */
    static Thread virtual(String name, Runnable body) {
        try {
            return (Thread) unstartedVirtual().invoke(name, body);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("could not make virtual thread " + name, t);
        }
    }

    /** Fails, naming the running JDK, unless it has virtual threads. */
    static void requireVirtualThreads() {
        unstartedVirtual();
    }

    private static MethodHandle unstartedVirtual() {
        if (UNSTARTED_VIRTUAL instanceof MethodHandle handle) {
            return handle;
        }
        ReflectiveOperationException cause = (ReflectiveOperationException) UNSTARTED_VIRTUAL;
        throw new IllegalStateException("virtual threads were asked for (" + PROPERTY + "=virtual, or a "
                + "virtual-thread contract), but the JDK running the tests has none: Java "
                + System.getProperty("java.version") + " at " + System.getProperty("java.home")
                + "; run them on JDK 21 or newer", cause);
    }

    private static Object findUnstartedVirtual() {
        MethodHandles.Lookup lookup = MethodHandles.publicLookup();
        try {
            Class<?> builder = Class.forName("java.lang.Thread$Builder");
            Class<?> ofVirtual = Class.forName("java.lang.Thread$Builder$OfVirtual");
            MethodHandle create = lookup.findStatic(Thread.class, "ofVirtual", MethodType.methodType(ofVirtual));
            MethodHandle name = lookup.findVirtual(ofVirtual, "name", MethodType.methodType(ofVirtual, String.class));
            MethodHandle unstarted = lookup.findVirtual(builder, "unstarted",
                    MethodType.methodType(Thread.class, Runnable.class));
            // (name) -> ofVirtual().name(name)
            MethodHandle named = MethodHandles.collectArguments(name, 0, create);
            // (name, body) -> ofVirtual().name(name).unstarted(body)
            return MethodHandles.collectArguments(
                    unstarted.asType(MethodType.methodType(Thread.class, ofVirtual, Runnable.class)), 0, named);
        } catch (ReflectiveOperationException e) {
            return e;
        }
    }
}
