package io.locksmith.tests.torture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The unguarded counter of one lock name: a number in a file, read and written with plain positional reads and
 * writes and no lock of its own, so only the distributed lock keeps read-modify-write cycles from losing updates.
 * The number is fixed-width and written in place, never truncated, so a reader racing a writer (which only a broken
 * lock allows) sees the old or the new value rather than an empty file.
 */
final class CounterFile implements AutoCloseable {

    private static final int WIDTH = 20;

    private final Path path;
    private final FileChannel channel;

    private CounterFile(Path path, FileChannel channel) {
        this.path = path;
        this.channel = channel;
    }

    static Path of(Path directory, int name) {
        return directory.resolve("counter-" + name);
    }

    static CounterFile open(Path directory, int name) {
        Path path = of(directory, name);
        try {
            return new CounterFile(path, FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the counter " + path, e);
        }
    }

    long read() {
        ByteBuffer buffer = ByteBuffer.allocate(WIDTH);
        try {
            while (buffer.hasRemaining() && channel.read(buffer, buffer.position()) > 0) {
                // read on
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the counter " + path, e);
        }
        return parse(new String(buffer.array(), 0, buffer.position(), StandardCharsets.US_ASCII));
    }

    void write(long value) {
        ByteBuffer bytes = ByteBuffer.wrap(String.format("%" + WIDTH + "d", value).getBytes(StandardCharsets.US_ASCII));
        try {
            long at = 0;
            while (bytes.hasRemaining()) {
                at += channel.write(bytes, at);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write the counter " + path, e);
        }
    }

    /** The value in the counter file of {@code name} in {@code directory}; 0 if it is missing or empty. */
    static long valueIn(Path directory, int name) {
        Path path = of(directory, name);
        try {
            return Files.exists(path) ? parse(Files.readString(path, StandardCharsets.US_ASCII)) : 0;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the counter " + path, e);
        }
    }

    private static long parse(String text) {
        String digits = text.strip();
        return digits.isEmpty() ? 0 : Long.parseLong(digits);
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot close the counter " + path, e);
        }
    }
}
