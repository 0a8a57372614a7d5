package io.locksmith;

import java.util.Objects;

/**
 * The rules every lock name follows on every backend.
 *
 * <p>A name is any non-empty string of at most {@value #MAX_LENGTH} Unicode code points that contains no
 * control character (Unicode category Cc) and no unpaired surrogate. Everything else is data: slashes, dots,
 * braces, quotes, SQL metacharacters, wildcards, whitespace and any script. Names that differ in any way,
 * including only by case or by trailing spaces, are different locks. Each backend maps names to its keys
 * injectively inside the provider's namespace.
 */
public final class LockNames {

    /** The longest name accepted, in Unicode code points. */
    public static final int MAX_LENGTH = 255;

    private LockNames() {
    }

    /**
     * Returns {@code name} if it follows the rules.
     *
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException naming the rule {@code name} breaks
     */
    public static String check(String name) {
        Objects.requireNonNull(name, "lock name must not be null");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("lock name must not be empty");
        }
        int codePoints = 0;
        for (int i = 0; i < name.length(); ) {
            char c = name.charAt(i);
            int cp;
            if (Character.isHighSurrogate(c) && i + 1 < name.length()
                    && Character.isLowSurrogate(name.charAt(i + 1))) {
                cp = Character.toCodePoint(c, name.charAt(i + 1));
                i += 2;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("lock name must be well-formed Unicode; unpaired surrogate U+"
                        + hex(c) + " at index " + i + " in " + preview(name));
            } else {
                cp = c;
                i++;
            }
            if (Character.getType(cp) == Character.CONTROL) {
                throw new IllegalArgumentException("lock name must not contain control characters; found U+"
                        + hex(cp) + " at index " + (i - 1) + " in " + preview(name));
            }
            if (++codePoints > MAX_LENGTH) {
                throw new IllegalArgumentException("lock name must be at most " + MAX_LENGTH
                        + " code points; got " + name.codePointCount(0, name.length()) + " in " + preview(name));
            }
        }
        return name;
    }

    private static String hex(int cp) {
        return String.format("%04X", cp);
    }

    private static String preview(String name) {
        String shown = name.length() > 40 ? name.substring(0, 40) + "…" : name;
        StringBuilder b = new StringBuilder("'");
        shown.codePoints().forEach(cp -> {
            if (Character.getType(cp) == Character.CONTROL || Character.isSurrogate((char) cp) && cp < 0x10000) {
                b.append("\\u").append(hex(cp));
            } else {
                b.appendCodePoint(cp);
            }
        });
        return b.append('\'').toString();
    }
}
