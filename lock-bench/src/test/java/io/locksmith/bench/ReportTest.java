package io.locksmith.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/benchmarks.md is what {@link Report} writes from the raw results and the hand-written analysis beside them:
 * a page edited by hand instead loses those edits on the next full run, which rewrites it.
 */
class ReportTest {

    private static final Path DOCS = Path.of("..", "docs");

    @Test
    void theCommittedPageIsWhatReportWritesFromTheRawResults(@TempDir Path out) throws IOException {
        copyRawResults(out, true);

        Report.write(out);

        List<String> committed = Files.readAllLines(DOCS.resolve("benchmarks.md"));
        List<String> written = Files.readAllLines(out.resolve("benchmarks.md"));
        for (int i = 0; i < Math.min(committed.size(), written.size()); i++) {
            assertEquals(written.get(i), committed.get(i), "docs/benchmarks.md line " + (i + 1)
                    + " differs from what Report writes; edit docs/benchmarks/analysis.md (or Report) and regenerate"
                    + " the page with io.locksmith.bench.Report docs");
        }
        assertEquals(written.size(), committed.size(), "docs/benchmarks.md has a different number of lines than"
                + " what Report writes; edit docs/benchmarks/analysis.md and regenerate the page");
        assertTrue(Files.readString(out.resolve("benchmarks.md"))
                .endsWith(Files.readString(DOCS.resolve("benchmarks").resolve("analysis.md"))),
                "the page does not end with docs/benchmarks/analysis.md");
    }

    @Test
    void redlockRowsNameTheMastersTheRunStarted(@TempDir Path out) throws IOException {
        Path raw = copyRawResults(out, false);
        String run = Files.readString(raw.resolve("run.json"));
        assertTrue(run.contains("\"Redlock masters\": \"5 × "), "the committed run.json names its five masters");
        Files.writeString(raw.resolve("run.json"), run.replace("\"Redlock masters\": \"5 × ",
                "\"Redlock masters\": \"3 × "));

        Report.write(out);

        String page = Files.readString(out.resolve("benchmarks.md"));
        assertTrue(page.contains("all three masters before reading their answers"), "the Redlock floors' rows");
        assertTrue(page.contains("the protocol's floor over three masters"), "the subjects' table");
        assertTrue(!page.contains("five masters") && !page.contains("five servers"),
                "a run over three masters is never described as over five");
    }

    /** Copies docs/benchmarks into {@code out}/benchmarks, with or without the hand-written analysis. */
    private static Path copyRawResults(Path out, boolean withAnalysis) throws IOException {
        Path raw = out.resolve("benchmarks");
        Files.createDirectories(raw);
        try (Stream<Path> files = Files.list(DOCS.resolve("benchmarks"))) {
            for (Path file : files.toList()) {
                if (withAnalysis || !file.getFileName().toString().equals("analysis.md")) {
                    Files.copy(file, raw.resolve(file.getFileName()));
                }
            }
        }
        return raw;
    }
}
