package io.locksmith.tests.torture;

import java.util.LinkedHashMap;
import java.util.Map;

/** Flat JSON objects (strings, whole numbers, booleans, null) for {@code results.jsonl}; nothing nested. */
final class Json {

    private Json() {
    }

    static String write(Map<String, Object> fields) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            string(b, e.getKey());
            b.append(':');
            Object v = e.getValue();
            if (v == null || v instanceof Number || v instanceof Boolean) {
                b.append(v);
            } else {
                string(b, v.toString());
            }
        }
        return b.append('}').toString();
    }

    private static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    /**
     * Parses one flat JSON object; numbers become {@link Long}.
     *
     * @throws IllegalArgumentException if {@code text} is not such an object, saying where
     */
    static Map<String, Object> parse(String text) {
        Parser p = new Parser(text);
        Map<String, Object> fields = new LinkedHashMap<>();
        p.skip();
        p.expect('{');
        p.skip();
        if (p.peek() == '}') {
            p.pos++;
            return fields;
        }
        while (true) {
            p.skip();
            String key = p.string();
            p.skip();
            p.expect(':');
            p.skip();
            fields.put(key, p.value());
            p.skip();
            char c = p.next();
            if (c == '}') {
                return fields;
            }
            if (c != ',') {
                throw p.error("',' or '}'");
            }
        }
    }

    private static final class Parser {
        final String text;
        int pos;

        Parser(String text) {
            this.text = text;
        }

        char peek() {
            if (pos >= text.length()) {
                throw error("more input");
            }
            return text.charAt(pos);
        }

        char next() {
            char c = peek();
            pos++;
            return c;
        }

        void skip() {
            while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
                pos++;
            }
        }

        void expect(char c) {
            if (next() != c) {
                pos--;
                throw error("'" + c + "'");
            }
        }

        Object value() {
            char c = peek();
            if (c == '"') {
                return string();
            }
            for (String word : new String[] {"true", "false", "null"}) {
                if (text.startsWith(word, pos)) {
                    pos += word.length();
                    return word.equals("null") ? null : Boolean.valueOf(word);
                }
            }
            int start = pos;
            while (pos < text.length() && "-+0123456789".indexOf(text.charAt(pos)) >= 0) {
                pos++;
            }
            if (start == pos) {
                throw error("a value");
            }
            return Long.parseLong(text.substring(start, pos));
        }

        String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = next();
                switch (e) {
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        b.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                        pos += 4;
                    }
                    default -> b.append(e);
                }
            }
        }

        IllegalArgumentException error(String expected) {
            return new IllegalArgumentException("Expected " + expected + " at offset " + pos + " of: " + text);
        }
    }
}
