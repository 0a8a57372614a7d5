package io.locksmith.tests.torture;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * An append-only event log of a torture run: one tab-separated line per event, written with one {@code write}
 * call and no buffering, so a process killed with SIGKILL leaves every event it recorded (the page cache keeps
 * them) and at worst one partial last line, which {@link #read} drops.
 *
 * <p>Timestamps are {@link System#nanoTime()}, which on Linux is {@code CLOCK_MONOTONIC} and therefore comparable
 * between processes on one machine. Lock names are given by their index in the run's name list and threads by
 * their index in their process. Worker histories hold:
 * <pre>
 * START    nanos pid threads
 * ACQ      thread name t0 t1 token      lock call started at t0, returned holding at t1
 * ACQR     thread name t0 t1 token      the same for the read lock of a read-write lock (a shared hold)
 * BUSY     thread name t0 t1            tryLock returned false
 * ERR      thread name t stage message  an exception other than a lost hold
 * LOST     thread name t stage message  LockLostException (the hold ended without its owner knowing)
 * CS       thread name t                a critical section begins inside a hold that spans several (a
 *                                       leader's term); the WRITE that follows ends it
 * WRITE    thread name t read written   the unguarded counter was read and written inside the hold
 * READ     thread name t first last     a read hold read the counter twice, before and after its sleep
 * REL      thread name t                about to unlock: the end of the hold as its owner saw it
 * UNLOCKED thread name t                unlock returned normally: the store confirmed the hold to the end
 * DONE     thread t operations          the thread finished its loop
 * HANG     thread t description         the watchdog found an operation past its bound
 * END      t                            the provider was closed and the process is exiting
 * </pre>
 * The runner's own history holds {@code SPAWN t worker pid}, {@code EXIT t worker code}, {@code FAULT_BEGIN t seq
 * name}, {@code FAULT_END t seq outcome}, {@code STOP t worker names}, {@code CONT t worker},
 * {@code KILL t worker names}, {@code REAP t worker} and {@code SCHEDULE_DONE t}, where {@code names} is a
 * comma-separated list of the name indexes the worker held, or {@code -}.
 */
final class HistoryFile implements AutoCloseable {

    static final String START = "START";
    static final String ACQ = "ACQ";
    static final String ACQR = "ACQR";
    static final String BUSY = "BUSY";
    static final String ERR = "ERR";
    static final String LOST = "LOST";
    static final String CS = "CS";
    static final String WRITE = "WRITE";
    static final String READ = "READ";
    static final String REL = "REL";
    static final String UNLOCKED = "UNLOCKED";
    static final String DONE = "DONE";
    static final String HANG = "HANG";
    static final String END = "END";

    static final String SPAWN = "SPAWN";
    static final String EXIT = "EXIT";
    static final String FAULT_BEGIN = "FAULT_BEGIN";
    static final String FAULT_END = "FAULT_END";
    static final String STOP = "STOP";
    static final String CONT = "CONT";
    static final String KILL = "KILL";
    static final String REAP = "REAP";
    static final String SCHEDULE_DONE = "SCHEDULE_DONE";

    private static final int MAX_TEXT = 300;

    private final Path path;
    private final FileChannel channel;

    private HistoryFile(Path path, FileChannel channel) {
        this.path = path;
        this.channel = channel;
    }

    /** Opens {@code path} for appending, creating it if needed. */
    static HistoryFile append(Path path) {
        try {
            return new HistoryFile(path, FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.APPEND));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the history file " + path, e);
        }
    }

    // ---- worker events

    void start(long nanos, long pid, int threads) {
        line(START, nanos, pid, threads);
    }

    void acquired(int thread, int name, long t0, long t1, long token) {
        line(ACQ, thread, name, t0, t1, token);
    }

    void acquiredShared(int thread, int name, long t0, long t1, long token) {
        line(ACQR, thread, name, t0, t1, token);
    }

    void read(int thread, int name, long t, long first, long last) {
        line(READ, thread, name, t, first, last);
    }

    void busy(int thread, int name, long t0, long t1) {
        line(BUSY, thread, name, t0, t1);
    }

    void error(int thread, int name, long t, String stage, Throwable error) {
        line(ERR, thread, name, t, stage, describe(error));
    }

    void lost(int thread, int name, long t, String stage, Throwable error) {
        line(LOST, thread, name, t, stage, describe(error));
    }

    void critical(int thread, int name, long t) {
        line(CS, thread, name, t);
    }

    void wrote(int thread, int name, long t, long read, long written) {
        line(WRITE, thread, name, t, read, written);
    }

    void releasing(int thread, int name, long t) {
        line(REL, thread, name, t);
    }

    void unlocked(int thread, int name, long t) {
        line(UNLOCKED, thread, name, t);
    }

    void done(int thread, long t, long operations) {
        line(DONE, thread, t, operations);
    }

    void hang(int thread, long t, String description) {
        line(HANG, thread, t, description);
    }

    void end(long t) {
        line(END, t);
    }

    // ---- runner events

    void spawned(long t, int worker, long pid) {
        line(SPAWN, t, worker, pid);
    }

    void exited(long t, int worker, int code) {
        line(EXIT, t, worker, code);
    }

    void faultBegins(long t, int seq, String name) {
        line(FAULT_BEGIN, t, seq, name);
    }

    void faultEnds(long t, int seq, String outcome) {
        line(FAULT_END, t, seq, outcome);
    }

    void stopped(long t, int worker, String heldNames) {
        line(STOP, t, worker, heldNames);
    }

    void continued(long t, int worker) {
        line(CONT, t, worker);
    }

    void killed(long t, int worker, String heldNames) {
        line(KILL, t, worker, heldNames);
    }

    void reaped(long t, int worker) {
        line(REAP, t, worker);
    }

    void scheduleDone(long t) {
        line(SCHEDULE_DONE, t);
    }

    private void line(Object... fields) {
        StringBuilder b = new StringBuilder(64);
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) {
                b.append('\t');
            }
            b.append(fields[i] instanceof String s ? clean(s) : fields[i]);
        }
        b.append('\n');
        ByteBuffer bytes = ByteBuffer.wrap(b.toString().getBytes(StandardCharsets.UTF_8));
        try {
            // one write per line, no buffer: what a killed process recorded is in the file
            synchronized (this) {
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot append to the history file " + path, e);
        }
    }

    private static String describe(Throwable error) {
        return error.getClass().getSimpleName() + ": " + error.getMessage();
    }

    private static String clean(String text) {
        String flat = text.isEmpty() ? "-" : text.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
        return flat.length() > MAX_TEXT ? flat.substring(0, MAX_TEXT) + "…" : flat;
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot close the history file " + path, e);
        }
    }

    /** Calls {@code sink} with the fields of every complete line of {@code path}; a missing file has none. */
    static void read(Path path, Consumer<String[]> sink) {
        if (!Files.exists(path)) {
            return;
        }
        try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "r");
             BufferedReader reader = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
            long size = file.length();
            boolean complete = size == 0;
            if (!complete) {
                file.seek(size - 1);
                complete = file.read() == '\n';
            }
            String pending = null;
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                if (pending != null && !pending.isEmpty()) {
                    sink.accept(pending.split("\t", -1));
                }
                pending = line;
            }
            // a last line without its newline is one a killed process was writing: drop it
            if (pending != null && !pending.isEmpty() && complete) {
                sink.accept(pending.split("\t", -1));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the history file " + path, e);
        }
    }

    /** Every complete line of {@code path} split into fields. */
    static List<String[]> read(Path path) {
        List<String[]> lines = new ArrayList<>();
        read(path, lines::add);
        return lines;
    }
}
