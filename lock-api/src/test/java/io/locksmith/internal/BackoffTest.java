package io.locksmith.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The polling waiter's backoff: jittered delays that grow to the maximum, and start over on a restart. */
class BackoffTest {

    private static final long MIN = 10;
    private static final long MAX = 1_000;

    @Test
    void delaysStayWithinTheGrowingCeilingAndTheMaximum() {
        Backoff backoff = new Backoff(MIN, MAX);
        long ceiling = MIN;
        for (int i = 0; i < 50; i++) {
            assertThat(backoff.next()).as("delay %d", i).isBetween(MIN, ceiling);
            ceiling = Math.min(MAX, ceiling * 2);
        }
    }

    @Test
    void aRestartDrawsFromTheShortestDelaysAgain() {
        Backoff backoff = new Backoff(MIN, MAX);
        for (int i = 0; i < 20; i++) {
            backoff.next(); // the ceiling is at the maximum now
        }
        for (int round = 0; round < 200; round++) {
            backoff.restart();
            assertThat(backoff.next()).as("the first delay after restart %d", round).isBetween(MIN, 2 * MIN);
        }
        backoff.restart();
        backoff.next();
        assertThat(backoff.next()).as("the second delay after a restart").isBetween(MIN, 4 * MIN);
    }
}
