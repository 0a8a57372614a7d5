package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.LockOptions;
import io.locksmith.redis.internal.RedisLockStore;
import io.locksmith.redis.internal.RedisNodeStore;
import io.locksmith.redis.internal.RedisStoreProbe;
import io.locksmith.spi.Acquisition;
import io.locksmith.tests.servers.RedisServer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Connection;

/**
 * The pipelined calls Redlock makes through a Redis store: they wait with a round's short deadline on pooled
 * connections that the client's ordinary calls use afterwards.
 */
@DisplayName("Redis pipelined calls (Redlock's rounds)")
class RedisPipeliningTest {

    private static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(3);

    private static RedisServer server;

    @BeforeAll
    static void startServer() {
        server = RedisServer.start();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    @DisplayName("a pipelined call leaves its connection with the client's own socket timeout")
    void pipelinedCallRestoresTheSocketTimeout() {
        LockOptions options = LockOptions.builder().namespace(TestRedis.freshNamespace())
                .operationTimeout(OPERATION_TIMEOUT).build();
        try (RedisLockStore store = TestRedis.store(server, options)) {
            assertThat(store.canPipeline()).isTrue();
            RedisNodeStore.Attempt attempt = new RedisNodeStore.Attempt(store.newHold("stock:sku-42", "owner-1"), 1);
            long roundDeadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(250);
            Acquisition acquired = store.sendAcquire(attempt, Duration.ofSeconds(30)).await(roundDeadline);
            assertThat(acquired.isAcquired()).isTrue();
            assertThat(store.sendRelease(attempt).await(System.nanoTime()
                    + TimeUnit.MILLISECONDS.toNanos(250))).isTrue();

            // The connection the calls used (kept as a spare, or back in the pool) is the one handed out next.
            Connection used = RedisStoreProbe.pipeline(store).takeConnection();
            try {
                assertThat(used.getSoTimeout()).as("socket timeout of the connection after two pipelined calls")
                        .isEqualTo((int) OPERATION_TIMEOUT.toMillis());
            } finally {
                RedisStoreProbe.pipeline(store).giveBack(used);
            }
        }
    }

    @Test
    @DisplayName("closing the store gives back the connections its pipelined calls kept")
    void closeReturnsSpareConnections() {
        LockOptions options = LockOptions.builder().namespace(TestRedis.freshNamespace()).build();
        try (redis.clients.jedis.RedisClient client = redis.clients.jedis.RedisClient.create(server.host(),
                server.port())) {
            RedisLockStore store = new RedisLockStore(client, server.toString(), options, () -> { }, null);
            for (int i = 0; i < 3; i++) {
                RedisNodeStore.Attempt attempt = new RedisNodeStore.Attempt(store.newHold("n" + i, "owner-2"), i + 1);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                assertThat(store.sendAcquire(attempt, Duration.ofSeconds(30)).await(deadline).isAcquired()).isTrue();
                assertThat(store.sendRelease(attempt).await(deadline)).isTrue();
            }
            assertThat(client.getPool().getNumActive()).as("connections kept borrowed while the store is open")
                    .isPositive();
            store.close();
            assertThat(client.getPool().getNumActive()).as("connections still borrowed after close").isZero();
        }
    }
}
