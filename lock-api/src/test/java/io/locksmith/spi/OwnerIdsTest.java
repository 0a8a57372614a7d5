package io.locksmith.spi;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class OwnerIdsTest {

    private static final String CLIENT = "0123456789abcdef0123456789abcdef";

    @Test
    void laterRunsOfTheSameClientCompareByRunNumber() {
        assertThat(OwnerIds.clientId(CLIENT + ".1c")).isEqualTo(CLIENT);
        assertThat(OwnerIds.isLaterRun(CLIENT + ".1c", CLIENT + ".9")).as("hex, not text").isTrue();
        assertThat(OwnerIds.isLaterRun(CLIENT + ".9", CLIENT + ".1c")).isFalse();
        assertThat(OwnerIds.isLaterRun(CLIENT + ".9", CLIENT + ".9")).as("the same run").isFalse();
        assertThat(OwnerIds.isLaterRun(CLIENT + ".a", "fedcba9876543210fedcba9876543210.1")).as("another client")
                .isFalse();
        assertThat(OwnerIds.isLaterRun(CLIENT, CLIENT + ".1")).as("no run number").isFalse();
    }
}
