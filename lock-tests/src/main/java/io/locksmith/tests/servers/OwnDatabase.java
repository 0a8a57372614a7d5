package io.locksmith.tests.servers;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.stream.Stream;

/**
 * MariaDB and PostgreSQL servers of the tests' own, made from the database binaries installed on the machine: a
 * fresh data directory in a temp directory ({@code initdb}, {@code mariadb-install-db}) and a server process on a
 * free loopback port, which the tests may kill with SIGKILL, freeze with SIGSTOP and restart on the same port and
 * data, unlike the machine's shared servers.
 *
 * <p>Both keep committed data across a kill: PostgreSQL runs with {@code fsync} on and InnoDB flushes its log at
 * each commit (their defaults). PostgreSQL refuses to run as root, so under root both {@code initdb} and
 * {@code postgres} run as the OS user {@code postgres} through {@code setpriv} (or {@code runuser}), which owns the
 * temp directory; {@code mariadbd} runs as root with {@code --user=root}. The data directory goes with the server
 * on close and at JVM exit.
 */
final class OwnDatabase {

    static final Settings.Key POSTGRES_BIN = new Settings.Key("locksmith.postgres.bin", "LOCKSMITH_POSTGRES_BIN");
    static final Settings.Key MARIADB_BIN = new Settings.Key("locksmith.mariadb.bin", "LOCKSMITH_MARIADB_BIN");

