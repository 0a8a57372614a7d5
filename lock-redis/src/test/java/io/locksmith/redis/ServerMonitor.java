package io.locksmith.redis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Records every command clients send to a Redis server, through {@code MONITOR}: the exact round trips, with
 * the commands that scripts run inside the server left out (MONITOR tags those {@code [0 lua]}).
 *
 * <p>{@link #commandsSinceLastMark()} sends an {@code ECHO} marker on another connection and returns what came
 * between the previous marker and this one, so a test measures exactly the window it wants.
 */
final class ServerMonitor implements AutoCloseable {

    /** One command a client sent: its arguments, the first being the command name. */
    record Command(List<String> args) {
        String name() {
            return args.get(0).toLowerCase(java.util.Locale.ROOT);
        }

        /** For EVALSHA: the script's SHA. */
        String sha() {
            return args.get(1);
        }

        /** For EVALSHA: the keys it was given. */
        List<String> keys() {
            int count = Integer.parseInt(args.get(2));
            return args.subList(3, 3 + count);
        }

        @Override
        public String toString() {
            return String.join(" ", args.size() > 6 ? args.subList(0, 6) : args) + (args.size() > 6 ? " …" : "");
        }
    }

    private final RedisAdmin admin;
    private final Socket socket;
    private final Thread reader;
    private final List<Command> commands = new ArrayList<>();
    private int markers;
    private int lastMarkIndex;
    private volatile IOException failure;

    ServerMonitor(String host, int port, RedisAdmin admin) throws IOException {
        this.admin = admin;
        this.socket = new Socket(host, port);
        OutputStream out = socket.getOutputStream();
        out.write("MONITOR\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                StandardCharsets.UTF_8));
        String ok = in.readLine();
        if (!"+OK".equals(ok)) {
            throw new IOException("MONITOR answered " + ok);
        }
        reader = new Thread(() -> read(in), "redis-monitor");
        reader.setDaemon(true);
        reader.start();
        commandsSinceLastMark();
    }

    private void read(BufferedReader in) {
        try {
            String line;
            while ((line = in.readLine()) != null) {
                int open = line.indexOf('[');
                int close = line.indexOf(']', open);
                if (!line.startsWith("+") || open < 0 || close < 0) {
                    continue;
                }
                if (line.substring(open + 1, close).endsWith(" lua")) {
                    continue;
                }
                Command command = new Command(parseArgs(line.substring(close + 1)));
                synchronized (commands) {
                    commands.add(command);
                    commands.notifyAll();
                }
            }
        } catch (IOException e) {
            if (!socket.isClosed()) {
                failure = e;
            }
        }
    }

    /** The commands clients sent since the previous call (or since the monitor started). */
    List<Command> commandsSinceLastMark() {
        String marker = "locksmith-monitor-mark-" + (++markers);
        admin.call(jedis -> jedis.echo(marker));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        synchronized (commands) {
            while (true) {
                for (int i = lastMarkIndex; i < commands.size(); i++) {
                    Command c = commands.get(i);
                    if (c.name().equals("echo") && c.args().size() == 2 && c.args().get(1).equals(marker)) {
                        List<Command> window = new ArrayList<>(commands.subList(lastMarkIndex, i));
                        window.removeIf(w -> w.name().equals("echo") && w.args().get(1).startsWith("locksmith-monitor-mark-"));
                        lastMarkIndex = i + 1;
                        return window;
                    }
                }
                long left = deadline - System.nanoTime();
                if (failure != null || left <= 0) {
                    throw new AssertionError("MONITOR did not show the marker " + marker + " within 10 s", failure);
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(commands, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError("interrupted", e);
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }

    /** The quoted arguments of a MONITOR line: {@code "evalsha" "ab12" "1" "key"}, with its escapes. */
    static List<String> parseArgs(String text) {
        List<String> args = new ArrayList<>();
        int i = 0;
        while (i < text.length()) {
            if (text.charAt(i) != '"') {
                i++;
                continue;
            }
            StringBuilder arg = new StringBuilder();
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            i++;
            while (i < text.length() && text.charAt(i) != '"') {
                char c = text.charAt(i);
                if (c == '\\' && i + 1 < text.length()) {
                    char e = text.charAt(i + 1);
                    switch (e) {
                        case 'x' -> {
                            bytes.write(Integer.parseInt(text.substring(i + 2, i + 4), 16));
                            i += 4;
                            continue;
                        }
                        case 'n' -> bytes.write('\n');
                        case 'r' -> bytes.write('\r');
                        case 't' -> bytes.write('\t');
                        default -> bytes.write(e);
                    }
                    i += 2;
                } else {
                    byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                    bytes.write(b, 0, b.length);
                    i++;
                }
            }
            arg.append(bytes.toString(StandardCharsets.UTF_8));
            args.add(arg.toString());
            i++;
        }
        return args;
    }
}
