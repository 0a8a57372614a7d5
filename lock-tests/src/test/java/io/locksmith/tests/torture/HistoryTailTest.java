package io.locksmith.tests.torture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the runner reads from a worker's history while the run goes on (to wait for recovery after a fault). */
@DisplayName("history tail")
class HistoryTailTest {

    @TempDir
    Path directory;

    @Test
    @DisplayName("a worker that never acquired a name has not acquired it after any moment")
    void neverAcquiredIsNotAfter() throws IOException {
        Path history = directory.resolve("worker-3.history");
        Files.writeString(history, "START\t100\t4242\t4\n");
        HistoryTail tail = new HistoryTail(history, 3);
        tail.update();
        long now = System.nanoTime();
        assertThat(tail.acquiredAfter(0, now)).isFalse();
        assertThat(tail.acquiredAfter(0, Long.MAX_VALUE / 2)).isFalse();
        assertThat(tail.acquiredAnyAfter(now)).isFalse();
    }

    @Test
    @DisplayName("an acquisition counts after the moments before its end, not after later ones")
    void acquiredAfterComparesEnds() throws IOException {
        Path history = directory.resolve("worker-0.history");
        Files.writeString(history, "START\t100\t4242\t4\nACQ\t1\t2\t7830000000000\t7830400000000\t17\n");
        HistoryTail tail = new HistoryTail(history, 3);
        tail.update();
        assertThat(tail.acquiredAfter(2, 7830300000000L)).isTrue();
        assertThat(tail.acquiredAfter(2, 7830500000000L)).isFalse();
        assertThat(tail.acquiredAfter(0, 7830300000000L)).as("another name").isFalse();
        assertThat(tail.acquiredAnyAfter(7830300000000L)).isTrue();
        assertThat(tail.acquiredAnyAfter(7830500000000L)).isFalse();
    }

    @Test
    @DisplayName("a thread that has recorded its write may be releasing: it is held, but not certainly inside")
    void heldBeforeWriteLeavesOutThreadsPastTheirWrite() throws IOException {
        Path history = directory.resolve("worker-1.history");
        Files.writeString(history, "START\t100\t4242\t2\n"
                + "ACQ\t0\t0\t1000\t1100\t5\n"
                + "ACQ\t1\t2\t1000\t1200\t6\n"
                + "WRITE\t1\t2\t1300\t4\t5\n");
        HistoryTail tail = new HistoryTail(history, 3);
        tail.update();
        assertThat(tail.held()).containsExactly(0, 2);
        assertThat(tail.heldBeforeWrite()).containsExactly(0);

        Files.writeString(history, "REL\t1\t2\t1400\nACQ\t1\t1\t1500\t1600\t7\n", StandardOpenOption.APPEND);
        tail.update();
        assertThat(tail.held()).containsExactly(0, 1);
        assertThat(tail.heldBeforeWrite()).as("a new hold starts unwritten").containsExactly(0, 1);
    }
}
