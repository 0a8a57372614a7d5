package io.locksmith.zookeeper;

import io.locksmith.spi.Uris;
import io.locksmith.zookeeper.ZooKeeperLockProviders.SuspendedPolicy;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import org.apache.zookeeper.common.PathUtils;

/**
 * A parsed {@code zookeeper://[user:password@]host1:2181,host2:2181[/chroot][?parameters]} address.
 *
 * <p>Ports default to 2181. The path is the ZooKeeper chroot (Curator's namespace) the provider's client works
 * in; the locks then live under {@code /<chroot>/<LockOptions.namespace>}. {@code user:password} (percent-encoded
 * where needed) turns on digest authentication and ACLs on every lock node. Parameters:
 * {@code sessionTimeoutMs}, {@code connectionTimeoutMs} and {@code suspendedPolicy} ({@code LOST} or
 * {@code LOST_AFTER_SESSION_TIMEOUT}). Every parse error is an {@link IllegalArgumentException} of one line that
 * shows the URI with its credentials hidden.
 */
record ZooKeeperUri(String hosts, String chroot, String user, String password, OptionalInt sessionTimeoutMs,
        OptionalInt connectionTimeoutMs, SuspendedPolicy suspendedPolicy) {

    static final int DEFAULT_PORT = 2181;

    static ZooKeeperUri parse(URI uri) {
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("zookeeper")) {
            throw bad(uri, "the scheme must be zookeeper");
        }
        if (uri.isOpaque()) {
            throw bad(uri, "expected zookeeper://host:port");
        }
        if (uri.getRawAuthority() != null && uri.toString().lastIndexOf('@') > uri.toString().indexOf("//") + 1
                + uri.getRawAuthority().length()) {
            // checked first: the parts the user info spilled into would otherwise be shown as host or port
            throw bad(uri, "an '@' follows the hosts; percent-encode '/', '?', '#' and '@' in the user name and"
                    + " password");
        }
        if (uri.getRawFragment() != null) {
            throw bad(uri, "a fragment is not supported");
        }
        String authority = uri.getRawAuthority();
        if (authority == null || authority.isEmpty()) {
            throw bad(uri, "the hosts are missing");
        }
        String user = null;
        String password = null;
        int at = authority.lastIndexOf('@');
        String hostList = authority;
        if (at >= 0) {
            String userInfo = authority.substring(0, at);
            hostList = authority.substring(at + 1);
            int colon = userInfo.indexOf(':');
            if (colon <= 0) {
                throw bad(uri, "credentials must be written user:password@");
            }
            user = decode(uri, userInfo.substring(0, colon));
            password = decode(uri, userInfo.substring(colon + 1));
        }
        List<String> members = new ArrayList<>();
        for (String member : hostList.split(",", -1)) {
            members.add(member(uri, member));
        }
        String chroot = chroot(uri);
        OptionalInt sessionTimeout = OptionalInt.empty();
        OptionalInt connectionTimeout = OptionalInt.empty();
        SuspendedPolicy policy = null;
        if (uri.getRawQuery() != null && !uri.getRawQuery().isEmpty()) {
            for (String parameter : uri.getRawQuery().split("&")) {
                int eq = parameter.indexOf('=');
                String key = eq < 0 ? parameter : parameter.substring(0, eq);
                String value = eq < 0 ? "" : decode(uri, parameter.substring(eq + 1));
                switch (key) {
                    case "sessionTimeoutMs" -> sessionTimeout = OptionalInt.of(positive(uri, key, value));
                    case "connectionTimeoutMs" -> connectionTimeout = OptionalInt.of(positive(uri, key, value));
                    case "suspendedPolicy" -> policy = policy(uri, value);
                    default -> throw bad(uri, "unknown parameter '" + key
                            + "'; known: sessionTimeoutMs, connectionTimeoutMs, suspendedPolicy");
                }
            }
        }
        return new ZooKeeperUri(String.join(",", members), chroot, user, password, sessionTimeout, connectionTimeout,
                policy);
    }

    private static String member(URI uri, String member) {
        if (member.isEmpty()) {
            throw bad(uri, "a host is missing in the host list");
        }
        String host;
        String port = null;
        if (member.startsWith("[")) {
            int close = member.indexOf(']');
            if (close < 0) {
                throw bad(uri, "the IPv6 host " + member + " is missing its closing ']'");
            }
            host = member.substring(0, close + 1);
            String rest = member.substring(close + 1);
            if (!rest.isEmpty()) {
                if (!rest.startsWith(":")) {
                    throw bad(uri, "expected :port after the IPv6 host " + host);
                }
                port = rest.substring(1);
            }
        } else {
            int colon = member.lastIndexOf(':');
            host = colon < 0 ? member : member.substring(0, colon);
            port = colon < 0 ? null : member.substring(colon + 1);
        }
        if (host.isEmpty() || host.equals("[]")) {
            throw bad(uri, "a host is missing in '" + member + "'");
        }
        if (port == null) {
            return host + ":" + DEFAULT_PORT;
        }
        if (!port.matches("[0-9]{1,5}") || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65_535) {
            throw bad(uri, "the port must be a number from 1 to 65535, got '" + port + "' in '" + member + "'");
        }
        return host + ":" + Integer.parseInt(port);
    }

    private static String chroot(URI uri) {
        String path = uri.getRawPath();
        if (path == null || path.isEmpty() || path.equals("/")) {
            return null;
        }
        String decoded = decode(uri, path);
        if (decoded.endsWith("/")) {
            decoded = decoded.substring(0, decoded.length() - 1);
        }
        try {
            PathUtils.validatePath(decoded);
        } catch (IllegalArgumentException e) {
            throw bad(uri, "the path must be a valid ZooKeeper path (the chroot), got '" + path + "': "
                    + e.getMessage());
        }
        if (decoded.equals("/zookeeper") || decoded.startsWith("/zookeeper/")) {
            throw bad(uri, "the chroot must not be inside /zookeeper, which the server reserves");
        }
        return decoded.substring(1);
    }

    private static int positive(URI uri, String key, String value) {
        if (!value.matches("[0-9]{1,9}") || Integer.parseInt(value) < 1) {
            throw bad(uri, key + " must be a positive number of milliseconds, got '" + value + "'");
        }
        return Integer.parseInt(value);
    }

    private static SuspendedPolicy policy(URI uri, String value) {
        for (SuspendedPolicy policy : SuspendedPolicy.values()) {
            if (policy.name().equalsIgnoreCase(value)) {
                return policy;
            }
        }
        throw bad(uri, "suspendedPolicy must be LOST or LOST_AFTER_SESSION_TIMEOUT, got '" + value + "'");
    }

    /** The address for messages: hosts and chroot, never the credentials. */
    String address() {
        return "zookeeper://" + hosts + (chroot == null ? "" : "/" + chroot);
    }

    @Override
    public String toString() {
        return address();
    }

    /**
     * The URI as text with any credentials replaced by {@code ***}: everything between {@code //} and the last
     * {@code @}, so that a password with a character it should have percent-encoded ({@code / ? #}) is hidden
     * too.
     */
    static String redact(URI uri) {
        return Uris.redact(uri.toString());
    }

    private static String decode(URI uri, String raw) {
        if (raw.indexOf('%') < 0) {
            return raw;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (int i = 0; i < raw.length(); i++) {
            int c = raw.codePointAt(i);
            if (c == '%') {
                int hi = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 1), 16) : -1;
                int lo = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 2), 16) : -1;
                if (hi < 0 || lo < 0) {
                    throw bad(uri, "malformed percent-escape at index " + i + " of a component");
                }
                bytes.write(hi << 4 | lo);
                i += 2;
            } else {
                byte[] encoded = new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8);
                bytes.write(encoded, 0, encoded.length);
                i += Character.charCount(c) - 1;
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    private static IllegalArgumentException bad(URI uri, String problem) {
        return new IllegalArgumentException("Invalid ZooKeeper URI '" + redact(uri) + "': " + problem
                + " (expected zookeeper://[user:password@]host1:2181,host2:2181[/chroot])");
    }
}
