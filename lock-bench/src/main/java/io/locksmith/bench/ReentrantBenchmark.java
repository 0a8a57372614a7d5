package io.locksmith.bench;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/** Reentrant: the thread already holds the lock; acquire it once more and release that hold. */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Threads(1)
public class ReentrantBenchmark {

    @Param({"local-locksmith",
            "redis-locksmith", "redis-redisson", "redis-redisson-fenced", "redis-spring-pubsub", "redis-spring-spin",
            "redlock-locksmith", "redlock-redisson",
            "zookeeper-locksmith", "zookeeper-curator",
            "mariadb-locksmith", "mariadb-spring",
            "postgres-locksmith", "postgres-spring"})
    public String subject;

    private Contender contender;
    private Lock lock;

    @Setup
    public void open() throws Exception {
        contender = Subjects.open(subject);
        lock = contender.lock("bench-reentrant");
    }

    // holds belong to a thread: take the outer hold in the thread that runs the iteration
    @Setup(Level.Iteration)
    public void hold() {
        lock.lock();
    }

    @TearDown(Level.Iteration)
    public void release() {
        lock.unlock();
    }

    @TearDown
    public void close() throws Exception {
        contender.close();
    }

    @Benchmark
    public void reenter() {
        lock.lock();
        lock.unlock();
    }
}
