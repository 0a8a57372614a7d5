package io.locksmith.cli;

import io.locksmith.LockBackendException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code locksmith} command: {@code demo} shows what a distributed lock prevents, {@code inspect} shows who
 * holds a lock, {@code release --force} frees a stuck one.
 */
@Command(name = "locksmith", mixinStandardHelpOptions = true, versionProvider = Locksmith.Version.class,
        description = "Distributed locks over Redis, ZooKeeper, JDBC and Redlock.",
        subcommands = {DemoCommand.class, InspectCommand.class, ReleaseCommand.class,
                CommandLine.HelpCommand.class})
public final class Locksmith {

    /** Exit status for a user mistake (bad argument, unknown scheme, unreachable store). */
    static final int USAGE = 2;

    /** Runs the command and exits with its status. */
    public static void main(String[] args) {
        System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /** Runs the command with the given output streams and returns its exit status. */
    static int run(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine cli = new CommandLine(new Locksmith());
        cli.setOut(out);
        cli.setErr(err);
        cli.setExecutionExceptionHandler((e, commandLine, parsed) -> {
            // user mistakes and store trouble get one line, not a stack trace
            if (e instanceof IllegalArgumentException || e instanceof LockBackendException
                    || e instanceof UnsupportedOperationException || e instanceof IllegalStateException) {
                commandLine.getErr().println("locksmith " + commandLine.getCommandName() + ": " + oneLine(e));
                return USAGE;
            }
            throw e;
        });
        cli.setParameterExceptionHandler((e, arguments) -> {
            CommandLine commandLine = e.getCommandLine();
            commandLine.getErr().println("locksmith: " + oneLine(e) + " (try '"
                    + commandLine.getCommandSpec().qualifiedName() + " --help')");
            return USAGE;
        });
        return cli.execute(args);
    }

    private static String oneLine(Throwable e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }

    /** The version from the jar's manifest. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = Locksmith.class.getPackage().getImplementationVersion();
            return new String[] {"locksmith " + (version == null ? "development build" : version)};
        }
    }
}
