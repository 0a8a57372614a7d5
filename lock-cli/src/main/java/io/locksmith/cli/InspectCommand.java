package io.locksmith.cli;

import io.locksmith.LockInfo;
import io.locksmith.LockProvider;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code locksmith inspect NAME}: who holds a lock, since when, lease left, fencing token. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Show who holds a lock, since when, how much of its lease is left and its fencing token.")
final class InspectCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "NAME", description = "The lock name.")
    String name;

    @Mixin
    BackendOptions backend;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        try (LockProvider provider = backend.open(backend.options().build())) {
            LockInfo info = provider.inspect(name);
            var out = spec.commandLine().getOut();
            out.printf("lock       %s%n", info.name());
            out.printf("backend    %s (namespace %s)%n", backend.shownUri(), backend.namespace);
            out.printf("state      %s%n", info.isLocked() ? "held" : "free");
            // the owner is whatever the store holds: anyone who may write there may have put control codes in it
            info.owner().ifPresent(owner -> out.printf("holder     client %s%n", Locksmith.escapeControls(owner)));
            info.acquiredAt().ifPresent(since -> out.printf("since      %s%n", since));
            info.leaseRemaining().ifPresent(left -> out.printf("lease left %s%n", format(left)));
            out.printf("token      %s%n", info.fencingToken().isPresent()
                    ? (info.isLocked() ? "" : "last issued ") + info.fencingToken().getAsLong() : "none issued");
            return 0;
        }
    }

    private static String format(Duration d) {
        return d.toMillis() + " ms";
    }
}
