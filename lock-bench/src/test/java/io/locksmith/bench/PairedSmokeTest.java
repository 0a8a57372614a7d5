package io.locksmith.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The smoke form of {@code BenchMain --paired}: two subjects that need no server, a few short rounds after the
 * warm-up, and the table's shape. No assertion on speed.
 */
class PairedSmokeTest {

    @Test
    void interleavesTheSubjectsAfterTheWarmUpAndPrintsARowEach() throws Exception {
        String table = Paired.run(new String[] {"local-locksmith", "local-locksmith-observed"}, 3, 50);
        List<String> lines = table.lines().toList();
        assertTrue(lines.get(0).startsWith("3 rounds of 50 cycles per subject, interleaved, after at least "
                + Paired.WARM_UP_CYCLES + " of each to warm up"), lines.get(0));
        assertEquals(4, lines.size(), table);
        assertTrue(lines.get(2).startsWith("local-locksmith ") && lines.get(2).contains("1.000 (1.000-1.000)"),
                lines.get(2));
        assertTrue(lines.get(3).startsWith("local-locksmith-observed "), lines.get(3));
    }
}
