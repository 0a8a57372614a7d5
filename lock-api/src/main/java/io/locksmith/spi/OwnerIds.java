package io.locksmith.spi;

/**
 * Reading the owner ids the machinery hands a {@link LockStore}: the provider's client id, a dot, and the run number
 * of one acquisition run in hex, which the provider counts up ({@code 3f2a….1c}). A store that keeps a hold of its
 * own for a name can tell from them whether a call comes from a later run of the same provider (which may replace
 * the hold) or from an earlier one (a late call, which must leave it alone).
 */
public final class OwnerIds {

    private OwnerIds() {
    }

    /** The provider's client id in an owner id: everything before the last dot (the whole id if it has none). */
    public static String clientId(String owner) {
        int dot = owner.lastIndexOf('.');
        return dot < 0 ? owner : owner.substring(0, dot);
    }

    /**
     * Whether {@code owner} names a later acquisition run than {@code than} of the same provider: the same client id
     * and a larger run number. False for owner ids of another form.
     */
    public static boolean isLaterRun(String owner, String than) {
        if (!clientId(owner).equals(clientId(than))) {
            return false;
        }
        long run = runNumber(owner);
        long other = runNumber(than);
        return run >= 0 && other >= 0 && run > other;
    }

    /** The run number of an owner id, or -1 if it has none that fits a long. */
    private static long runNumber(String owner) {
        int dot = owner.lastIndexOf('.');
        String digits = owner.substring(dot + 1);
        if (dot < 0 || digits.isEmpty() || digits.length() > 15) {
            return -1;
        }
        try {
            return Long.parseLong(digits, 16);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
