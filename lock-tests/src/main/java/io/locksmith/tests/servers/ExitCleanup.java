package io.locksmith.tests.servers;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One JVM shutdown hook that closes every server this JVM started and did not close, so no server process or
 * temp directory outlives the test run.
 */
final class ExitCleanup {

    private static final Set<AutoCloseable> OPEN = Collections.synchronizedSet(new LinkedHashSet<>());

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(ExitCleanup::closeAll, "locksmith-test-servers-cleanup"));
    }

    private ExitCleanup() {
    }

    /** Closes {@code resource} at JVM exit unless it is unregistered first. */
    static void register(AutoCloseable resource) {
        OPEN.add(resource);
    }

    /** Forgets {@code resource}, typically from its own {@code close()}. */
    static void unregister(AutoCloseable resource) {
        OPEN.remove(resource);
    }

    private static void closeAll() {
        List<AutoCloseable> open;
        synchronized (OPEN) {
            open = new ArrayList<>(OPEN);
        }
        Collections.reverse(open);
        for (AutoCloseable resource : open) {
            try {
                resource.close();
            } catch (Exception | LinkageError e) {
                // the JVM is exiting: keep closing the others
            }
        }
    }
}