    private static final String LOOPBACK = "127.0.0.1";
    private static final String POSTGRES_USER = "postgres";
    private static final String MARIADB_USER = "root";
    private static final Duration INIT_LIMIT = Duration.ofSeconds(180);
    private static final Duration READY_LIMIT = Duration.ofSeconds(90);
    private static final List<String> SYSTEM_DIRECTORIES = List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin",
            "/usr/local/bin", "/sbin", "/bin");

    /** A private server that answers: where it is and its process. */
    record Started(String jdbcUrl, String user, String origin, LocalProcess process) {
    }

    private OwnDatabase() {
    }

    /**
     * Returns whether a private server of {@code dialect} can be made here: its binaries are installed (and, for
     * PostgreSQL under root, the {@code postgres} OS user exists); the reason why not otherwise.
     */
    static Optional<String> unavailable(Dialect dialect, Settings settings) {
        try {
            if (dialect == Dialect.POSTGRES) {
                postgresBinaries(settings);
                runAsPostgres();
            } else {
                mariaDbBinaries(settings);
            }
            return Optional.empty();
        } catch (ServerUnavailableException e) {
            return Optional.of(e.getMessage());
        }
    }

    /**
     * Starts a server of {@code dialect} on a free port, in a new data directory for each port tried; see
     * {@link DatabaseServer#startOwnPostgres()}.
     */
    static Started start(Dialect dialect, Settings settings) {
        IntFunction<Plan> plans = dialect == Dialect.POSTGRES ? postgres(settings) : mariaDb(settings);
        Plan[] tried = new Plan[1];
        try {
            return LocalProcess.startOnFreePort(port -> {
                tried[0] = plans.apply(port);
                return launch(tried[0]);
            }, (port, process) -> finish(tried[0], process));
        } catch (IOException e) {
            throw new ServerUnavailableException("Could not start a private " + dialect.displayName() + ": "
                    + Await.describe(e), e);
        }
    }

    // ---------------------------------------------------------------- PostgreSQL

    /** {@code initdb} and {@code postgres}: from the setting, else the newest Debian or RHEL install, else PATH. */
    private static Path[] postgresBinaries(Settings settings) {
        List<Path> candidates = new ArrayList<>();
        Optional<Settings.Value> given = settings.get(POSTGRES_BIN);
        if (given.isPresent()) {
            candidates.add(path(given.get().text()));
        } else {
            candidates.addAll(versionDirectories(Path.of("/usr/lib/postgresql"), "bin"));
            candidates.addAll(versionDirectories(Path.of("/usr"), "bin", "pgsql-"));
            candidates.addAll(pathDirectories(settings));
        }
        for (Path directory : candidates) {
            Path initdb = directory.resolve("initdb");
            Path postgres = directory.resolve("postgres");
            if (executable(initdb) && executable(postgres)) {
                return new Path[] {initdb, postgres};
            }
        }
        String where = given.map(v -> v.source() + "=" + v.text()).orElse("/usr/lib/postgresql/*/bin, /usr/pgsql-*/bin"
                + " and the PATH");
        throw new ServerUnavailableException("No PostgreSQL server binaries (initdb and postgres) for a private server"
                + " in " + where + ": install them (apt-get install postgresql) or set "
                + POSTGRES_BIN.describe("/usr/lib/postgresql/15/bin") + " to the directory that holds them");
    }

    /**
     * The command prefix that runs a PostgreSQL program as the {@code postgres} OS user when this JVM runs as root
     * (postgres refuses root), and the user that will own the data; empty prefix and no owner otherwise.
     */
    private static RunAs runAsPostgres() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return new RunAs(List.of(), null);
        }
        UserPrincipal owner;
        try {
            owner = FileSystems.getDefault().getUserPrincipalLookupService().lookupPrincipalByName(POSTGRES_USER);
        } catch (UserPrincipalNotFoundException e) {
            throw new ServerUnavailableException("PostgreSQL refuses to run as root and there is no OS user "
                    + POSTGRES_USER + " to run a private server as: install PostgreSQL from the distribution"
                    + " (apt-get install postgresql), which creates it, or run the tests as another user");
        } catch (IOException e) {
            throw new ServerUnavailableException("Cannot look up the OS user " + POSTGRES_USER + ": "
                    + Await.describe(e), e);
        }
        // setpriv replaces itself with the program, so the server's pid is the one the tests signal; runuser stays
        // as its parent, which the process-tree faults of LocalProcess cover too
        Optional<Path> setpriv = systemProgram("setpriv");
        if (setpriv.isPresent()) {
            return new RunAs(List.of(setpriv.get().toString(), "--reuid=" + POSTGRES_USER,
                    "--regid=" + POSTGRES_USER, "--clear-groups", "--"), owner);
        }
        Optional<Path> runuser = systemProgram("runuser");
        if (runuser.isPresent()) {
            return new RunAs(List.of(runuser.get().toString(), "-u", POSTGRES_USER, "--"), owner);
        }
        throw new ServerUnavailableException("PostgreSQL refuses to run as root, and neither setpriv nor runuser is"
                + " installed to run it as OS user " + POSTGRES_USER + ": apt-get install util-linux");
    }

    private record RunAs(List<String> prefix, UserPrincipal owner) {
        List<String> command(String... program) {
            List<String> command = new ArrayList<>(prefix);
            command.addAll(List.of(program));
            return command;
        }
    }

    private static IntFunction<Plan> postgres(Settings settings) {
        Path[] binaries = postgresBinaries(settings);
        RunAs runAs = runAsPostgres();
        return port -> postgresPlan(binaries, runAs, port);
    }

    private static Plan postgresPlan(Path[] binaries, RunAs runAs, int port) {
        Path directory = tempDirectory("locksmith-postgres-", runAs.owner());
        String data = directory.resolve("data").toString();
        // initdb --no-sync: only what the server writes later has to survive a crash of the server, which leaves
        // the machine's page cache intact
        return new Plan(Dialect.POSTGRES, directory, port, POSTGRES_USER, POSTGRES_USER,
                "CREATE DATABASE " + DatabaseServer.DATABASE,
                "initdb", runAs.command(binaries[0].toString(), "-D", data, "-U", POSTGRES_USER, "--auth=trust",
                        "--encoding=UTF8", "--locale=C", "--no-sync"),
                "postgres", runAs.command(binaries[1].toString(), "-D", data, "-p", Integer.toString(port),
                        "-k", directory.toString(), "-c", "listen_addresses=" + LOOPBACK,
                        "-c", "max_connections=100", "-c", "shared_buffers=32MB",
                        "-c", "unix_socket_permissions=0700"));
    }

    // ---------------------------------------------------------------- MariaDB

    /** {@code mariadb-install-db} and {@code mariadbd}: in the setting's directory, else the system's or the PATH. */
    private static Path[] mariaDbBinaries(Settings settings) {
        List<Path> directories = new ArrayList<>();
        Optional<Settings.Value> given = settings.get(MARIADB_BIN);
        if (given.isPresent()) {
            directories.add(path(given.get().text()));
        } else {
            SYSTEM_DIRECTORIES.forEach(d -> directories.add(Path.of(d)));
            directories.addAll(pathDirectories(settings));
        }
        Optional<Path> installDb = first(directories, "mariadb-install-db", "mysql_install_db");
        Optional<Path> server = first(directories, "mariadbd", "mysqld");
        if (installDb.isPresent() && server.isPresent()) {
            return new Path[] {installDb.get(), server.get()};
        }
        throw new ServerUnavailableException("No MariaDB server binaries for a private server: "
                + (installDb.isEmpty() ? "mariadb-install-db" : "mariadbd") + " is not in "
                + given.map(v -> v.source() + "=" + v.text()).orElse(String.join(", ", SYSTEM_DIRECTORIES)
                        + " or the PATH") + ": install them (apt-get install mariadb-server) or set "
                + MARIADB_BIN.describe("/usr/sbin") + " to the directory that holds them");
    }

    private static IntFunction<Plan> mariaDb(Settings settings) {
        Path[] binaries = mariaDbBinaries(settings);
        return port -> mariaDbPlan(binaries, port);
    }

    private static Plan mariaDbPlan(Path[] binaries, int port) {
        Path directory = tempDirectory("locksmith-mariadb-", null);
        String data = directory.resolve("data").toString();
        List<String> server = new ArrayList<>(List.of(binaries[1].toString(), "--no-defaults", "--datadir=" + data,
                "--port=" + port, "--bind-address=" + LOOPBACK, "--socket=" + directory.resolve("mariadbd.sock"),
                "--pid-file=" + directory.resolve("mariadbd.pid"), "--tmpdir=" + directory, "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M", "--max-connections=200"));
        if ("root".equals(System.getProperty("user.name"))) {
            server.add("--user=root");
        }
        // --no-defaults first: the machine's my.cnf belongs to its shared server (its port, socket, datadir);
        // no --user: the script would chown the machine's PAM plugin directory to it
        return new Plan(Dialect.MARIADB, directory, port, "", MARIADB_USER,
                "CREATE DATABASE IF NOT EXISTS " + DatabaseServer.DATABASE,
                "mariadb-install-db", List.of(binaries[0].toString(), "--no-defaults", "--datadir=" + data,
                        "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
                        "--force"),
                "mariadbd", server);
    }

    // ---------------------------------------------------------------- common

    /**
     * How to make one private server: the setup program that makes its data directory, the server command, and what
     * to run once it answers.
     *
     * @param adminDatabase the database to connect to before {@code test} exists ("" for none)
     */
    private record Plan(Dialect dialect, Path directory, int port, String adminDatabase, String user,
                        String createDatabase, String setupName, List<String> setup, String serverName,
                        List<String> server) {
    }

    /** Runs the plan's setup and then its server in its directory, which the server process then owns. */
    private static LocalProcess launch(Plan plan) {
        Path directory = plan.directory();
        AutoCloseable setup = () -> LocalProcess.deleteDirectory(directory);
        ExitCleanup.register(setup);
        LocalProcess process;
        try {
            runToEnd(plan.setupName(), plan.setup(), directory);
            process = LocalProcess.start(plan.serverName(), plan.server(), directory);
        } catch (IOException e) {
            LocalProcess.deleteDirectory(directory);
            throw new ServerUnavailableException("Could not start a private " + plan.dialect().displayName() + " ("
                    + String.join(" ", plan.server()) + "): " + Await.describe(e), e);
        } catch (RuntimeException e) {
            LocalProcess.deleteDirectory(directory);
            throw e;
        } finally {
            ExitCleanup.unregister(setup); // from here on the process owns the directory
        }
        return process;
    }

    /**
     * Waits until the plan's server answers and creates database {@code test}; throws
     * {@link ServerUnavailableException} if it does not (the caller closes it, and tries another port if it found
     * its port taken).
     */
    private static Started finish(Plan plan, LocalProcess process) {
        String admin = plan.dialect().url(LOOPBACK, plan.port(), plan.adminDatabase());
        String product = DatabaseServer.awaitAnswers(plan.dialect(), admin, plan.user(), "", process, READY_LIMIT,
                "A private " + plan.serverName() + " on " + LOOPBACK + ":" + plan.port() + " did not answer select 1");
        execute(plan.dialect(), admin, plan.user(), plan.createDatabase());
        String url = plan.dialect().url(LOOPBACK, plan.port());
        return new Started(url, plan.user(), "own " + product + " at " + url + " (user " + plan.user()
                + ", data in " + plan.directory().resolve("data") + ")", process);
    }

    private static void execute(Dialect dialect, String url, String user, String sql) {
        try (Connection connection = DatabaseServer.connect(dialect, url, user, "");
             Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new ServerUnavailableException("The private server at " + url + " refused " + sql + ": "
                    + Await.describe(e), e);
        }
    }

    /** Runs a setup program to its end within {@link #INIT_LIMIT}, its output in {@code directory/<name>.log}. */
    private static void runToEnd(String name, List<String> command, Path directory) throws IOException {
        Path log = directory.resolve(name + ".log");
        Process process = new ProcessBuilder(command)
                .directory(directory.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        AutoCloseable stop = () -> {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        };
        ExitCleanup.register(stop);
        try {
            if (!process.waitFor(INIT_LIMIT.toSeconds(), TimeUnit.SECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
                throw new ServerUnavailableException(String.join(" ", command) + " did not finish within "
                        + INIT_LIMIT.toSeconds() + " s; last output: \"" + lastLines(log) + "\"");
            }
        } catch (InterruptedException e) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new ServerUnavailableException("Interrupted while running " + name, e);
        } finally {
            ExitCleanup.unregister(stop);
        }
        if (process.exitValue() != 0) {
            throw new ServerUnavailableException(String.join(" ", command) + " failed with exit code "
                    + process.exitValue() + "; last output: \"" + lastLines(log) + "\"");
        }
    }

    private static String lastLines(Path log) {
        try (Stream<String> lines = Files.lines(log)) {
            List<String> text = lines.filter(line -> !line.isBlank()).map(String::strip).toList();
            return String.join(" | ", text.subList(Math.max(0, text.size() - 3), text.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    /** A new temp directory, owned by {@code owner} if given so that a server running as that user may write it. */
    private static Path tempDirectory(String prefix, UserPrincipal owner) {
        Path directory;
        try {
            directory = Files.createTempDirectory(prefix);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not create a temp directory for a private database", e);
        }
        if (owner != null) {
            try {
                Files.setOwner(directory, owner);
            } catch (IOException e) {
                LocalProcess.deleteDirectory(directory);
                throw new ServerUnavailableException("Could not give " + directory + " to OS user " + owner.getName()
                        + ": " + Await.describe(e), e);
            }
        }
        return directory;
    }

    private static boolean executable(Path path) {
        return Files.isRegularFile(path) && Files.isExecutable(path);
    }

    private static Path path(String text) {
        try {
            return Path.of(text);
        } catch (InvalidPathException e) {
            throw new ServerUnavailableException("\"" + text + "\" is not a path: " + e.getMessage());
        }
    }

    private static Optional<Path> first(List<Path> directories, String... names) {
        for (String name : names) {
            for (Path directory : directories) {
                if (executable(directory.resolve(name))) {
                    return Optional.of(directory.resolve(name));
                }
            }
        }
        return Optional.empty();
    }

    private static Optional<Path> systemProgram(String name) {
        return first(SYSTEM_DIRECTORIES.stream().map(Path::of).toList(), name);
    }

    /** The {@code <prefix>N…/<child>} directories under {@code parent}, highest version first. */
    private static List<Path> versionDirectories(Path parent, String child, String... prefix) {
        String start = prefix.length == 0 ? "" : prefix[0];
        try (Stream<Path> entries = Files.list(parent)) {
            return entries.filter(p -> p.getFileName().toString().startsWith(start))
                    .filter(p -> p.getFileName().toString().substring(start.length()).matches("\\d+(\\.\\d+)?"))
                    .sorted(Comparator.comparingDouble((Path p) -> Double.parseDouble(
                            p.getFileName().toString().substring(start.length()))).reversed())
                    .map(p -> p.resolve(child))
                    .toList();
        } catch (IOException | UncheckedIOException e) {
            return List.of();
        }
    }

    private static List<Path> pathDirectories(Settings settings) {
        return settings.environmentVariable("PATH").stream()
                .flatMap(path -> Arrays.stream(path.split(File.pathSeparator)))
                .filter(directory -> !directory.isBlank())
                .flatMap(directory -> {
                    try {
                        return Stream.of(Path.of(directory));
                    } catch (InvalidPathException e) {
                        return Stream.empty();
                    }
                })
                .toList();
    }
}
