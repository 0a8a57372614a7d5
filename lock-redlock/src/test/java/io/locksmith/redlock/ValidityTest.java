package io.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Redlock validity arithmetic")
class ValidityTest {

    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    @Test
    @DisplayName("drift is 1 % of the lease plus 2 ms")
    void drift() {
        assertThat(Validity.drift(30_000 * MS)).isEqualTo(302 * MS);
        assertThat(Validity.drift(1_000 * MS)).isEqualTo(12 * MS);
        assertThat(Validity.drift(100 * MS)).isEqualTo(3 * MS);
    }

    @Test
    @DisplayName("validity is lease - elapsed - drift, measured from the start of the round")
    void remaining() {
        long start = 7_000 * MS;
        assertThat(Validity.remaining(1_000 * MS, start, start + 100 * MS)).isEqualTo(888 * MS);
        assertThat(Validity.remaining(1_000 * MS, start, start + 988 * MS)).isZero();
        assertThat(Validity.remaining(1_000 * MS, start, start + 1_500 * MS)).isNegative();
        assertThat(Validity.validUntil(1_000 * MS, start)).isEqualTo(start + 988 * MS);
        assertThat(Validity.validFor(1_000 * MS)).as("counted from the start of the round").isEqualTo(988 * MS);
        // nanoTime readings may wrap: only differences count
        long nearWrap = Long.MAX_VALUE - 50 * MS;
        assertThat(Validity.remaining(1_000 * MS, nearWrap, nearWrap + 100 * MS)).isEqualTo(888 * MS);
    }

    @Test
    @DisplayName("a quorum is a strict majority")
    void quorum() {
        assertThat(Validity.quorum(3)).isEqualTo(2);
        assertThat(Validity.quorum(4)).isEqualTo(3);
        assertThat(Validity.quorum(5)).isEqualTo(3);
        assertThat(Validity.quorum(7)).isEqualTo(4);
    }
}
