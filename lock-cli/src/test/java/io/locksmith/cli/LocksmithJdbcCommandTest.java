package io.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.DistributedLock;
import io.locksmith.LockLostException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code locksmith inspect} and {@code locksmith release --force} against the MariaDB and PostgreSQL servers at
 * 127.0.0.1 in both JDBC modes, while an application's provider (as another process would) holds the lock.
 */
class LocksmithJdbcCommandTest {

    private static final String MARIADB = "jdbc:mariadb://127.0.0.1:3306/test?user=root";
    private static final String POSTGRES = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

    private final String namespace = "cli-" + UUID.randomUUID().toString().substring(0, 8);
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        out.getBuffer().setLength(0);
        err.getBuffer().setLength(0);
        return Locksmith.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    }

    private static String backend(String database, String mode) {
        String url = database.equals("mariadb") ? MARIADB : POSTGRES;
        return url + "&locksmith.table=locksmith_cli_test&locksmith.mode=" + mode;
    }

    @ParameterizedTest(name = "{0} {1} mode")
    @CsvSource({"mariadb, lease", "mariadb, session", "postgresql, lease", "postgresql, session"})
    void inspectShowsTheHolderAndReleaseForceTakesTheLock(String database, String mode) throws Exception {
        String backend = backend(database, mode);
        List<String> lost = new CopyOnWriteArrayList<>();
        LockOptions options = LockOptions.builder().namespace(namespace).leaseTime(Duration.ofSeconds(3))
                .listener((name, why) -> lost.add(name)).build();
        try (LockProvider app = LockProvider.open(backend, options);
             LockProvider other = LockProvider.open(backend, LockOptions.builder().namespace(namespace).build())) {
            DistributedLock lock = app.getLock("job:nightly");
            lock.lock();
            long token = lock.fencingToken();

            assertThat(run("inspect", "job:nightly", "--backend", backend, "--namespace", namespace))
                    .as(err.toString()).isZero();
            String held = out.toString();
            assertThat(held).contains("lock       job:nightly").contains("state      held");
            if (mode.equals("lease")) {
                assertThat(held).contains("holder     client " + app.clientId() + ".").contains("token      " + token)
                        .contains("since").contains("lease left");
            } else if (database.equals("mariadb")) {
                assertThat(held).contains("holder     client " + app.clientId() + ".").contains("token      " + token)
                        .contains("since").doesNotContain("lease left");
            } else {
                // PostgreSQL shows the backend holding the row, not the client's record
                assertThat(held).containsPattern("holder     client backend pid \\d+").doesNotContain("lease left");
            }

            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", namespace)).isEqualTo(2);
            assertThat(err.toString()).contains("without --force");
            assertThat(app.inspect("job:nightly").isLocked()).isTrue();

            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", namespace, "--force"))
                    .as(err.toString()).isZero();
            assertThat(out.toString()).contains("released lock 'job:nightly'");
            if (!(mode.equals("session") && database.equals("postgresql"))) {
                assertThat(out.toString())
                        .containsPattern("client " + app.clientId() + "\\.[0-9a-f]+, token " + token + "\\)");
            }

            DistributedLock next = other.getLock("job:nightly");
            assertThat(next.tryLock()).as("another provider's tryLock() right after release --force").isTrue();
            assertThat(next.fencingToken()).isGreaterThan(token);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (!lost.contains("job:nightly") && System.nanoTime() - deadline < 0) {
                Thread.sleep(20);
            }
            assertThat(lost).as("losses the holder's listener heard").containsExactly("job:nightly");
            assertThatThrownBy(lock::unlock).isInstanceOf(LockLostException.class);
            next.unlock();

            assertThat(run("inspect", "job:nightly", "--backend", backend, "--namespace", namespace)).isZero();
            assertThat(out.toString()).contains("state      free").doesNotContain("holder");
            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", namespace, "--force"))
                    .isZero();
            assertThat(out.toString()).contains("was not held");
        }
    }
}
