package io.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The row keys of the lock table. Every version of Locksmith that shares a table must compute the same key for a
 * name, or two instances of an application in the middle of a rolling upgrade would lock different rows; the
 * expected values are SHA-256 digests computed outside Java ({@code hashlib.sha256(b"locksmith\0orders-42")}).
 */
@DisplayName("JDBC row keys")
class LockTableKeyTest {

    private static final String ORDERS_42 = "8684c0219c97f094f5ee190e003d2a26669a0b70629eb32253154b842b4c1e71";
    private static final String STRASSE = "422977a03e19a07fbc5f00aac5a317cdd842f7b034299d7d228039ddfdfac47a";

    @Test
    @DisplayName("a lock's key is SHA-256 of namespace, NUL, name; its claim row adds a NUL, its permit row two")
    void keysArePinned() {
        assertThat(hex(LockTable.key("locksmith", "orders-42"))).isEqualTo(ORDERS_42);
        assertThat(hex(LockTable.claimKey("locksmith", "orders-42")))
                .isEqualTo("18b176c69a802bf71115ffc9341d947dd456ca5c94f4906f493c149fc4793122");
        assertThat(hex(LockTable.permitsKey("locksmith", "orders-42")))
                .isEqualTo("b9eabf2da885c61ab58cfbf92aacdce726552835786dffa3f53d73cb568313be");
        assertThat(hex(LockTable.key("lager", "straße"))).as("names are hashed as UTF-8").isEqualTo(STRASSE);
    }

    @Test
    @DisplayName("threads computing keys at once each get their own name's key (no digest state is shared)")
    void concurrentKeys() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try {
            List<Future<Set<String>>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                boolean orders = t % 2 == 0;
                results.add(threads.submit(() -> {
                    Set<String> wrong = new HashSet<>();
                    for (int i = 0; i < 20_000; i++) {
                        String key = orders ? hex(LockTable.key("locksmith", "orders-42"))
                                : hex(LockTable.key("lager", "straße"));
                        if (!key.equals(orders ? ORDERS_42 : STRASSE)) {
                            wrong.add(key);
                        }
                    }
                    return wrong;
                }));
            }
            for (Future<Set<String>> result : results) {
                assertThat(result.get()).isEmpty();
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }
}
