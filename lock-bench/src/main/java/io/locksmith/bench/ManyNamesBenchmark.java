package io.locksmith.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
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

/** Many names: 8 threads over 4 contenders, each cycle on one of 1 000 names chosen uniformly at random. */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Threads(ContendedBenchmark.THREADS)
public class ManyNamesBenchmark {

    static final int NAMES = 1000;

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
            for (int i = 0; i < ContendedBenchmark.CONTENDERS; i++) {
                all.add(Subjects.open(subject));
            }
        }

        @TearDown
        public void close() throws Exception {
            for (Contender contender : all) {
                contender.close();
            }
        }
    }

    /** One thread's contender and its locks for the 1 000 names. */
    @State(Scope.Thread)
    public static class Worker {

        Lock[] locks;

        @Setup
        public void assign(Contenders contenders) {
            Contender contender = contenders.all.get(
                    Math.floorMod(contenders.next.getAndIncrement(), contenders.all.size()));
            locks = new Lock[NAMES];
            for (int i = 0; i < NAMES; i++) {
                locks[i] = contender.lock("bench-name-" + i);
            }
        }
    }

    @Benchmark
    public void randomName(Worker worker) {
        Lock lock = worker.locks[ThreadLocalRandom.current().nextInt(NAMES)];
        lock.lock();
        lock.unlock();
    }
}
