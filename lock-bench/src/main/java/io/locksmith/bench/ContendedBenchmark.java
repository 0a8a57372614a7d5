package io.locksmith.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * Contended: 8 threads spread over 4 contenders (4 "processes"), one name, empty critical section. Each sample is
 * one thread's {@code lock()} (its wait for the handoff) plus its {@code unlock()}; handoffs per second are the
 * threads divided by the mean sample.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Threads(ContendedBenchmark.THREADS)
public class ContendedBenchmark {

    static final int THREADS = 8;
    static final int CONTENDERS = 4;

    /** The contenders shared by all threads of the trial. */
    @State(Scope.Benchmark)
    public static class Contenders {

        @Param({"local-locksmith",
                "redis-locksmith", "redis-redisson", "redis-redisson-fenced",
                "redis-spring-pubsub", "redis-spring-spin",
                "redlock-locksmith", "redlock-redisson",
                "zookeeper-locksmith", "zookeeper-curator",
                "mariadb-locksmith", "mariadb-spring",
                "postgres-locksmith", "postgres-spring"})
        public String subject;

        final List<Contender> all = new ArrayList<>();
        final AtomicInteger next = new AtomicInteger();

        @Setup
        public void open() throws Exception {
            for (int i = 0; i < CONTENDERS; i++) {
                all.add(Subjects.open(subject));
            }
        }

        @TearDown
        public void close() throws Exception {
            for (Contender contender : all) {
                contender.close();
            }
        }

        /** The next thread's contender, round robin, so each contender serves THREADS / CONTENDERS threads. */
        Contender assign() {
            return all.get(Math.floorMod(next.getAndIncrement(), all.size()));
        }
    }

    /** One thread's lock, on its contender. */
    @State(Scope.Thread)
    public static class Worker {

        Lock lock;

        @Setup
        public void assign(Contenders contenders) {
            lock = contenders.assign().lock("bench-contended");
        }
    }

    @Benchmark
    public void handoff(Worker worker) {
        worker.lock.lock();
        worker.lock.unlock();
    }
}
