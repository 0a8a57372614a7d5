package io.locksmith.jdbc;

import io.locksmith.DistributedLock;
import io.locksmith.LockProvider;
import io.locksmith.tests.ExclusionChecker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Two providers contending for one lock: two threads on each, ten lock cycles apiece, every hold recorded. */
final class Contention {

    static final int CYCLES = 40;

    private Contention() {
    }

    /**
     * Runs the four threads to the end and returns what they recorded.
     *
     * @param label prefixes the owner names in the checker's report
     * @param bound how long each thread may take
     */
    static ExclusionChecker run(LockProvider first, LockProvider second, String label, Duration bound)
            throws Exception {
        ExclusionChecker checker = new ExclusionChecker();
        ExecutorService workers = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                DistributedLock lock = (w % 2 == 0 ? first : second).getLock("contended");
                String owner = label + "#" + w;
                done.add(workers.submit(() -> {
                    for (int i = 0; i < CYCLES / 4; i++) {
                        lock.lock();
                        try {
                            checker.acquired(lock.name(), owner, lock.fencingToken());
                            Thread.sleep(2);
                            checker.releasing(lock.name(), owner);
                        } finally {
                            lock.unlock();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(bound.toMillis(), TimeUnit.MILLISECONDS);
            }
        } finally {
            workers.shutdownNow();
        }
        return checker;
    }
}
