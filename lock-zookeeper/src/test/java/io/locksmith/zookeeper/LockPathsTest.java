package io.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.locksmith.LockNames;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.zookeeper.common.PathUtils;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("lock names as ZooKeeper path segments")
class LockPathsTest {

    private static final List<String> NAMES = List.of("/", "../", "../../etc/passwd", "a/b", "%", "%2F", "%252F",
            "%%", ".", "..", "...", ".a", "zookeeper", "{tag}", "'; DROP TABLE locks; --", "日本語のロック", "🔒🔑",
            " ", "a ", "Straße", "\uE000", "\uF8FF", "\uFFF0", "\uFFFD", "\u00A0", "x".repeat(255),
            "🔒".repeat(255), "a%2Fb", "a%2fb");

    @Test
    @DisplayName("every contract name becomes one valid path segment that decodes back to the name")
    void segmentsAreValidAndDecodeBack() {
        for (String name : NAMES) {
            LockNames.check(name);
            String segment = LockPaths.segment(name);
            assertThat(segment).as("segment of %s", name).doesNotContain("/").isNotIn(".", "..");
            PathUtils.validatePath("/ns/" + segment + "/_c_00000000-0000-0000-0000-000000000000-owner-0000000001");
            assertThat(LockPaths.decode(segment)).as("decoded segment of %s", name).isEqualTo(name);
        }
    }

