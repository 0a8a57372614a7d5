package io.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LockNamesTest {

    @ParameterizedTest
    @ValueSource(strings = {"a", "/", "../", "{}", "'; DROP TABLE locks; --", "%", "*", " ", "日本語", "🔒🔑", "a b"})
    void dataIsAccepted(String name) {
        assertThat(LockNames.check(name)).isSameAs(name);
    }

    @Test
    void lengthIsCountedInCodePoints() {
        assertThat(LockNames.check("x".repeat(255))).hasSize(255);
        assertThat(LockNames.check("🔒".repeat(255))).hasSize(510);
        assertThatThrownBy(() -> LockNames.check("x".repeat(256)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 255").hasMessageContaining("256");
        assertThatThrownBy(() -> LockNames.check("x".repeat(10_000)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("10000");
    }

    @Test
    void controlCharactersAndBrokenUnicodeAreRejected() {
        assertThatThrownBy(() -> LockNames.check("a\nb"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("U+000A").hasMessageContaining("index 1");
        assertThatThrownBy(() -> LockNames.check("\u0000")).hasMessageContaining("control");
        assertThatThrownBy(() -> LockNames.check("\u007f")).hasMessageContaining("control");
        assertThatThrownBy(() -> LockNames.check("\u0085")).hasMessageContaining("control");
        assertThatThrownBy(() -> LockNames.check("a\uD800")).hasMessageContaining("unpaired surrogate");
        assertThatThrownBy(() -> LockNames.check("\uDC00a")).hasMessageContaining("unpaired surrogate");
    }

    @Test
    void nullAndEmptyAreRejected() {
        assertThatThrownBy(() -> LockNames.check(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> LockNames.check("")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("empty");
    }
}
