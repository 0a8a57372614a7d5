package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The runner's live view of one worker's history, read incrementally while the worker runs: which names it holds
 * now (acquired, not yet releasing), when it last acquired each name, and whether it is operating yet.
 */
final class HistoryTail {

    private final Path path;
    private final long[] lastAcquired;
    private final Map<Integer, Integer> holding = new HashMap<>();
    /**
     * The threads among {@link #holding} that have recorded the write of their critical section (and not yet the
     * beginning of another in the same hold).
     */
    private final Set<Integer> written = new HashSet<>();
    private final StringBuilder partial = new StringBuilder();
    private long position;
    private boolean operating;
    private long lastError = Long.MIN_VALUE;

    HistoryTail(Path path, int names) {
        this.path = path;
        this.lastAcquired = new long[names];
        Arrays.fill(lastAcquired, Long.MIN_VALUE);
    }

    /** Reads what the worker appended since the last call. */
    synchronized void update() {
        if (!Files.exists(path)) {
            return;
        }
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
            while (position < size) {
                buffer.clear();
                int n = channel.read(buffer, position);
                if (n <= 0) {
                    break;
                }
                position += n;
                // history lines are ASCII but for exception messages, which are never parsed here
                partial.append(new String(buffer.array(), 0, n, StandardCharsets.ISO_8859_1));
                int from = 0;
                for (int nl = partial.indexOf("\n"); nl >= 0; nl = partial.indexOf("\n", from)) {
                    apply(partial.substring(from, nl).split("\t", -1));
                    from = nl + 1;
                }
                partial.delete(0, from);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + path, e);
        }
    }

    private void apply(String[] f) {
        switch (f[0]) {
            case HistoryFile.BUSY, HistoryFile.LOST -> operating = true;
            case HistoryFile.ERR -> {
                operating = true;
                // a critical section that failed goes straight to its release, like one that wrote
                written.add(Integer.parseInt(f[1]));
                long t = Long.parseLong(f[3]);
                lastError = lastError == Long.MIN_VALUE || t - lastError > 0 ? t : lastError;
            }
            case HistoryFile.ACQ, HistoryFile.ACQR -> {
                operating = true;
                int name = Integer.parseInt(f[2]);
                holding.put(Integer.parseInt(f[1]), name);
                written.remove(Integer.parseInt(f[1]));
                lastAcquired[name] = Math.max(lastAcquired[name], Long.parseLong(f[4]));
            }
            case HistoryFile.CS -> written.remove(Integer.parseInt(f[1]));
            case HistoryFile.WRITE, HistoryFile.READ -> written.add(Integer.parseInt(f[1]));
            case HistoryFile.REL -> {
                holding.remove(Integer.parseInt(f[1]));
                written.remove(Integer.parseInt(f[1]));
            }
            default -> { }
        }
    }

    /** Whether the worker has finished at least one lock attempt: it is up and hammering. */
    synchronized boolean operating() {
        return operating;
    }

    /** The indexes of the names the worker holds according to what it has recorded. */
    synchronized Set<Integer> held() {
        return new TreeSet<>(holding.values());
    }

    /**
     * The indexes of the names held by threads that have not yet recorded the write of their critical section. Read
     * from a stopped process, such a thread is certainly inside its critical section: it takes its release time only
     * after that record. A thread that has recorded its write may have taken its release time and been stopped
     * before recording it, so that its record ends the hold before the stop. In a hold that spans several critical
     * sections (a leader's term) each begins with a {@code CS} record, written where the release cannot happen, so
     * the whole hold is not reduced to the window before its first write.
     */
    synchronized Set<Integer> heldBeforeWrite() {
        Set<Integer> names = new TreeSet<>();
        holding.forEach((thread, name) -> {
            if (!written.contains(thread)) {
                names.add(name);
            }
        });
        return names;
    }

    /**
     * Whether the worker acquired {@code name} after {@code nanos} ({@link System#nanoTime()}). A worker that never
     * acquired it has not: its {@link Long#MIN_VALUE} must not take part in the overflow-safe difference, where it
     * would wrap around to "later".
     */
    synchronized boolean acquiredAfter(int name, long nanos) {
        return acquiredAfter(lastAcquired[name], nanos);
    }

    /** Whether the worker recorded a failed call after {@code nanos}. */
    synchronized boolean failedAfter(long nanos) {
        return acquiredAfter(lastError, nanos);
    }

    /** Whether the worker acquired any name after {@code nanos}. */
    synchronized boolean acquiredAnyAfter(long nanos) {
        return Arrays.stream(lastAcquired).anyMatch(last -> acquiredAfter(last, nanos));
    }

    private static boolean acquiredAfter(long last, long nanos) {
        return last != Long.MIN_VALUE && last - nanos > 0;
    }
}