    @Test
    @DisplayName("the mapping is injective: distinct names never share a segment")
    void distinctNamesGetDistinctSegments() {
        Map<String, String> seen = new HashMap<>();
        for (String name : NAMES) {
            String previous = seen.put(LockPaths.segment(name), name);
            assertThat(previous).as("names %s and %s share a segment", previous, name).isNull();
        }
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < 20_000; i++) {
            StringBuilder b = new StringBuilder();
            int length = 1 + random.nextInt(6);
            while (b.codePointCount(0, b.length()) < length) {
                int cp = random.nextInt(4) == 0 ? "%/.".charAt(random.nextInt(3))
                        : random.nextInt(0x20, Character.MAX_CODE_POINT + 1);
                if (Character.getType(cp) != Character.CONTROL && !Character.isSurrogate((char) cp)
                        && Character.isValidCodePoint(cp) && !(cp >= 0xD800 && cp <= 0xDFFF)) {
                    b.appendCodePoint(cp);
                }
            }
            String name = b.toString();
            String segment = LockPaths.segment(name);
            assertThat(LockPaths.decode(segment)).isEqualTo(name);
            String previous = seen.put(segment, name);
            assertThat(previous == null || previous.equals(name)).as("names %s and %s share segment %s", previous,
                    name, segment).isTrue();
        }
    }

    @Test
    @DisplayName("only what ZooKeeper cannot hold, '%' and the dot names are encoded")
    void encodingRules() {
        assertThat(LockPaths.segment("stock:sku-42")).isEqualTo("stock:sku-42");
        assertThat(LockPaths.segment("a/b")).isEqualTo("a%2Fb");
        assertThat(LockPaths.segment("100%")).isEqualTo("100%25");
        assertThat(LockPaths.segment(".")).isEqualTo("%2E");
        assertThat(LockPaths.segment("..")).isEqualTo("%2E%2E");
        assertThat(LockPaths.segment("...")).isEqualTo("...");
        assertThat(LockPaths.segment("zookeeper")).isEqualTo("zookeeper");
        assertThat(LockPaths.segment("Straße")).isEqualTo("Straße");
        assertThat(LockPaths.segment("🔒")).isEqualTo("%F0%9F%94%92");
        assertThat(LockPaths.segment("\uE000")).isEqualTo("%EE%80%80");
    }

    @Test
    @DisplayName("malformed escapes are rejected when decoding")
    void malformedEscapes() {
        assertThatThrownBy(() -> LockPaths.decode("a%2")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LockPaths.decode("a%zz")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("lock nodes sort by sequence and are recognised by their owner id and its client id")
    void nodeNames() {
        String client = "0123456789abcdef0123456789abcdef";
        String owner = client + ".1c";
        String mine = "_c_2d1e7c5c-3b7a-4f0e-9f43-2b8f4a7e6d11-" + owner + "-0000000012";
        String earlierRun = "_c_0a1b2c3d-3b7a-4f0e-9f43-2b8f4a7e6d11-" + client + ".1-0000000007";
        String theirs = "_c_5f0c1a9e-7f43-4b8e-8a51-0c6e3d2b1a00-fedcba9876543210fedcba9876543210.1c-0000000003";
        assertThat(LockPaths.sequence(mine)).isEqualTo(12);
        assertThat(LockPaths.sequence("no-sequence-here")).isEqualTo(Long.MAX_VALUE);
        assertThat(LockPaths.isOwnedBy(mine, owner)).isTrue();
        assertThat(LockPaths.isOwnedBy(earlierRun, owner)).as("a node of another run of the same client").isFalse();
        assertThat(LockPaths.isOwnedBy(mine, client + ".1")).as("an owner id that is a prefix of the node's")
                .isFalse();
        assertThat(LockPaths.isOwnedBy(mine, client)).as("the bare client id").isFalse();
        assertThat(LockPaths.isOwnedBy(theirs, owner)).isFalse();
        assertThat(LockPaths.isOwnedBy(owner + "-0000000001", owner)).isFalse();
        assertThat(LockPaths.isOfClient(mine, owner)).isTrue();
        assertThat(LockPaths.isOfClient(earlierRun, owner)).isTrue();
        assertThat(LockPaths.isOfClient(theirs, owner)).isFalse();
        assertThat(LockPaths.isOfClient(owner + "-0000000001", owner)).isFalse();
        assertThat(LockPaths.owner(mine)).isEqualTo(owner);
        assertThat(LockPaths.owner(earlierRun)).isEqualTo(client + ".1");
        assertThat(LockPaths.owner(theirs)).isEqualTo("fedcba9876543210fedcba9876543210.1c");
        assertThat(LockPaths.owner(owner + "-0000000001")).isNull();
        assertThat(LockPaths.clientId(owner)).isEqualTo(client);
        assertThat(LockPaths.isLaterRun(owner, client + ".1")).isTrue();
        assertThat(LockPaths.isLaterRun(client + ".1", owner)).isFalse();
        assertThat(LockPaths.isLaterRun(owner, owner)).isFalse();
        assertThat(LockPaths.isLaterRun(owner, "fedcba9876543210fedcba9876543210.1")).as("another client").isFalse();
        assertThat(LockPaths.isLaterRun(client, owner)).as("no run number").isFalse();
        List<String> queue = new java.util.ArrayList<>(List.of(mine, theirs));
        queue.sort(LockPaths.BY_SEQUENCE);
        assertThat(queue).containsExactly(theirs, mine);
        assertThat(new LockPaths("orders").nodePrefix("a/b", owner)).isEqualTo("/orders/a%2Fb/" + owner + "-");
    }

    @Test
    @DisplayName("read nodes carry ~r after the owner id, and are recognised as read nodes of that owner")
    void readNodeNames() {
        String client = "0123456789abcdef0123456789abcdef";
        String owner = client + ".1c";
        String prefix = new LockPaths("orders").nodePrefix("a", owner, true);
        assertThat(prefix).isEqualTo("/orders/a/" + owner + "~r-");
        String read = "_c_2d1e7c5c-3b7a-4f0e-9f43-2b8f4a7e6d11-" + owner + "~r-0000000012";
        String write = "_c_2d1e7c5c-3b7a-4f0e-9f43-2b8f4a7e6d11-" + owner + "-0000000013";
        assertThat(LockPaths.isRead(read)).isTrue();
        assertThat(LockPaths.isRead(write)).isFalse();
        assertThat(LockPaths.isRead("-0000000001")).isFalse();
        assertThat(LockPaths.owner(read)).isEqualTo(owner);
        assertThat(LockPaths.isOwnedBy(read, owner)).isTrue();
        assertThat(LockPaths.isOwnedBy(read, client + ".1")).as("an owner id that is a prefix of the node's")
                .isFalse();
        assertThat(LockPaths.isOfClient(read, owner)).isTrue();
        assertThat(LockPaths.sequence(read)).isEqualTo(12);
        assertThat(new LockPaths("orders").nodePrefix("a", owner, false)).isEqualTo("/orders/a/" + owner + "-");
    }
}
