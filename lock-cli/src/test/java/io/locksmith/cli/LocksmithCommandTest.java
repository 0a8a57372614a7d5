package io.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import io.locksmith.DistributedLock;
import io.locksmith.DistributedSemaphore;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.Permit;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The command as users run it, in-process, against the in-JVM local:// store. */
class LocksmithCommandTest {

    private final String backend = "local://cli-" + UUID.randomUUID();
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        return Locksmith.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    }

    private static int field(String output, String label) {
        Matcher m = Pattern.compile("(?m)^" + label + "\\s+(\\d+)").matcher(output);
        assertThat(m.find()).as("'%s' in%n%s", label, output).isTrue();
        return Integer.parseInt(m.group(1));
    }

    @Test
    void demoWithTheLockSellsEveryItemOnceAcrossInstances() {
        int status = run("demo", "--backend", backend, "--stock", "300", "--instances", "3", "--workers", "3");
        assertThat(status).as(err.toString()).isZero();
        String output = out.toString();
        assertThat(field(output, "items sold")).isEqualTo(300);
        assertThat(field(output, "oversold")).isZero();
        assertThat(field(output, "stock left")).isZero();
        assertThat(output).contains("acquire latency  p50").contains("per instance     #0 ");
        assertThat(jainPrinted(output)).isCloseTo(jainOfShares(output), offset(0.001))
                .isBetween(1.0 / 3, 1.0);
    }

    /** The index the demo printed. */
    private static double jainPrinted(String output) {
        Matcher m = Pattern.compile("(?m)^fairness\\s+Jain's index over instances (\\d\\.\\d{3}) ").matcher(output);
        assertThat(m.find()).as("the fairness line in%n%s", output).isTrue();
        return Double.parseDouble(m.group(1));
    }

    /** Jain's index recomputed from the per-instance counts the demo printed. */
    private static double jainOfShares(String output) {
        Matcher m = Pattern.compile("#\\d+ (\\d+) \\(").matcher(output.substring(output.indexOf("per instance")));
        double sum = 0;
        double squares = 0;
        int n = 0;
        while (m.find()) {
            double x = Double.parseDouble(m.group(1));
            sum += x;
            squares += x * x;
            n++;
        }
        return sum * sum / (n * squares);
    }

    @Test
    void demoRunsOnTheEmbeddedH2DatabaseByDefault() {
        int status = run("demo", "--stock", "100", "--instances", "2", "--workers", "2");
        assertThat(status).as(err.toString()).isZero();
        String output = out.toString();
        assertThat(output).contains("backend          jdbc:h2:mem:");
        assertThat(field(output, "items sold")).isEqualTo(100);
        assertThat(field(output, "oversold")).isZero();
    }

    @Test
    void demoWithoutTheLockOversells() {
        int status = run("demo", "--no-lock", "--stock", "300", "--instances", "3", "--workers", "3", "--work", "1ms");
        assertThat(status).isZero();
        String output = out.toString();
        assertThat(output).contains("NO LOCK");
        // 9 workers read, wait a millisecond and write: many sell the same item
        assertThat(field(output, "oversold")).isPositive();
        assertThat(field(output, "items sold")).isGreaterThan(300);
    }

    @Test
    void inspectShowsTheHolderAndReleaseNeedsForce() {
        LockOptions options = LockOptions.builder().namespace("ops").build();
        try (LockProvider app = LockProvider.open(backend, options)) {
            DistributedLock lock = app.getLock("job:nightly");
            lock.lock();
            long token = lock.fencingToken();

            assertThat(run("inspect", "job:nightly", "--backend", backend, "--namespace", "ops")).isZero();
            assertThat(out.toString()).contains("state      held").contains("client " + app.clientId() + ".")
                    .contains("token      " + token).contains("lease left");

            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", "ops")).isEqualTo(2);
            assertThat(err.toString()).contains("without --force").doesNotContain("\tat ");
            assertThat(app.inspect("job:nightly").isLocked()).isTrue();

            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", "ops", "--force")).isZero();
            assertThat(out.toString()).contains("released lock 'job:nightly'");
            assertThat(app.inspect("job:nightly").isLocked()).isFalse();
            assertThat(run("release", "job:nightly", "--backend", backend, "--namespace", "ops", "--force")).isZero();
            assertThat(out.toString()).contains("was not held");
        }
    }

    @Test
    void semaphoreShowsAndSetsThePermitCount() throws Exception {
        LockOptions options = LockOptions.builder().namespace("ops").build();
        try (LockProvider app = LockProvider.open(backend, options)) {
            assertThat(run("semaphore", "exports", "--backend", backend, "--namespace", "ops")).isZero();
            assertThat(out.toString()).contains("no permit count is kept");

            assertThat(run("semaphore", "exports", "--set", "3", "--backend", backend, "--namespace", "ops")).isZero();
            assertThat(out.toString()).contains("permit count set to 3 (was not set)");
            DistributedSemaphore exports = app.getSemaphore("exports");
            assertThat(exports.permits()).isEqualTo(3);
            try (Permit permit = exports.acquire()) {
                assertThat(run("semaphore", "exports", "--backend", backend, "--namespace", "ops")).isZero();
                assertThat(out.toString()).contains("3 permits, 2 free");
            }

            assertThat(run("semaphore", "exports", "--set", "0", "--backend", backend, "--namespace", "ops"))
                    .isEqualTo(2);
            assertThat(err.toString()).contains("1 to 1024").doesNotContain("\tat ");
            assertThat(run("semaphore", "exports", "--set", "1", "--backend", backend, "--namespace", "ops")).isZero();
            assertThat(out.toString()).contains("permit count set to 1 (was 3)");
            assertThat(exports.permits()).isEqualTo(1);
        }
    }

    @Test
    void userMistakesGetOneLineAndNoStackTrace() {
        assertThat(run("inspect", "x", "--backend", "nosuch://host:1")).isEqualTo(2);
        assertThat(run("inspect", "x", "--backend", "redis://bad host")).isEqualTo(2);
        assertThat(run("inspect", "bad\nname", "--backend", backend)).isEqualTo(2);
        assertThat(run("demo", "--backend", backend, "--stock", "0")).isEqualTo(2);
        assertThat(run("demo", "--backend", backend, "--work", "soon")).isEqualTo(2);
        assertThat(run("inspect", "x", "--backend", backend, "--timeout", "-5s")).isEqualTo(2);
        assertThat(run("inspect", "x", "--backend", backend, "--namespace", "a/b")).isEqualTo(2);
        assertThat(run("frobnicate")).isEqualTo(2);
        String errors = err.toString();
        assertThat(errors).contains("No Locksmith backend for scheme 'nosuch'").contains("Malformed")
                .contains("control characters").contains("--stock must be between").contains("--work takes")
                .contains("--timeout must be positive").contains("namespace").contains("frobnicate")
                .doesNotContain("\tat ").doesNotContain("Exception:");
    }

    @Test
    void everySubcommandHasHelp() {
        for (String command : new String[] {"demo", "inspect", "release", "semaphore"}) {
            assertThat(run(command, "--help")).isZero();
        }
        assertThat(out.toString()).contains("Usage: locksmith demo").contains("Usage: locksmith inspect")
                .contains("Usage: locksmith release").contains("--force").contains("Usage: locksmith semaphore")
                .contains("--set");
    }
}
