package io.locksmith.redis.internal;

import io.locksmith.spi.Uris;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A parsed {@code redis://[[user]:password@]host[:port][/db]} or {@code rediss://…} (TLS) address. Unsupported
 * internal API, shared by the Redis and Redlock backends; applications give the URI as text instead.
 *
 * <p>The port defaults to 6379 and the database to 0. User and password may be percent-encoded; with only a
 * password ({@code redis://:secret@host}) the server's {@code default} user is meant. Every parse error is an
 * {@link IllegalArgumentException} of one line that shows the URI with its credentials hidden.
 */
public record RedisUri(boolean tls, String host, int port, int database, String user, String password) {

    static final int DEFAULT_PORT = 6379;

    /**
     * Parses {@code uri}.
     *
     * @throws IllegalArgumentException naming what is wrong, with the credentials hidden
     */
    public static RedisUri parse(URI uri) {
        return parse(uri, false);
    }

    /**
     * Parses {@code uri}, whose query, if {@code queryAllowed}, the caller reads itself (the URI is checked
     * whole first, so that a password written unencoded is never shown as a query).
     *
     * @throws IllegalArgumentException naming what is wrong, with the credentials hidden
     */
    public static RedisUri parse(URI uri, boolean queryAllowed) {
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("redis") && !scheme.equals("rediss")) {
            throw bad(uri, "scheme must be redis or rediss");
        }
        if (uri.isOpaque()) {
            throw bad(uri, "expected redis://host:port");
        }
        if (uri.getRawAuthority() != null && uri.toString().lastIndexOf('@') > uri.toString().indexOf("//") + 1
                + uri.getRawAuthority().length()) {
            // checked first: the parts the user info spilled into would otherwise be shown as host or port
            throw bad(uri, "an '@' follows the host; percent-encode '/', '?', '#' and '@' in the user name and"
                    + " password");
        }
        if (uri.getRawQuery() != null && !queryAllowed) {
            throw bad(uri, "query parameters are not supported");
        }
        if (uri.getRawFragment() != null) {
            throw bad(uri, "a fragment is not supported");
        }
        String authority = uri.getRawAuthority();
        if (authority == null || authority.isEmpty()) {
            throw bad(uri, "the host is missing");
        }
        String user = null;
        String password = null;
        int at = authority.lastIndexOf('@');
        String hostPort = authority;
        if (at >= 0) {
            String userInfo = authority.substring(0, at);
            hostPort = authority.substring(at + 1);
            int colon = userInfo.indexOf(':');
            if (colon < 0) {
                throw bad(uri, "credentials must be written user:password@ or :password@");
            }
            String rawUser = userInfo.substring(0, colon);
            user = rawUser.isEmpty() ? null : decode(uri, rawUser);
            password = decode(uri, userInfo.substring(colon + 1));
        }
        String host;
        String portText = null;
        if (hostPort.startsWith("[")) {
            int close = hostPort.indexOf(']');
            if (close < 0) {
                throw bad(uri, "the IPv6 host is missing its closing ']'");
            }
            host = hostPort.substring(1, close);
            String rest = hostPort.substring(close + 1);
            if (!rest.isEmpty()) {
                if (!rest.startsWith(":")) {
                    throw bad(uri, "expected :port after the IPv6 host");
                }
                portText = rest.substring(1);
            }
        } else {
            int colon = hostPort.lastIndexOf(':');
            host = colon < 0 ? hostPort : hostPort.substring(0, colon);
            portText = colon < 0 ? null : hostPort.substring(colon + 1);
        }
        if (host.isEmpty()) {
            throw bad(uri, "the host is missing");
        }
        int port = DEFAULT_PORT;
        if (portText != null) {
            if (!portText.matches("[0-9]{1,5}") || Integer.parseInt(portText) < 1
                    || Integer.parseInt(portText) > 65_535) {
                throw bad(uri, "the port must be a number from 1 to 65535, got '" + portText + "'");
            }
            port = Integer.parseInt(portText);
        }
        String path = uri.getRawPath();
        int database = 0;
        if (path != null && !path.isEmpty() && !path.equals("/")) {
            String db = path.substring(1);
            if (!db.matches("[0-9]{1,9}")) {
                throw bad(uri, "the path must be a database number, as in redis://host:6379/0, got '" + path + "'");
            }
            database = Integer.parseInt(db);
        }
        return new RedisUri(scheme.equals("rediss"), host, port, database, user, password);
    }

    /** The address for messages: scheme, host, port and database, never the credentials. */
    public String address() {
        String shownHost = host.indexOf(':') >= 0 ? '[' + host + ']' : host;
        return (tls ? "rediss" : "redis") + "://" + shownHost + ':' + port + '/' + database;
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

    private static IllegalArgumentException bad(URI uri, String problem) {
        return new IllegalArgumentException("Invalid Redis URI '" + redact(uri) + "': " + problem
                + " (expected redis://[user:password@]host[:port][/database] or rediss://…)");
    }

    private static String decode(URI uri, String raw) {
        if (raw.indexOf('%') < 0) {
            return raw;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%') {
                if (i + 2 >= raw.length() || Character.digit(raw.charAt(i + 1), 16) < 0
                        || Character.digit(raw.charAt(i + 2), 16) < 0) {
                    throw bad(uri, "bad percent-escape in the credentials");
                }
                bytes.write(Character.digit(raw.charAt(i + 1), 16) * 16 + Character.digit(raw.charAt(i + 2), 16));
                i += 2;
            } else {
                int next = raw.indexOf('%', i);
                byte[] utf8 = raw.substring(i, next < 0 ? raw.length() : next).getBytes(StandardCharsets.UTF_8);
                bytes.write(utf8, 0, utf8.length);
                i = (next < 0 ? raw.length() : next) - 1;
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
