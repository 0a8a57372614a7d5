package io.locksmith.cli;

import io.locksmith.LockNames;
import io.locksmith.LockProvider;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code locksmith semaphore NAME [--set N]}: shows, or changes, the permit count the store keeps for a semaphore
 * (see {@link LockProvider#getSemaphore(String)}).
 */
@Command(name = "semaphore", mixinStandardHelpOptions = true,
        description = {"Show the permit count the store keeps for a semaphore, and how many permits are free; "
                + "with --set, change it (an operator's change, seen by every process at its next take).",
                "Lowering the count takes no permit from its holder: the number held falls to the new count as "
                        + "permits are given back."})
final class SemaphoreCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "NAME", description = "The semaphore name.")
    String name;

    @Option(names = "--set", paramLabel = "N", description = "Store N (1 to 1024) as the permit count.")
    Integer set;

    @Mixin
    BackendOptions backend;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        LockNames.check(name); // before the name is shown in any message
        try (LockProvider provider = backend.open(backend.options().build())) {
            var out = spec.commandLine().getOut();
            OptionalInt before = provider.semaphorePermits(name);
            if (set != null) {
                provider.setSemaphorePermits(name, set);
                out.printf("semaphore '%s' on %s: permit count set to %d (was %s)%n", name, backend.shownUri(), set,
                        before.isPresent() ? String.valueOf(before.getAsInt()) : "not set");
                return 0;
            }
            if (before.isEmpty()) {
                out.printf("semaphore '%s' on %s: no permit count is kept in the store (set one with --set N)%n",
                        name, backend.shownUri());
                return 0;
            }
            int free = provider.getSemaphore(name).availablePermits();
            out.printf("semaphore '%s' on %s: %d permits, %d free%n", name, backend.shownUri(), before.getAsInt(),
                    free);
            return 0;
        }
    }
}
