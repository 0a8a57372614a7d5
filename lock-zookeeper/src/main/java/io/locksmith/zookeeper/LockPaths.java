package io.locksmith.zookeeper;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import io.locksmith.spi.OwnerIds;

/**
 * Where the locks of one namespace live in ZooKeeper, and how lock names become path segments.
 *
 * <p>Layout: {@code /<namespace>/<segment(name)>/_c_<uuid>-<owner>-<sequence>}, and the semaphores' permit counts
 * under {@code /<namespace>~permits} (see {@link #permits}). The namespace node and the
 * per-lock parents are container nodes, which the server deletes once their last child is gone; the lock nodes
 * are ephemeral-sequential, created with Curator's protection ({@code _c_<uuid>-}) and tagged with the owner id of
 * the acquisition run that created them ({@code <clientId>.<number>}: letters, digits and dots, never a dash), so
 * that a provider recognises its own nodes and each run its own node. A read node of a read-write lock has
 * {@link #READ_MARK} between its owner id and the sequence number: {@code _c_<uuid>-<owner>~r-<sequence>}.
 *
 * <p>Name mapping: a lock name becomes one path segment by percent-encoding (as UTF-8 bytes, upper-case hex)
 * every character ZooKeeper does not allow in a path or that would change its meaning: {@code '/'}, {@code '%'}
 * itself, control characters (U+0000–U+001F, U+007F–U+009F), surrogates and everything outside the Basic
 * Multilingual Plane, the private use area (U+E000–U+F8FF) and U+FFF0–U+FFFF. The names {@code "."} and
 * {@code ".."} are encoded entirely ({@code %2E}, {@code %2E%2E}). Every other character stays as it is. Since
 * {@code '%'} is always encoded, {@link #decode} inverts {@link #segment}, so two names never share a path.
 * {@code "zookeeper"} needs no encoding: only {@code /zookeeper} at the root is reserved, and lock names are
 * always one level below a namespace.
 */
final class LockPaths {

    /** What Curator's protected mode puts in front of a node name: {@code _c_} + a 36-character UUID + '-'. */
    private static final int PROTECTED_PREFIX_LENGTH = 40;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();
    /** What follows the owner id in the name of a read node ({@code ~}: never in an owner id or a sequence). */
    static final String READ_MARK = "~r";

    /** Orders lock nodes by their sequence number, the queue order; nodes without one sort last. */
    static final Comparator<String> BY_SEQUENCE = Comparator.comparingLong(LockPaths::sequence);

    private final String root;

    /** The paths of namespace {@code namespace}, relative to the client's own namespace (chroot), if any. */
    LockPaths(String namespace) {
        this.root = "/" + namespace;
    }

    /** The namespace node: {@code /<namespace>}. */
    String root() {
        return root;
    }

    /**
     * The persistent node that keeps the permit count of semaphore {@code name}:
     * {@code /<namespace>~permits/<segment(name)>}, beside the namespace node ({@code ~} is in no namespace), so
     * that no lock's nodes are ever under it.
     */
    String permits(String name) {
        return root + "~permits/" + segment(name);
    }

    /** The parent node of every node of lock {@code name}. */
    String parent(String name) {
        return root + "/" + segment(name);
    }

    /** What to pass to a protected ephemeral-sequential create for {@code owner}'s node of lock {@code name}. */
    String nodePrefix(String name, String owner) {
        return nodePrefix(name, owner, false);
    }

    /**
     * What to pass to a protected ephemeral-sequential create for {@code owner}'s node of lock {@code name}; a read
     * node ({@code shared}) has {@link #READ_MARK} after the owner id.
     */
    String nodePrefix(String name, String owner, boolean shared) {
        return parent(name) + "/" + owner + (shared ? READ_MARK : "") + "-";
    }

    /** Whether lock node {@code child} is a read node: {@link #READ_MARK} right before its sequence number. */
    static boolean isRead(String child) {
        int dash = child.lastIndexOf('-');
        return dash >= READ_MARK.length() && child.startsWith(READ_MARK, dash - READ_MARK.length());
    }

