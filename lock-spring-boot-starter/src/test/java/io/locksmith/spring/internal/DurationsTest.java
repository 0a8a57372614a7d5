package io.locksmith.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationsTest {

    @Test
    void simpleAndIsoFormsAreRead() {
        assertThat(Durations.parse("500ms", "wait")).isEqualTo(Duration.ofMillis(500));
        assertThat(Durations.parse("500", "wait")).as("no unit: milliseconds").isEqualTo(Duration.ofMillis(500));
        assertThat(Durations.parse(" 5s ", "wait")).isEqualTo(Duration.ofSeconds(5));
        assertThat(Durations.parse("10m", "wait")).isEqualTo(Duration.ofMinutes(10));
        assertThat(Durations.parse("1H", "wait")).isEqualTo(Duration.ofHours(1));
        assertThat(Durations.parse("2d", "wait")).isEqualTo(Duration.ofDays(2));
        assertThat(Durations.parse("250us", "wait")).isEqualTo(Duration.ofNanos(250_000));
        assertThat(Durations.parse("PT1.5S", "wait")).isEqualTo(Duration.ofMillis(1500));
        assertThat(Durations.parse("", "wait")).as("empty: not set").isNull();
    }

    @Test
    void badTextIsRefusedNamingTheAttribute() {
        assertThatThrownBy(() -> Durations.parse("5 minutes", "lease")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lease '5 minutes'").hasMessageContaining("500ms, 5s");
        assertThatThrownBy(() -> Durations.parse("PT-5S", "atLeast")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must not be negative");
        assertThatThrownBy(() -> Durations.parse("99999999999999999999s", "wait"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("too large");
    }
}
