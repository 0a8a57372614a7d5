package io.locksmith.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The smoke form of {@code BenchMain --multiprocess}: two worker JVMs of two threads each on one Redis lock for two
 * seconds, against a {@code redis-server} the fixtures start. Structural facts only (every process acquired, no
 * failure, no overlap, the row parses, no worker left running); no assertion on speed or fairness.
 */
class MultiProcessSmokeTest {

    private static final MultiProcess.Settings SHORT = MultiProcess.Settings.parse("redis-locksmith",
            "--processes", "2", "--threads", "2", "--seconds", "2");

    @AfterEach
    void noWorkerOutlivesItsRun() {
        List<ProcessHandle> workers = ProcessHandle.current().descendants()
                .filter(p -> p.info().commandLine().orElse("").contains(MultiProcessWorker.class.getName()))
                .toList();
        assertEquals(List.of(), workers, "worker processes still running");
    }

    @Test
    void everyProcessAcquiresAndTheRowParses() throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        List<MultiProcess.Result> results = MultiProcess.run(SHORT,
                new PrintStream(printed, true, StandardCharsets.UTF_8));

        assertEquals(1, results.size());
        MultiProcess.Result result = results.get(0);
        assertNull(result.failure());
        assertEquals(0, result.breaches(), result.firstBreach());
        assertEquals(2, result.acquisitions().length);
        assertTrue(Arrays.stream(result.acquisitions()).allMatch(n -> n > 0),
                "every process acquired: " + Arrays.toString(result.acquisitions()));
        assertEquals(result.total(), result.waits().length, "one wait per counted acquisition");

        String row = printed.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith("| redis-locksmith |"))
                .findFirst().orElseThrow(() -> new AssertionError("no row in\n" + printed));
        String[] cells = Arrays.stream(row.split("\\|")).skip(1).map(String::strip).toArray(String[]::new);
        int columns = MultiProcess.HEADER.lines().findFirst().orElseThrow().split("\\|").length - 1;
        assertEquals(columns, cells.length, row);
        assertEquals("2 × 2", cells[1]);
        assertEquals(result.total(), Long.parseLong(cells[3]));
        double jain = Double.parseDouble(cells[5]);
        assertTrue(jain >= 0.5 && jain <= 1.0, "Jain's index over 2 processes lies in [1/2, 1]: " + jain);
        for (int c = 6; c <= 9; c++) {
            Double.parseDouble(cells[c].replace(",", ""));
        }
        double shares = Arrays.stream(cells[10].split(" / ")).mapToDouble(Double::parseDouble).sum();
        assertEquals(100, shares, 0.2, row);
        assertEquals("0", cells[11]);
    }

    @Test
    void theExclusionCheckCatchesALockThatExcludesNobody() throws Exception {
        // redis-floor's lock() is a bare script call that always succeeds
        try (Servers servers = Servers.start(Set.of("redis"))) {
            MultiProcess.Result result = MultiProcess.measure("redis-floor", SHORT, servers.jvmArgs());
            assertNull(result.failure());
            assertTrue(result.breaches() > 0, "breaches of a lock that excludes nobody");
            assertTrue(result.firstBreach().contains("got the lock while"), result.firstBreach());
        }
    }

    @Test
    void aWorkerThatFailsFailsItsSubject() throws Exception {
        int closed;
        try (ServerSocket socket = new ServerSocket(0)) {
            closed = socket.getLocalPort();
        }
        MultiProcess.Result result = MultiProcess.measure("redis-locksmith", SHORT,
                List.of("-D" + Servers.REDIS + "=127.0.0.1:" + closed));
        assertNotNull(result.failure());
        assertTrue(result.failure().contains("exited with status 1"), result.failure());
        assertTrue(MultiProcess.row(result).contains("**failed**"), MultiProcess.row(result));
    }

    @Test
    void subjectsThatCannotContendAcrossProcessesAreRefused() {
        for (String subject : List.of("local-locksmith", "mariadb-shedlock", "redis-floor", "nope")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> MultiProcess.Settings.parse(subject));
            assertTrue(e.getMessage().contains("'" + subject + "'"), e.getMessage());
        }
    }
}
