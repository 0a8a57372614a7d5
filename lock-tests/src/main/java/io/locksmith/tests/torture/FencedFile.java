package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The fenced resource of one lock name, shared by every process of a torture run: like {@code FencedResource}, it
 * accepts a write iff its token is at least the highest token it accepted before (equal tokens pass, since one hold
 * writes twice), but it lives in two files so that separate JVMs share it.
 *
 * <p>{@code fence-N.log} is the authority: one line per submission, {@code t worker thread token A|R highest},
 * appended in the order the decisions were made. {@code fence-N.state} caches the outcome of the log (highest
 * accepted token, accepted count, log length) so a decision need not read the whole log. Both are changed only
 * under an exclusive {@link FileLock} on the state file (between processes) and one monitor per process (between
 * its threads, which a {@code FileLock} does not separate). The monitor is process-wide rather than per file because
 * POSIX locks belong to processes: a process whose one thread holds {@code fence-0} while another waits for
 * {@code fence-1}, facing a process doing the reverse, is a "deadlock" the kernel refuses with {@code EDEADLK}. A process killed between appending the log
 * line and updating the state leaves a state whose log length is short; the next submitter replays the missing log
 * lines first, so a kill can never make the resource forget a token it accepted. A trailing partial line (killed
 * inside the append) was never acted on and is cut off.
 */
final class FencedFile implements AutoCloseable {

    private static final int FIELD = 20;
    private static final int STATE_SIZE = 3 * FIELD + 1;
    private static final Object PROCESS_WIDE = new Object();

    private final Path log;
    private final FileChannel stateChannel;
    private final FileChannel logChannel;

    private FencedFile(Path log, FileChannel stateChannel, FileChannel logChannel) {
        this.log = log;
        this.stateChannel = stateChannel;
        this.logChannel = logChannel;
    }

    static Path logOf(Path directory, int name) {
        return directory.resolve("fence-" + name + ".log");
    }

    static Path stateOf(Path directory, int name) {
        return directory.resolve("fence-" + name + ".state");
    }

    /** Opens (creating if needed) the fenced resource of lock name {@code name} in {@code directory}. */
    static FencedFile open(Path directory, int name) {
        try {
            FileChannel state = FileChannel.open(stateOf(directory, name), StandardOpenOption.CREATE,
                    StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileChannel log = FileChannel.open(logOf(directory, name), StandardOpenOption.CREATE,
                    StandardOpenOption.READ, StandardOpenOption.WRITE);
            return new FencedFile(logOf(directory, name), state, log);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the fenced resource " + logOf(directory, name), e);
        }
    }

    /**
     * Submits a write carrying {@code token} from thread {@code thread} of worker {@code worker}.
     *
     * @return whether the resource accepted it
     */
    boolean submit(long token, int worker, int thread) {
        synchronized (PROCESS_WIDE) {
            return submitLocked(token, worker, thread);
        }
    }

    private boolean submitLocked(long token, int worker, int thread) {
        try (FileLock ignored = stateChannel.lock()) {
            long[] state = readState();
            long logSize = logChannel.size();
            if (logSize != state[2]) {
                state = replay(state, logSize);
                logSize = state[2];
            }
            boolean accept = state[1] == 0 || token >= state[0];
            String line = System.nanoTime() + "\t" + worker + "\t" + thread + "\t" + token + "\t"
                    + (accept ? 'A' : 'R') + "\t" + (state[1] == 0 ? "-" : Long.toString(state[0])) + "\n";
            byte[] bytes = line.getBytes(StandardCharsets.US_ASCII);
            writeFully(logChannel, ByteBuffer.wrap(bytes), logSize);
            if (accept) {
                state[0] = token;
                state[1]++;
            }
            state[2] = logSize + bytes.length;
            writeState(state);
            return accept;
        } catch (IOException e) {
            throw new UncheckedIOException("Fenced resource " + log + " failed: " + e, e);
        }
    }

    /** Reads {@code [highest, accepted, logLength]}; all zero for a fresh resource. */
    private long[] readState() throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(STATE_SIZE);
        while (buffer.hasRemaining() && stateChannel.read(buffer, buffer.position()) > 0) {
            // read on
        }
        if (buffer.position() < STATE_SIZE) {
            return new long[3];
        }
        String text = new String(buffer.array(), StandardCharsets.US_ASCII);
        return new long[] {Long.parseLong(text.substring(0, FIELD).strip()),
            Long.parseLong(text.substring(FIELD, 2 * FIELD).strip()),
            Long.parseLong(text.substring(2 * FIELD, 3 * FIELD).strip())};
    }

    private void writeState(long[] state) throws IOException {
        String text = String.format("%" + FIELD + "d%" + FIELD + "d%" + FIELD + "d\n", state[0], state[1], state[2]);
        writeFully(stateChannel, ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII)), 0);
    }

    /** Applies log lines written after the state was last saved (their writer died in between). */
    private long[] replay(long[] state, long logSize) throws IOException {
        ByteBuffer tail = ByteBuffer.allocate((int) (logSize - state[2]));
        while (tail.hasRemaining() && logChannel.read(tail, state[2] + tail.position()) > 0) {
            // read on
        }
        String text = new String(tail.array(), 0, tail.position(), StandardCharsets.US_ASCII);
        int complete = text.lastIndexOf('\n') + 1;
        for (String line : text.substring(0, complete).split("\n")) {
            String[] f = line.split("\t");
            if (f.length >= 5 && f[4].equals("A")) {
                state[0] = Long.parseLong(f[3]);
                state[1]++;
            }
        }
        state[2] += complete;
        logChannel.truncate(state[2]);
        return state;
    }

    private static void writeFully(FileChannel channel, ByteBuffer bytes, long position) throws IOException {
        long at = position;
        while (bytes.hasRemaining()) {
            at += channel.write(bytes, at);
        }
    }

    @Override
    public void close() {
        try {
            stateChannel.close();
            logChannel.close();
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot close the fenced resource " + log, e);
        }
    }
}
