package io.locksmith.spi;

/** What every backend and the command share to show a store URI without its secrets. */
public final class Uris {

    private Uris() {
    }

    /**
     * {@code uri} for messages and logs, with what may be a secret replaced by {@code ***}: the user info of each
     * host ({@code redlock://***@h1,***@h2/0}), and {@code password=} parameters. If an {@code @} follows the host
     * list (a password holding a character it should have percent-encoded, {@code / ? #}), everything between
     * {@code //} and that last {@code @} is hidden, whatever characters it holds. In a {@code jdbc:} URL only the part
     * before its parameters is searched for user info, since parameters may hold an {@code @} themselves. Without
     * {@code //}, whatever precedes an {@code @} counts as user info.
     */
    public static String redact(String uri) {
        return hidePasswordParameters(hideUserInfo(uri));
    }

    private static String hideUserInfo(String uri) {
        int from = uri.indexOf("//");
        // without "//" (a mistyped "scheme:user:password@host"), user info can only start the text
        int hosts = from < 0 ? 0 : from + 2;
        int end = uri.length();
        if (uri.regionMatches(true, 0, "jdbc:", 0, 5)) {
            end = firstOf(uri, hosts, end, '?', ';');
        }
        int at = end == 0 ? -1 : uri.lastIndexOf('@', end - 1);
        if (at < hosts) {
            return uri;
        }
        int authorityEnd = firstOf(uri, hosts, uri.length(), '/', '?', '#');
        if (at >= authorityEnd) {
            return uri.substring(0, hosts) + "***" + uri.substring(at);
        }
        StringBuilder shown = new StringBuilder(uri.length()).append(uri, 0, hosts);
        String[] nodes = uri.substring(hosts, authorityEnd).split(",", -1);
        for (int i = 0; i < nodes.length; i++) {
            int nodeAt = nodes[i].lastIndexOf('@');
            shown.append(i > 0 ? "," : "").append(nodeAt < 0 ? nodes[i] : "***" + nodes[i].substring(nodeAt));
        }
        return shown.append(uri, authorityEnd, uri.length()).toString();
    }

    private static String hidePasswordParameters(String text) {
        return text.replaceAll("(?i)(password=)[^&;]*", "$1***");
    }

    private static int firstOf(String text, int from, int end, char... stops) {
        int first = end;
        for (char stop : stops) {
            int at = text.indexOf(stop, from);
            if (at >= 0 && at < first) {
                first = at;
            }
        }
        return first;
    }
}
