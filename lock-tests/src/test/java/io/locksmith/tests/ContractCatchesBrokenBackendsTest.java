package io.locksmith.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectNestedClass;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.assertj.core.api.Condition;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/**
 * Proves that the contract can fail: runs groups of {@link LockProviderContract} against deliberately broken
 * backends (the {@code *Mutant} classes, excluded from normal runs by their {@code mutant} tag) through the JUnit
 * Platform, and checks that the group aimed at each defect fails in the expected tests, while the same harness
 * without a defect passes.
 */
@DisplayName("the contract kit catches broken backends")
class ContractCatchesBrokenBackendsTest {

    @Test
    @DisplayName("the mutant harness without a defect passes the groups used below")
    void unbrokenHarnessPasses() {
        for (Class<?> group : List.of(LockProviderContract.Exclusion.class, LockProviderContract.Reentrancy.class,
                LockProviderContract.LeaseExpiryAndRenewal.class)) {
            GroupRun run = run(PassThroughMutant.class, group);
            assertThat(run.failures()).as("failures of %s", run).isEmpty();
            assertThat(run.succeeded()).as("tests that passed in %s", run).isGreaterThan(0);
        }
    }

    @Test
    @DisplayName("a store that grants every acquisition fails the exclusion group")
    void brokenExclusionIsCaught() {
        GroupRun run = run(BrokenExclusionMutant.class, LockProviderContract.Exclusion.class);
        assertThat(run.failures()).as("failures of %s", run)
                .containsKeys("threadsOfSeveralProvidersNeverOverlap", "twoProvidersExcludeEachOther");
        assertThat(run.failures().get("threadsOfSeveralProvidersNeverOverlap")).contains("OVERLAP on 'counter'");
    }

    @Test
    @DisplayName("a store that ignores the requested lease fails the lease expiry tests")
    void brokenLeaseIsCaught() {
        GroupRun run = run(BrokenLeaseMutant.class, LockProviderContract.LeaseExpiryAndRenewal.class);
        assertThat(run.failures()).as("failures of %s", run)
                .containsKeys("explicitLeaseExpires", "unrenewedLeaseExpires");
        assertThat(run.failures().get("explicitLeaseExpires")).contains("lease ended");
    }

    @Test
    @DisplayName("a provider whose unlock() ignores the hold count fails the reentrancy group")
    void brokenReentrancyIsCaught() {
        GroupRun run = run(BrokenReentrancyMutant.class, LockProviderContract.Reentrancy.class);
        assertThat(run.failures()).as("failures of %s", run)
                .containsKeys("everyAcquisitionNeedsItsOwnUnlock", "reentryCostsNoStoreOperations");
    }

    @Test
    @DisplayName("a store that releases any hold of the releasing client fails the call-fault group")
    void ownerBlindReleaseIsCaught() {
        GroupRun run = run(OwnerBlindMutant.class, LockProviderContract.CallFaults.class);
        // The late release is certain to free the client's newer hold. Other tests of the group may fail too,
        // depending on the schedule (a background release of an earlier run freeing a newer hold under random
        // faults), so only this one is required.
        assertThat(run.failures()).as("failures of %s", run).hasEntrySatisfying(
                "callFaults/a release that arrives late, after the same client took the lock again, does not free "
                        + "the newer hold",
                why -> assertThat(why).contains("after the earlier hold's release arrived late"));
        assertThat(run.succeeded()).as("the other call-fault tests still pass").isPositive();
    }

    @Test
    @DisplayName("a store whose readers and writers never meet fails the read-write group")
    void readersIgnoringWritersAreCaught() {
        GroupRun run = run(ReadersIgnoreWritersMutant.class, LockProviderContract.ReadWriteLocks.class);
        assertThat(run.failures()).as("failures of %s", run).hasKeySatisfying(new Condition<>(
                test -> test.startsWith("tests/three providers with two threads each"), "the history test"));
        assertThat(run.failures()).as("failures of %s", run).hasKeySatisfying(new Condition<>(
                test -> test.startsWith("tests/readers of two providers"), "the sharing test"));
    }

    @Test
    @DisplayName("a store whose waiting writers never claim their turn fails the read-write group's writer test")
    void writersPassedByReadersAreCaught() {
        GroupRun run = run(WriterNeverClaimsMutant.class, LockProviderContract.ReadWriteLocks.class);
        assertThat(run.failures()).as("failures of %s", run).hasEntrySatisfying(
                "tests/once a writer waits for the readers to leave, new readers of every provider wait behind it, "
                        + "and get the lock after it",
                why -> assertThat(why).contains("a new reader's tryLock() while a writer waits"));
        assertThat(run.succeeded()).as("the other read-write tests still pass").isPositive();
    }

    @Test
    @DisplayName("without a store control the failure group generates no tests and skips none")
    void noStoreControlMeansNoFailureTests() {
        EngineExecutionResults results = EngineTestKit.engine("junit-jupiter")
                .selectors(selectNestedClass(List.of(NoStoreControlMutant.class),
                        LockProviderContract.StoreFailures.class))
                .execute();
        assertThat(results.containerEvents().failed().count()).isZero();
        assertThat(results.containerEvents().skipped().count()).isZero();
        assertThat(results.testEvents().started().count()).isZero();
        assertThat(results.testEvents().skipped().count()).isZero();
        // The same group with the local store's control generates tests per fault.
        GroupRun withControl = run(PassThroughMutant.class, LockProviderContract.StoreFailures.class);
        assertThat(withControl.failures()).as("failures of %s", withControl).isEmpty();
        assertThat(withControl.succeeded()).as("failure tests generated for KILL and PAUSE").isEqualTo(12);
    }

    private static GroupRun run(Class<? extends LockProviderContract> contract, Class<?> group) {
        EngineExecutionResults results = EngineTestKit.engine("junit-jupiter")
                .selectors(selectNestedClass(List.of(contract), group))
                .execute();
        assertThat(results.containerEvents().failed().count())
                .as("failed containers running %s on %s", group.getSimpleName(), contract.getSimpleName())
                .isZero();
        Map<String, String> failures = new TreeMap<>();
        for (Event event : results.testEvents().failed().list()) {
            // a dynamic test carries its factory's method as source: key it by its own name too, or the failures
            // of one factory would overwrite each other
            boolean dynamic = event.getTestDescriptor().getUniqueId().getLastSegment().getType()
                    .equals("dynamic-test");
            String test = event.getTestDescriptor().getSource()
                    .filter(MethodSource.class::isInstance)
                    .map(source -> ((MethodSource) source).getMethodName()
                            + (dynamic ? "/" + event.getTestDescriptor().getDisplayName() : ""))
                    .orElse(event.getTestDescriptor().getDisplayName());
            String why = event.getPayload(TestExecutionResult.class)
                    .flatMap(TestExecutionResult::getThrowable)
                    .map(Throwable::toString)
                    .orElse("?");
            failures.put(test, why);
        }
        GroupRun run = new GroupRun(contract.getSimpleName(), group.getSimpleName(), failures,
                results.testEvents().succeeded().count());
        System.out.println(run.report());
        return run;
    }

    private record GroupRun(String contract, String group, Map<String, String> failures, long succeeded) {
        String report() {
            StringBuilder b = new StringBuilder(toString());
            failures.forEach((test, why) -> b.append("\n  FAILED ").append(test).append(": ")
                    .append(why.lines().findFirst().orElse("")));
            return b.toString();
        }

        @Override
        public String toString() {
            return group + " on " + contract + " (" + succeeded + " passed, " + failures.size() + " failed)";
        }
    }
}
