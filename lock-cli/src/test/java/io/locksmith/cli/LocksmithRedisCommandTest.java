package io.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.tests.servers.RedisServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code locksmith inspect}, {@code locksmith release --force} and {@code locksmith demo} against a Redis server
 * from the test fixture, while an application's provider (as another process would) holds the lock.
 */
class LocksmithRedisCommandTest {

    private static RedisServer server;
    private static String backend;

    private final String namespace = "cli-" + UUID.randomUUID().toString().substring(0, 8);
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @BeforeAll
    static void startServer() {
        server = RedisServer.start();
        backend = server.uri();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    private int run(String... args) {
        out.getBuffer().setLength(0);
        err.getBuffer().setLength(0);
        return Locksmith.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    }

    private static long field(String output, String label) {
        Matcher m = Pattern.compile("(?m)^" + label + "\\s+(\\d+)").matcher(output);
        assertThat(m.find()).as("'%s' in%n%s", label, output).isTrue();
        return Long.parseLong(m.group(1));
    }

    @Test
    void inspectShowsTheHolderAndReleaseForceTakesTheLock() throws Exception {
        List<String> lost = new CopyOnWriteArrayList<>();
        Duration lease = Duration.ofSeconds(3);
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(lease)
                .listener((name, why) -> lost.add(name)).build();
        try (LockProvider app = LockProvider.open(backend, options);
             LockProvider other = LockProvider.open(backend, LockOptions.builder().namespace(namespace).build())) {
            DistributedLock lock = app.getLock("job:nightly");
            lock.lock();
            long token = lock.fencingToken();

            assertThat(run("inspect", "job:nightly", "--backend", backend, "--namespace", namespace))
                    .as(err.toString()).isZero();
            String held = out.toString();
            assertThat(held).contains("lock       job:nightly").contains("state      held")
                    .contains("holder     client " + app.clientId() + ".")
                    .contains("token      " + token)
                    .as("Redis does not record when a hold began").doesNotContain("since");
            assertThat(field(held, "lease left")).as("lease left in ms").isPositive()
                    .isLessThanOrEqualTo(lease.toMillis());

            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", namespace)).isEqualTo(2);
            assertThat(err.toString()).contains("without --force");
            assertThat(app.inspect("job:nightly").isLocked()).isTrue();

            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", namespace, "--force"))
                    .as(err.toString()).isZero();
            assertThat(out.toString()).contains("released lock 'job:nightly'")
                    .containsPattern("client " + app.clientId() + "\\.[0-9a-f]+, token " + token + "\\)");

            DistributedLock next = other.getLock("job:nightly");
            assertThat(next.tryLock()).as("another provider's tryLock() right after release --force").isTrue();
            long nextToken = next.fencingToken();
            assertThat(nextToken).isGreaterThan(token);
            // the holder learns at its next renewal, a third of its lease after the last one
            long deadline = System.nanoTime() + lease.plusSeconds(10).toNanos();
            while (!lost.contains("job:nightly") && System.nanoTime() - deadline < 0) {
                Thread.sleep(20);
            }
            assertThat(lost).as("losses the holder's listener heard").containsExactly("job:nightly");
            assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
            next.unlock();

            assertThat(run("inspect", "job:nightly", "--backend", backend, "--namespace", namespace)).isZero();
            assertThat(out.toString()).contains("state      free").doesNotContain("holder")
                    .doesNotContain("lease left").contains("token      last issued " + nextToken);
            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", namespace, "--force"))
                    .isZero();
            assertThat(out.toString()).contains("was not held");

            assertThat(run("inspect", "never-locked", "--backend", backend, "--namespace", namespace)).isZero();
            assertThat(out.toString()).contains("state      free").contains("token      none issued");
        }
    }

    @Test
    void demoSellsEveryItemOnce() {
        int status = run("demo", "--backend", backend, "--namespace", namespace, "--stock", "200");
        assertThat(status).as(err.toString()).isZero();
        String output = out.toString();
        assertThat(output).contains("backend").contains(server.host() + ":" + server.port());
        assertThat(field(output, "items sold")).isEqualTo(200);
        assertThat(field(output, "oversold")).isZero();
        assertThat(field(output, "stock left")).isZero();
    }
}
