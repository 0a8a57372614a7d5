package io.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LockOptionsTest {

    @Test
    void defaultsFollowTheDesign() {
        LockOptions options = LockOptions.defaults();
        assertThat(options.leaseTime()).isEqualTo(Duration.ofSeconds(30));
        assertThat(options.renewLeases()).isTrue();
        assertThat(options.renewInterval()).isEqualTo(Duration.ofSeconds(10));
        assertThat(options.namespace()).isEqualTo("locksmith");
        assertThat(options.listener()).isSameAs(LockListener.NONE);
    }

    @Test
    void renewIntervalFollowsTheLeaseUnlessSet() {
        assertThat(LockOptions.builder().leaseTime(Duration.ofSeconds(9)).build().renewInterval())
                .isEqualTo(Duration.ofSeconds(3));
        assertThat(LockOptions.builder().renewInterval(Duration.ofSeconds(1)).build().renewInterval())
                .isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void toBuilderKeepsEverything() {
        LockOptions options = LockOptions.builder().leaseTime(Duration.ofSeconds(4)).namespace("orders")
                .renewLeases(false).operationTimeout(Duration.ofMillis(700)).build();
        assertThat(options.toBuilder().build()).usingRecursiveComparison().isEqualTo(options);
    }

    @Test
    void badValuesAreRejectedWithTheValueInTheMessage() {
        assertThatThrownBy(() -> LockOptions.builder().leaseTime(Duration.ofSeconds(-1)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("leaseTime").hasMessageContaining("PT-1S");
        assertThatThrownBy(() -> LockOptions.builder().leaseTime(Duration.ZERO).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> LockOptions.builder().leaseTime(Duration.ofNanos(10)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1 ms");
        assertThatThrownBy(() -> LockOptions.builder().leaseTime(Duration.ofSeconds(3))
                .renewInterval(Duration.ofSeconds(3)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("renewInterval").hasMessageContaining("PT3S");
        assertThatThrownBy(() -> LockOptions.builder().namespace("a/b").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a/b'");
        assertThatThrownBy(() -> LockOptions.builder().namespace("").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("namespace");
        assertThatThrownBy(() -> LockOptions.builder().operationTimeout(Duration.ZERO).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("operationTimeout");
        assertThatThrownBy(() -> LockOptions.builder().retryBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT2S").hasMessageContaining("PT1S");
        assertThatThrownBy(() -> LockOptions.builder().listener(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> LockOptions.builder().observer(null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("observer");
    }

    @Test
    void theObserverIsNoneUnlessSetAndACompositeOfNoneIsNone() {
        assertThat(LockOptions.defaults().observer()).isSameAs(LockObserver.NONE);
        LockObserver one = new LockObserver() { };
        assertThat(LockOptions.builder().observer(one).build().toBuilder().build().observer()).isSameAs(one);
        assertThat(LockObserver.composite(LockObserver.NONE, LockObserver.NONE)).isSameAs(LockObserver.NONE);
        assertThat(LockObserver.composite(LockObserver.NONE, one)).isSameAs(one);
    }
}
