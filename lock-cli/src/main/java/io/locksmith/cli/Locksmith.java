package io.locksmith.cli;

import io.locksmith.LockBackendException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The {@code locksmith} command: {@code demo} shows what a distributed lock prevents, {@code inspect} shows who
 * holds a lock, {@code release --force} frees a stuck one, {@code semaphore} shows or sets a permit count.
 */
@Command(name = "locksmith", mixinStandardHelpOptions = true, versionProvider = Locksmith.Version.class,
        description = "Distributed locks over Redis, ZooKeeper, JDBC and Redlock.",
        subcommands = {DemoCommand.class, InspectCommand.class, ReleaseCommand.class, SemaphoreCommand.class,
                CommandLine.HelpCommand.class})
public final class Locksmith {

    /** Exit status for a user mistake (bad argument, unknown scheme, unreachable store). */
    static final int USAGE = 2;

    /** Exit status for a failure that is no user mistake: a bug in Locksmith or in a client library. */
    static final int SOFTWARE = 1;

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
            // user mistakes and store trouble get one line, not a stack trace; so does anything else, with the
            // exception's class, since a stack trace tells a user of the command nothing they can act on
            String message = scrub(commandLine, oneLine(e));
            if (e instanceof IllegalArgumentException || e instanceof LockBackendException
                    || e instanceof UnsupportedOperationException || e instanceof IllegalStateException) {
                commandLine.getErr().println("locksmith " + commandLine.getCommandName() + ": " + message);
                return USAGE;
            }
            commandLine.getErr().println("locksmith " + commandLine.getCommandName() + ": unexpected "
                    + e.getClass().getName() + ": " + message);
            return SOFTWARE;
        });
        cli.setParameterExceptionHandler((e, arguments) -> {
            CommandLine commandLine = e.getCommandLine();
            commandLine.getErr().println("locksmith: " + oneLine(e) + " (try '"
                    + commandLine.getCommandSpec().qualifiedName() + " --help')");
            return USAGE;
        });
        return cli.execute(args);
    }

    /** The first line of the message, with any other control character escaped. */
    private static String oneLine(Throwable e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        int end = message.length();
        for (char c : new char[] {'\n', '\r'}) {
            int at = message.indexOf(c);
            if (at >= 0 && at < end) {
                end = at;
            }
        }
        return escapeControls(message.substring(0, end));
    }

    /** {@code text} with control characters (which could move the cursor or recolour a terminal) escaped. */
    static String escapeControls(String text) {
        StringBuilder b = new StringBuilder(text.length());
        text.codePoints().forEach(cp -> {
            if (Character.getType(cp) == Character.CONTROL) {
                b.append(String.format("\\u%04X", cp));
            } else {
                b.appendCodePoint(cp);
            }
        });
        return b.toString();
    }

    /** {@code message} without the passwords of the command's {@code --backend} URI, should a library echo one. */
    private static String scrub(CommandLine commandLine, String message) {
        CommandSpec backend = commandLine.getCommandSpec().mixins().get("backend");
        if (backend == null || !(backend.userObject() instanceof BackendOptions options)) {
            return message;
        }
        String scrubbed = message;
        for (String secret : options.secrets()) {
            scrubbed = scrubbed.replace(secret, "***");
        }
        return scrubbed;
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