    /** The path segment of a lock name; see the class comment for the rules. */
    static String segment(String name) {
        if (name.equals(".") || name.equals("..")) {
            return name.replace(".", "%2E");
        }
        StringBuilder b = null;
        for (int i = 0; i < name.length(); ) {
            int cp = name.codePointAt(i);
            int next = i + Character.charCount(cp);
            if (mustEncode(cp)) {
                if (b == null) {
                    b = new StringBuilder(name.length() + 16).append(name, 0, i);
                }
                for (byte octet : name.substring(i, next).getBytes(StandardCharsets.UTF_8)) {
                    b.append('%').append(HEX[(octet >> 4) & 0xF]).append(HEX[octet & 0xF]);
                }
            } else if (b != null) {
                b.appendCodePoint(cp);
            }
            i = next;
        }
        return b == null ? name : b.toString();
    }

    private static boolean mustEncode(int cp) {
        return cp == '/' || cp == '%'
                || cp <= 0x1F
                || cp >= 0x7F && cp <= 0x9F
                || cp >= 0xD800 && cp <= 0xF8FF
                || cp >= 0xFFF0;
    }

    /**
     * The lock name of a path segment made by {@link #segment}.
     *
     * @throws IllegalArgumentException if {@code segment} has a malformed escape
     */
    static String decode(String segment) {
        int percent = segment.indexOf('%');
        if (percent < 0) {
            return segment;
        }
        StringBuilder b = new StringBuilder(segment.length()).append(segment, 0, percent);
        ByteArrayOutputStream octets = new ByteArrayOutputStream();
        int i = percent;
        while (i < segment.length()) {
            char c = segment.charAt(i);
            if (c != '%') {
                b.append(c);
                i++;
                continue;
            }
            octets.reset();
            while (i < segment.length() && segment.charAt(i) == '%') {
                if (i + 2 >= segment.length()) {
                    throw new IllegalArgumentException("truncated escape at index " + i + " in '" + segment + "'");
                }
                int hi = Character.digit(segment.charAt(i + 1), 16);
                int lo = Character.digit(segment.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException("bad escape at index " + i + " in '" + segment + "'");
                }
                octets.write(hi << 4 | lo);
                i += 3;
            }
            b.append(new String(octets.toByteArray(), StandardCharsets.UTF_8));
        }
        return b.toString();
    }

    /** The sequence number ZooKeeper appended to a lock node's name, or {@link Long#MAX_VALUE} if it has none. */
    static long sequence(String child) {
        int dash = child.lastIndexOf('-');
        String digits = child.substring(dash + 1);
        if (digits.isEmpty() || digits.length() > 10) {
            return Long.MAX_VALUE;
        }
        for (int i = 0; i < digits.length(); i++) {
            if (digits.charAt(i) < '0' || digits.charAt(i) > '9') {
                return Long.MAX_VALUE;
            }
        }
        return Long.parseLong(digits);
    }

    /**
     * The owner id of the acquisition run that created lock node {@code child}: what lies between the protected
     * prefix and the sequence number; null for a node of another form.
     */
    static String owner(String child) {
        int dash = child.lastIndexOf('-');
        if (!child.startsWith("_c_") || dash <= PROTECTED_PREFIX_LENGTH
                || child.charAt(PROTECTED_PREFIX_LENGTH - 1) != '-') {
            return null;
        }
        String owner = child.substring(PROTECTED_PREFIX_LENGTH, dash);
        return owner.endsWith(READ_MARK) ? owner.substring(0, owner.length() - READ_MARK.length()) : owner;
    }

    /** Whether lock node {@code child} was created by the acquisition run with owner id {@code owner}. */
    static boolean isOwnedBy(String child, String owner) {
        int after = PROTECTED_PREFIX_LENGTH + owner.length();
        if (child.startsWith(READ_MARK, after)) {
            after += READ_MARK.length();
        }
        return child.length() > after + 1
                && child.startsWith("_c_")
                && child.startsWith(owner, PROTECTED_PREFIX_LENGTH)
                && child.charAt(after) == '-';
    }

    /**
     * Whether lock node {@code child} was created by the provider whose acquisition run has owner id {@code owner}
     * (by this run or another run of the same provider): the owner ids agree up to their last dot.
     */
    static boolean isOfClient(String child, String owner) {
        String creator = owner(child);
        return creator != null && clientId(creator).equals(clientId(owner));
    }

    /** See {@link OwnerIds#isLaterRun}. */
    static boolean isLaterRun(String owner, String than) {
        return OwnerIds.isLaterRun(owner, than);
    }

    /** See {@link OwnerIds#clientId}. */
    static String clientId(String owner) {
        return OwnerIds.clientId(owner);
    }
}
