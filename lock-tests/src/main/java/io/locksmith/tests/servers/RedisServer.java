package io.locksmith.tests.servers;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Redis server for tests, found or started per run, that the tests can kill, pause and restart when they own it.
 *
 * <p>Each server comes from the first of these that applies:
 * <ol>
 *   <li>{@code LOCKSMITH_REDIS_URI} (or {@code -Dlocksmith.redis.uri}): {@code redis://[user:password@]host:port},
 *       several comma-separated for {@link #startIndependent}. The tests do not own such a server:
 *       {@link #isControllable()} is false.</li>
 *   <li>A {@code redis-server} process of our own on a free loopback port, in its own temp directory, without
 *       persistence unless the extra arguments ask for it (e.g. {@code --appendonly yes}); the binary is
 *       {@code LOCKSMITH_REDIS_SERVER} (or {@code -Dlocksmith.redis.server}) or {@code redis-server} on the
 *       {@code PATH}.</li>
 *   <li>A container through Testcontainers, when it is on the classpath and a Docker engine answers.</li>
 * </ol>
 * Otherwise {@link #start} throws {@link ServerUnavailableException} saying what to install or set.
 * {@link #startContainer} takes the Testcontainers path whatever else the machine has. The container's image is
 * {@code LOCKSMITH_REDIS_IMAGE} (or {@code -Dlocksmith.redis.image}), else the official {@code redis:7}; see
 * {@code DockerServer} for the network it joins. The log (logger {@code io.locksmith.tests.servers.RedisServer})
 * says which path each server took.
 */
public final class RedisServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RedisServer.class);

    static final Settings.Key URI_SETTING = new Settings.Key("locksmith.redis.uri", "LOCKSMITH_REDIS_URI");
    static final Settings.Key BINARY_SETTING = new Settings.Key("locksmith.redis.server", "LOCKSMITH_REDIS_SERVER");
    static final Settings.Key IMAGE_SETTING = new Settings.Key("locksmith.redis.image", "LOCKSMITH_REDIS_IMAGE");

    private static final String LOOPBACK = "127.0.0.1";
    private static final String OFFICIAL_IMAGE = "redis:7";
    private static final int DEFAULT_PORT = 6379;
    private static final Duration READY_LIMIT = Duration.ofSeconds(30);
    private static final Duration GIVEN_READY_LIMIT = Duration.ofSeconds(10);
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

    private final String uri;
    private final String host;
    private final int port;
    private final Resp.Credentials credentials;
    private final String origin;
    private final Control control;

    private RedisServer(String uri, String host, int port, Resp.Credentials credentials, String origin,
                        Control control) {
        this.uri = uri;
        this.host = host;
        this.port = port;
        this.credentials = credentials;
        this.origin = origin;
        this.control = control;
    }

    /**
     * Returns a Redis server that answers PING.
     *
     * @param extraArgs {@code redis-server} arguments appended to ours (e.g. {@code "--requirepass", "secret"});
     *                  refused for a server given by address, which the tests cannot reconfigure
     * @throws ServerUnavailableException if no server can be had, saying what to install or set
     */
    public static RedisServer start(String... extraArgs) {
        return start(Settings.system(), 1, List.of(extraArgs)).get(0);
    }

    /**
     * Returns {@code count} independent Redis servers (no replication between them), as Redlock needs.
     *
     * @param extraArgs as for {@link #start(String...)}, applied to every server
     * @throws ServerUnavailableException if not all can be had; those already started are closed
     */
    public static List<RedisServer> startIndependent(int count, String... extraArgs) {
        return start(Settings.system(), count, List.of(extraArgs));
    }

    static List<RedisServer> start(Settings settings, int count, List<String> extraArgs) {
        if (count < 1) {
            throw new IllegalArgumentException("count must be at least 1, was " + count);
        }
        Optional<Settings.Value> given = settings.get(URI_SETTING);
        if (given.isPresent()) {
            return external(given.get(), count, extraArgs);
        }
        Optional<Path> binary = findBinary(settings);
        Supplier<RedisServer> one;
        if (binary.isPresent()) {
            one = () -> startLocal(binary.get(), extraArgs);
        } else if (DockerEngine.reachable()) {
            one = () -> container(settings, extraArgs);
        } else {
            throw new ServerUnavailableException("No Redis for the tests: install redis-server"
                    + " (apt-get install redis-server) or point " + BINARY_SETTING.describe() + " at one, or set "
                    + URI_SETTING.describe("redis://host:port") + ", " + DockerEngine.howToGet());
        }
        List<RedisServer> servers = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                RedisServer server = one.get();
                servers.add(server);
                LOG.info("Redis for tests: {}", server);
            }
            return List.copyOf(servers);
        } catch (RuntimeException e) {
            servers.forEach(RedisServer::close);
            throw e;
        }
    }

    private static Optional<Path> findBinary(Settings settings) {
        Optional<Settings.Value> explicit = settings.get(BINARY_SETTING);
        if (explicit.isPresent()) {
            Settings.Value value = explicit.get();
            Path path = Path.of(value.text());
            if (!Files.isRegularFile(path) || !Files.isExecutable(path)) {
                throw new ServerUnavailableException(value.source() + "=" + value.text()
                        + " is not an executable file: point it at redis-server, or unset it to use the PATH");
            }
            return Optional.of(path);
        }
        return settings.environmentVariable("PATH").stream()
                .flatMap(path -> Arrays.stream(path.split(File.pathSeparator)))
                .filter(directory -> !directory.isBlank())
                .flatMap(directory -> {
                    try {
                        return Optional.of(Path.of(directory, "redis-server")).stream();
                    } catch (InvalidPathException e) {
                        return Optional.<Path>empty().stream();
                    }
                })
                .filter(path -> Files.isRegularFile(path) && Files.isExecutable(path))
                .findFirst();
    }

    private static List<RedisServer> external(Settings.Value given, int count, List<String> extraArgs) {
        if (!extraArgs.isEmpty()) {
            throw new ServerUnavailableException("Cannot start Redis with " + extraArgs + ": " + given.source()
                    + " names a server the tests did not start; unset it to let the tests start their own");
        }
        List<String> uris = Arrays.stream(given.text().split(","))
                .map(String::strip)
                .filter(uri -> !uri.isEmpty())
                .toList();
        if (uris.size() < count) {
            throw new ServerUnavailableException("The tests need " + count + " independent Redis servers but "
                    + given.source() + " names " + uris.size() + ": list " + count
                    + " comma-separated redis://host:port URIs, or unset it to let the tests start their own");
        }
        List<RedisServer> servers = new ArrayList<>();
        for (String text : uris.subList(0, count)) {
            servers.add(external(text, given.source()));
        }
        servers.forEach(server -> LOG.info("Redis for tests: {}", server));
        return List.copyOf(servers);
    }

    private static RedisServer external(String text, String source) {
        String shown = masked(text);
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new ServerUnavailableException(source + " holds " + shown + ", which is not a URI: "
                    + e.getMessage());
        }
        boolean tls = "rediss".equals(uri.getScheme());
        if (!tls && !"redis".equals(uri.getScheme()) || uri.getHost() == null) {
            throw new ServerUnavailableException(source + " holds " + shown
                    + ", which is not of the form redis://[user:password@]host:port (or rediss:// for TLS)");
        }
        int port = uri.getPort() < 0 ? DEFAULT_PORT : uri.getPort();
        Resp.Credentials credentials = credentials(uri.getRawUserInfo());
        if (tls) {
            // the probe speaks plain RESP only; for TLS, accepting connections is all it can check
            Await.until(source + " names " + shown + " but nothing accepts connections there", GIVEN_READY_LIMIT,
                    () -> {
                        Tcp.connect(uri.getHost(), port, PROBE_TIMEOUT);
                        return true;
                    });
        } else {
            awaitAnswers(uri.getHost(), port, credentials, null, GIVEN_READY_LIMIT, source + " names " + shown
                    + " but it does not answer PING");
        }
        String origin = "Redis " + version(uri.getHost(), port, credentials) + " at " + shown;
        return new RedisServer(text, uri.getHost(), port, credentials, origin, Control.none(shown, source));
    }

    private static Resp.Credentials credentials(String rawUserInfo) {
        if (rawUserInfo == null || rawUserInfo.isEmpty()) {
            return null;
        }
        String userInfo = URLDecoder.decode(rawUserInfo, StandardCharsets.UTF_8);
        int colon = userInfo.indexOf(':');
        if (colon < 0) {
            return new Resp.Credentials(null, userInfo);
        }
        String user = userInfo.substring(0, colon);
        return new Resp.Credentials(user.isEmpty() ? null : user, userInfo.substring(colon + 1));
    }

    private static String masked(String uri) {
        return uri.replaceFirst("//[^/@]*@", "//***@");
    }

    private static RedisServer startLocal(Path binary, List<String> extraArgs) {
        try {
            return LocalProcess.startOnFreePort(port -> {
                Path directory = Files.createTempDirectory("locksmith-redis-");
                List<String> command = new ArrayList<>(List.of(binary.toString(),
                        "--port", Integer.toString(port), "--bind", LOOPBACK,
                        "--save", "", "--appendonly", "no", "--daemonize", "no",
                        "--dir", directory.toString()));
                command.addAll(extraArgs);
                return LocalProcess.start("redis-server", command, directory);
            }, (port, process) -> {
                awaitAnswers(LOOPBACK, port, null, process, binary + " on " + LOOPBACK + ":" + port
                        + " did not answer PING");
                String origin = "local redis-server " + version(LOOPBACK, port, null) + " on " + LOOPBACK + ":"
                        + port;
                return new RedisServer("redis://" + LOOPBACK + ":" + port, LOOPBACK, port, null, origin, process);
            });
        } catch (IOException e) {
            throw new ServerUnavailableException("Could not start " + binary + ": " + Await.describe(e), e);
        }
    }

    /**
     * Starts a Redis server in a container through Testcontainers, whatever else the machine has: the path of the
     * contract run that proves the Testcontainers fixtures. The tests own it like a process of their own.
     *
     * @param extraArgs {@code redis-server} arguments appended to ours
     * @throws ServerUnavailableException if Testcontainers is not on the classpath or no Docker engine answers
     */
    public static RedisServer startContainer(String... extraArgs) {
        DockerEngine.require("A Redis container");
        RedisServer server = container(Settings.system(), List.of(extraArgs));
        LOG.info("Redis for tests: {}", server);
        return server;
    }

    private static RedisServer container(Settings settings, List<String> extraArgs) {
        String image = DockerServer.image(settings, IMAGE_SETTING, OFFICIAL_IMAGE);
        // flags only: the official image's entrypoint and ours both run redis-server with them
        DockerServer container = DockerServer.start(image, DEFAULT_PORT, Map.of(), listen -> {
            List<String> command = new ArrayList<>(List.of("--port", Integer.toString(listen.port()),
                    "--bind", listen.address(), "--protected-mode", "no", "--save", "", "--appendonly", "no"));
            command.addAll(extraArgs);
            return command;
        });
        try {
            awaitAnswers(container.host(), container.port(), null, container, container.path() + " on "
                    + container.host() + ":" + container.port() + " did not answer PING");
        } catch (RuntimeException e) {
            container.close();
            throw e;
        }
        String origin = container.path() + ", Redis " + version(container.host(), container.port(), null)
                + ", on " + container.host() + ":" + container.port();
        return new RedisServer("redis://" + container.host() + ":" + container.port(), container.host(),
                container.port(), null, origin, container);
    }

    /**
     * Waits until the server answers PING; any reply but {@code LOADING} counts, so a server that demands a
     * password (extra args) is ready once it says {@code NOAUTH}.
     */
    private static void awaitAnswers(String host, int port, Resp.Credentials credentials, Control control,
                                     String failure) {
        awaitAnswers(host, port, credentials, control, READY_LIMIT, failure);
    }

    private static void awaitAnswers(String host, int port, Resp.Credentials credentials, Control control,
                                     Duration limit, String failure) {
        Await.until(failure, limit, () -> {
            if (control != null) {
                control.checkRunning();
            }
            try {
                Resp.call(host, port, PROBE_TIMEOUT, credentials, "PING");
                return true;
            } catch (Resp.ErrorReply e) {
                return !e.getMessage().startsWith("LOADING");
            }
        });
    }

    /** Returns the server's version, such as "7.0.15", or why it is unknown in parentheses. */
    private static String version(String host, int port, Resp.Credentials credentials) {
        try {
            String info = Resp.call(host, port, PROBE_TIMEOUT, credentials, "INFO", "server");
            return info.lines()
                    .filter(line -> line.startsWith("redis_version:"))
                    .map(line -> line.substring("redis_version:".length()).strip())
                    .findFirst()
                    .orElse("(version unknown)");
        } catch (IOException e) {
            return "(version unknown: " + e.getMessage() + ")";
        }
    }

    /** Returns the URI clients connect with: {@code redis://127.0.0.1:PORT}, or the given URI as given. */
    public String uri() {
        return uri;
    }

    /** Returns the host clients connect to. */
    public String host() {
        return host;
    }

    /** Returns the port clients connect to; it stays the same across {@link #restart()}. */
    public int port() {
        return port;
    }

    /**
     * Returns whether {@link #kill()}, {@link #pause()}, {@link #resume()} and {@link #restart()} work: true for
     * servers the tests started, false for one given by {@code LOCKSMITH_REDIS_URI}.
     */
    public boolean isControllable() {
        return control.isControllable();
    }

    /**
     * Kills the server abruptly (SIGKILL, or {@code docker kill}); connections to its port are then refused.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void kill() {
        control.kill();
    }

    /**
     * Freezes the server (SIGSTOP, or {@code docker pause}): it accepts connections but answers nothing.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void pause() {
        control.pause();
    }

    /**
     * Unfreezes a paused server (SIGCONT, or {@code docker unpause}) and waits until it answers PING.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void resume() {
        control.resume();
        awaitAnswers(host, port, credentials, control, this + " did not answer PING after resume");
    }

    /**
     * Starts the server again on the same port, killing it first if it runs, and waits until it answers PING. It
     * keeps its arguments and its data directory, so it comes back empty unless it was started with persistence
     * (e.g. {@code "--appendonly", "yes", "--appendfsync", "always"}), in which case it reloads its data first.
     *
     * @throws UnsupportedOperationException if not {@link #isControllable()}
     */
    public void restart() {
        control.restart();
        awaitAnswers(host, port, credentials, control, origin + " did not answer PING after restart");
        LOG.info("Redis for tests restarted: {}", this);
    }

    /** Stops a server the tests started and deletes its temp directory; a given server is left alone. */
    @Override
    public void close() {
        control.close();
    }

    /** Returns which path the server took, e.g. "local redis-server 7.0.15 on 127.0.0.1:41235 (own process, pid 7)". */
    @Override
    public String toString() {
        return origin + " (" + control.describe() + ")";
    }
}
