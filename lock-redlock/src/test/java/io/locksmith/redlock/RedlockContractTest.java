package io.locksmith.redlock;

import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.tests.LockProviderContract;
import io.locksmith.tests.StoreControl;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import redis.clients.jedis.args.ClientType;
import redis.clients.jedis.params.ClientKillParams;

/**
 * The whole contract on five independent redis-server processes through the URI form
 * ({@code LockProvider.open("redlock://…")}). The store's faults hit a majority (three of the five masters):
 * that is what makes Redlock unavailable, and a minority is the availability tests' business.
 */
@DisplayName("redlock:// backend contract (5 masters)")
class RedlockContractTest extends LockProviderContract {

    /** A majority: the faults of the contract hit these. */
    private static final int[] MAJORITY = {0, 1, 2};

    @AfterEach
    void heal() {
        TestNodes.healAll();
    }

    @Override
    protected LockProvider newProvider(LockOptions options) {
        // 200 ms per node rather than the default 50: five servers and the tests share two busy cores
        return LockProvider.open(TestNodes.uri(TestNodes.COUNT, "nodeTimeout=200ms"), options);
    }

    @Override
    protected long storeOperationCount() {
        long sum = 0;
        for (int i = 0; i < TestNodes.COUNT; i++) {
            sum += TestNodes.commandsExceptInfo(i);
        }
        return sum;
    }

    @Override
    protected Set<String> heldNames(String namespace) {
        // a name left on any master counts as a leak, not only one a quorum holds
        return TestNodes.heldAnywhere(TestNodes.COUNT, namespace);
    }

    @Override
    protected void forceRelease(String namespace, String name) {
        String key = new RedisKeys(namespace).lock(name);
        for (int i = 0; i < TestNodes.COUNT; i++) {
            TestNodes.call(i, jedis -> jedis.del(key));
        }
    }

    @Override
    protected Optional<StoreControl> storeControl() {
        TestNodes.servers();
        return Optional.of(new MajorityControl());
    }

    /** Kills and restarts, or pauses and resumes, three of the five masters; drops the connections of all five. */
    static final class MajorityControl implements StoreControl {
        @Override
        public Set<Fault> faults() {
            return EnumSet.of(Fault.KILL, Fault.PAUSE, Fault.DROP_CONNECTIONS);
        }

        @Override
        public void kill() {
            for (int i : MAJORITY) {
                TestNodes.kill(i);
            }
        }

        @Override
        public void restart() {
            for (int i : MAJORITY) {
                TestNodes.restart(i);
            }
        }

        @Override
        public void pause() {
            for (int i : MAJORITY) {
                TestNodes.pause(i);
            }
        }

        @Override
        public void resume() {
            for (int i : MAJORITY) {
                TestNodes.resume(i);
            }
        }

        @Override
        public void dropConnections() {
            for (int i = 0; i < TestNodes.COUNT; i++) {
                TestNodes.call(i, jedis -> {
                    jedis.clientKill(new ClientKillParams().type(ClientType.NORMAL).skipMe(ClientKillParams.SkipMe.YES));
                    jedis.clientKill(new ClientKillParams().type(ClientType.PUBSUB));
                    return null;
                });
            }
        }
    }
}
