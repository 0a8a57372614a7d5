package io.locksmith.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * Proves that the virtual-thread contract can fail: its exclusion test, run through the JUnit Platform on a store
 * that grants every acquisition, fails. Needs JDK 21+, like the contract.
 */
@Tag("virtual-threads")
@DisplayName("the virtual-thread contract catches a broken backend")
class VirtualThreadContractCatchesBrokenBackendsTest {

    @Test
    @DisplayName("a store that grants every acquisition fails the virtual-thread exclusion test")
    void brokenExclusionIsCaught() {
        EngineExecutionResults results = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(BrokenExclusionVirtualThreadMutant.class, "everyWayOfTakingTheLockExcludes"))
                .execute();
        List<String> failures = results.testEvents().failed().list().stream()
                .map(event -> event.getPayload(TestExecutionResult.class)
                        .flatMap(TestExecutionResult::getThrowable).map(Throwable::toString).orElse("?"))
                .toList();
        System.out.println("everyWayOfTakingTheLockExcludes on BrokenExclusionMutant: " + failures);
        assertThat(results.testEvents().started().count()).as("tests started").isEqualTo(1);
        assertThat(failures).as("failures").hasSize(1);
        assertThat(failures.get(0)).containsAnyOf("OVERLAP", "StaleTokenException", "threads failed");
    }
}
