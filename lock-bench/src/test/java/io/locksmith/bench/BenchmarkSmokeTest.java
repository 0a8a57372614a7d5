package io.locksmith.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.results.RunResult;

/**
 * The smoke form of the benchmarks: every benchmark method for every subject runs one short iteration, unforked,
 * against the fixtures' servers, and the report is generated; any benchmark that throws fails the build. No
 * assertion on speed.
 */
class BenchmarkSmokeTest {

    @Test
    void everyBenchmarkRunsOnceAndTheReportIsWritten() throws Exception {
        System.setProperty(Subjects.SMOKE, "true");
        Path out = Path.of("target", "smoke");
        Collection<RunResult> results = BenchMain.run(BenchMain.Settings.parse(
                "--out", out.toString(), "--forks", "0", "--warmup", "0", "--iterations", "1", "--time", "100ms",
                "--renewal-locks", "200", "--renewal-periods", "1", "--label", "smoke", "--command",
                "mvn -pl lock-bench verify"));

        int expected = subjects(CycleBenchmark.class) + subjects(ReentrantBenchmark.class)
                + subjects(ContendedBenchmark.Contenders.class) + subjects(ManyNamesBenchmark.Contenders.class);
        assertEquals(expected, results.size(), "benchmark runs, one per scenario and subject");
        assertTrue(Files.readString(out.resolve("benchmarks.md")).contains("## Renewal at scale"));
    }

    private static int subjects(Class<?> benchmark) throws NoSuchFieldException {
        return benchmark.getField("subject").getAnnotation(Param.class).value().length;
    }
}
