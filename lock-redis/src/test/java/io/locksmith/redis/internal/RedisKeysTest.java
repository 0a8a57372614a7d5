package io.locksmith.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.util.JedisClusterCRC16;

@DisplayName("Redis keys of lock names")
class RedisKeysTest {

    private static final List<String> NAMES = List.of("a", "stock:sku-42", "{", "}", "{}", "}{", "{a}", "%", "%7B",
            "%7D", "%25", "a}b{c", "../../etc", "x:{y}", "名前", "emoji 🔒", " spaced ", "*?[]", "\"quoted'",
            "%7b", "a%", "%%7D");

    private final RedisKeys keys = new RedisKeys("orders");

    @Test
    @DisplayName("names map to keys one to one, and every key decodes back to its name")
    void injective() {
        Set<String> seen = new HashSet<>();
        for (String name : NAMES) {
            String key = keys.lock(name);
            assertThat(seen.add(key)).as("key of %s is shared with another name", name).isTrue();
            assertThat(keys.nameOfLock(key)).as("name decoded from %s", key).isEqualTo(name);
        }
    }

    @Test
    @DisplayName("the encoded name is the hash tag: all keys and the channel of a lock share its cluster slot")
    void oneSlotPerLock() {
        for (String name : NAMES) {
            String lock = keys.lock(name);
            String tag = lock.substring(lock.indexOf('{') + 1, lock.length() - 1);
            assertThat(tag).as("hash tag of %s", name).doesNotContain("{", "}").isEqualTo(RedisKeys.encode(name));
            int slot = JedisClusterCRC16.getSlot(lock);
            assertThat(slot).as("slot of the tag alone").isEqualTo(JedisClusterCRC16.getSlot("{" + tag + "}"));
            assertThat(JedisClusterCRC16.getSlot(keys.fence(name))).as("fence of %s", name).isEqualTo(slot);
            assertThat(JedisClusterCRC16.getSlot(keys.cancelled(name))).as("cancelled of %s", name).isEqualTo(slot);
            assertThat(JedisClusterCRC16.getSlot(keys.channel(name))).as("channel of %s", name).isEqualTo(slot);
        }
    }

    @Test
    @DisplayName("keys stay inside their namespace, and other keys are not taken for locks")
    void namespaced() {
        assertThat(keys.lock("x")).isEqualTo("orders:{x}");
        assertThat(keys.fence("x")).isEqualTo("orders:{x}:fence");
        assertThat(keys.lock("../x}")).startsWith("orders:{").isEqualTo("orders:{../x%7D}");
        assertThat(keys.nameOfLock("orders:{x}:fence")).isNull();
        assertThat(keys.nameOfLock("other:{x}")).isNull();
        assertThat(keys.nameOfLock("orders:{a}b}")).isNull();
        assertThat(keys.nameOfLock("orders:{%zz}")).isNull();
        assertThat(keys.nameOfLock("orders:{}")).isNull();
    }
}
