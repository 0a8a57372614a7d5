package io.locksmith.cli;

import io.locksmith.LockInfo;
import io.locksmith.LockNames;
import io.locksmith.LockProvider;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code locksmith release NAME --force}: an operator's override that frees a stuck lock. */
@Command(name = "release", mixinStandardHelpOptions = true,
        description = {"Free a lock whoever holds it (operator override).",
                "The holder is not stopped: it may still be inside its critical section, and only fencing tokens "
                        + "protect your data from it. Requires --force."})
final class ReleaseCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "NAME", description = "The lock name.")
    String name;

    @Option(names = "--force", description = "Confirm that the lock should be freed although someone may hold it.")
    boolean force;

    @Mixin
    BackendOptions backend;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        LockNames.check(name); // before the name is shown in any message
        if (!force) {
            throw new IllegalArgumentException("refusing to free lock '" + name + "' without --force: its holder "
                    + "may still be working; run 'locksmith inspect' first");
        }
        try (LockProvider provider = backend.open(backend.options().build())) {
            LockInfo before = provider.inspect(name);
            boolean released = provider.forceRelease(name);
            var out = spec.commandLine().getOut();
            if (released) {
                out.printf("released lock '%s' on %s (was held by client %s, token %s)%n", name, backend.shownUri(),
                        Locksmith.escapeControls(before.owner().orElse("?")), before.fencingToken().isPresent()
                                ? String.valueOf(before.fencingToken().getAsLong()) : "?");
            } else {
                out.printf("lock '%s' on %s was not held; nothing to release%n", name, backend.shownUri());
            }
            return 0;
        }
    }
}
