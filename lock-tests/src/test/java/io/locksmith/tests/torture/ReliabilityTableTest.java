package io.locksmith.tests.torture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Result lines and the reliability table made from them. */
@DisplayName("reliability table")
class ReliabilityTableTest {

    @TempDir
    Path directory;

    private TortureReport report(String run) throws IOException {
        Path dir = Files.createDirectory(directory.resolve(run));
        try (SyntheticRun synthetic = new SyntheticRun(dir, 1, "a")) {
            synthetic.worker(0, 10);
            synthetic.hold(0, 0, 0, 100, 200, 1);
            synthetic.setCounter(0, 0);
            synthetic.hold(0, 0, 0, 300, 400, 2);
            synthetic.runner().faultBegins(500, 1, "x");
            synthetic.runner().faultEnds(600, 1, "ok");
            synthetic.hold(0, 0, 0, 2_600_000, 2_700_000, 3);
            synthetic.finish(0, 3_000_000);
            return synthetic.check();
        }
    }

    @Test
    @DisplayName("a report survives the trip through its JSON line")
    void jsonLine() throws IOException {
        TortureReport report = report("one");

        Map<String, Object> parsed = Json.parse(report.toJson());

        assertThat(parsed).containsEntry("backend", "synthetic").containsEntry("fault", "none")
                .containsEntry("profile", "short").containsEntry("lostUpdates", 1L)
                .containsEntry("guardedIncrements", 3L).containsEntry("overlaps", 0L)
                .containsEntry("maxRecoveryMillis", 2L).containsEntry("faults", 1L);
        assertThat(Json.parse("{\"s\":\"a\\\"b\\\\c\\n\\u00e9\",\"n\":-3,\"t\":true,\"z\":null}"))
                .containsEntry("s", "a\"b\\c\né").containsEntry("n", -3L).containsEntry("t", true)
                .containsEntry("z", null);
    }

    @Test
    @DisplayName("rows sum the runs of one backend and fault and keep the longest recovery")
    void table() throws IOException {
        Path results = directory.resolve("results.jsonl");
        Files.writeString(results, report("one").toJson() + "\n" + report("two").toJson() + "\n",
                StandardCharsets.UTF_8);

        String table = ReliabilityTable.table(List.of(results));

        assertThat(table).startsWith(ReliabilityTable.HEADER);
        assertThat(table.lines()).hasSize(3);
        assertThat(table.lines().skip(2).findFirst().orElseThrow())
                .isEqualTo("| synthetic | none | 2 | 6 | 6 | 0 | 0 | 2 | 0 | 0 | 0 | 0 | 2 (0) | 2 ms |");
        assertThat(report("three").toMarkdownRow())
                .isEqualTo("| synthetic | none | 1 | 3 | 3 | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 1 (0) | 2 ms |");
    }

    @Test
    @DisplayName("--write replaces the table between the markers and nothing else")
    void writeIntoDocument() throws IOException {
        Path results = directory.resolve("results.jsonl");
        Files.writeString(results, report("one").toJson() + "\n", StandardCharsets.UTF_8);
        Path doc = directory.resolve("reliability.md");
        Files.writeString(doc, "# Title\n\n" + ReliabilityTable.BEGIN + "\nold table\n" + ReliabilityTable.END
                + "\n\nafter\n", StandardCharsets.UTF_8);

        ReliabilityTable.main(new String[] {"--write", doc.toString(), results.toString()});

        String text = Files.readString(doc, StandardCharsets.UTF_8);
        assertThat(text).startsWith("# Title\n\n" + ReliabilityTable.BEGIN + "\n" + ReliabilityTable.HEADER)
                .doesNotContain("old table").contains("| synthetic | none | 1 |")
                .endsWith(ReliabilityTable.END + "\n\nafter\n");
    }
}
