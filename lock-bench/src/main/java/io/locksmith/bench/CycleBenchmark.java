package io.locksmith.bench;

import java.util.concurrent.TimeUnit;
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

/** Uncontended cycle: one thread, {@code lock()} + {@code unlock()} on one name, against the floor. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Threads(1)
public class CycleBenchmark {

    @Param({"local-locksmith",
            "redis-locksmith", "redis-redisson", "redis-redisson-fenced", "redis-spring-pubsub", "redis-spring-spin",
            "redis-floor", "redis-floor-scripts",
            "redlock-locksmith", "redlock-redisson", "redlock-floor", "redlock-floor-scripts",
            "zookeeper-locksmith", "zookeeper-curator", "zookeeper-floor",
            "mariadb-locksmith", "mariadb-spring", "mariadb-shedlock", "mariadb-floor",
            "postgres-locksmith", "postgres-spring", "postgres-shedlock", "postgres-floor",
            "redis-locksmith-semaphore", "redis-locksmith-semaphore-stored", "redis-redisson-semaphore",
            "zookeeper-locksmith-semaphore", "zookeeper-curator-semaphore",
            "redis-locksmith-read", "redis-locksmith-write", "redis-redisson-read", "redis-redisson-write",
            "zookeeper-locksmith-read", "zookeeper-locksmith-write", "zookeeper-curator-read",
            "zookeeper-curator-write", "mariadb-locksmith-read", "mariadb-locksmith-write", "postgres-locksmith-read",
            "postgres-locksmith-write", "redlock-locksmith-read", "redlock-locksmith-write",
            "mariadb-locksmith-session-read", "mariadb-locksmith-session-write", "postgres-locksmith-session-read",
            "postgres-locksmith-session-write"})
    public String subject;

    private Contender contender;
    private Lock lock;

    @Setup
    public void open() throws Exception {
        contender = Subjects.open(subject);
        lock = contender.lock("bench-cycle");
    }

    @TearDown
    public void close() throws Exception {
        contender.close();
    }

    @Benchmark
    public void cycle() {
        lock.lock();
        lock.unlock();
    }
}
