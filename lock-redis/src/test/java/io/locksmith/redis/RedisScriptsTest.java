package io.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.redis.internal.RedisKeys;
import io.locksmith.redis.internal.RedisScripts.Script;
import io.locksmith.redis.internal.RedisScripts;
import io.locksmith.spi.LockStore;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The Lua scripts run directly against a real server, one decision at a time. */
@DisplayName("Redis lock scripts")
class RedisScriptsTest {

    private static final String ALICE = "a11ce000000000000000000000000000";
    private static final String BOB = "b0b00000000000000000000000000000";
    private static final String LEASE = "30000";

    @RegisterExtension
    static final OwnRedis REDIS = new OwnRedis();

    private RedisKeys keys;


    @BeforeEach
    void namespace() {
        keys = new RedisKeys(TestRedis.freshNamespace());
    }

    private static Object run(Script script, List<String> keyList, String... args) {
        return REDIS.admin().call(jedis -> jedis.eval(script.text(), keyList, List.of(args)));
    }

    private long acquire(String name, String owner, long attempt) {
        return (Long) run(RedisScripts.ACQUIRE, acquireKeys(name), owner, LEASE, Long.toString(attempt));
    }

    /**
     * An attempt of a waiter with no ticket yet: its busy answer, {claimed 1 or 0, lease left, ticket}, claims the
     * next turn when nobody has.
     */
    private Object acquireOrClaim(String name, String owner, long attempt, String lease) {
        return run(RedisScripts.ACQUIRE, acquireKeys(name), owner, lease, Long.toString(attempt), RedisScripts.CLAIM);
    }

    private List<String> acquireKeys(String name) {
        return List.of(keys.lock(name), keys.fence(name), keys.cancelled(name), keys.claim(name), keys.queue(name),
                keys.queueDeadlines(name));
    }

    private long release(String name, String owner, String attempt) {
        return (Long) run(RedisScripts.RELEASE, List.of(keys.lock(name), keys.claim(name)), owner, attempt,
                keys.channel(name));
    }

    private String claimant(String name) {
        return REDIS.admin().call(jedis -> jedis.hget(keys.claim(name), "owner"));
    }

    private long cancel(String name, String owner, long attempt) {
        return (Long) run(RedisScripts.CANCEL, List.of(keys.lock(name), keys.cancelled(name)), owner,
                Long.toString(attempt), "60000", keys.channel(name));
    }

    /** Renews one lock's hold of {@code owner}'s {@code attempt}; returns the positions no longer held. */
    private Object renew(String name, String owner, String attempt) {
        return run(RedisScripts.RENEW, List.of(keys.lock(name)), LEASE, owner, attempt);
    }

    private boolean exists(String name) {
        return REDIS.admin().<Boolean>call(jedis -> jedis.exists(keys.lock(name)));
    }

    private String holder(String name, String owner) {
        return REDIS.admin().call(jedis -> jedis.hget(keys.lock(name), owner));
    }

    @Test
    @DisplayName("acquire: a free lock gives token 1, a held one the holder's remaining lease, the owner a new token")
    void acquire() {
        assertThat(acquire("a", ALICE, 1)).isEqualTo(1);
        assertThat(holder("a", ALICE)).as("the hash names the owner and the attempt").isEqualTo("1");
        long pttl = REDIS.admin().call(jedis -> jedis.pttl(keys.lock("a")));
        assertThat(pttl).as("the hash expires with the lease").isBetween(1L, 30_000L);

        long busy = acquire("a", BOB, 1);
        assertThat(busy).as("another owner is answered with the negated remaining lease").isBetween(-30_000L, -1L);
        assertThat(holder("a", BOB)).isNull();

        assertThat(acquire("a", ALICE, 2)).as("a newer attempt of the owner: a fresh acquisition").isEqualTo(2);
        assertThat(holder("a", ALICE)).isEqualTo("2");
        assertThat(REDIS.admin().<Long>call(jedis -> jedis.hlen(keys.lock("a")))).as("fields of the hash").isEqualTo(1);
        assertThat(acquire("a", ALICE, 2)).as("the same attempt repeated: its own token again").isEqualTo(2);
        assertThat(acquire("a", ALICE, 1)).as("an older attempt of the owner").isBetween(-30_000L, -1L);
        assertThat(holder("a", ALICE)).isEqualTo("2");
    }

    @Test
    @DisplayName("claims: the first waiter claims the next turn; after 8 more grants only the claimant takes the "
            + "free lock, and its grant ends the claim")
    void claimedTurn() {
        String carol = "ca401000000000000000000000000000";
        assertThat(acquire("c", ALICE, 1)).isEqualTo(1);
        assertThat(acquireOrClaim("c", BOB, 1, LEASE)).as("Bob waits: his busy answer claims the next turn")
                .asList().first().isEqualTo(1L);
        assertThat(claimant("c")).isEqualTo(BOB);
        List<?> carolsAnswer = (List<?>) acquireOrClaim("c", carol, 1, LEASE);
        assertThat(carolsAnswer.get(0)).as("Carol waits too: busy, no claim").isEqualTo(0L);
        assertThat(carolsAnswer.get(2)).as("her ticket: the counter when she was first answered busy").isEqualTo(1L);
        assertThat(acquire("c", BOB, 2)).as("a try without waiting leaves the claim alone").isNegative();
        assertThat(release("c", ALICE, "1")).isEqualTo(1);
        // the 8 grants the claim lets pass
        for (int i = 0; i < 8; i++) {
            assertThat(acquire("c", ALICE, 10 + i)).as("grant %d past the claim", i + 1).isEqualTo(2 + i);
            assertThat(release("c", ALICE, Long.toString(10 + i))).isEqualTo(1);
        }
        assertThat(acquire("c", ALICE, 20)).as("the 9th: refused, the turn is Bob's").isNegative();
        assertThat(acquireOrClaim("c", carol, 2, LEASE)).as("Carol cannot take Bob's turn or claim")
                .asList().first().isEqualTo(0L);
        assertThat(exists("c")).as("nobody holds it meanwhile").isFalse();
        assertThat(acquireOrClaim("c", BOB, 3, LEASE)).as("Bob takes his turn").isEqualTo(10L);
        assertThat(claimant("c")).as("his grant ends his claim").isNull();
        assertThat(release("c", BOB, "3")).isEqualTo(1);
        assertThat(acquire("c", ALICE, 21)).as("free for anyone again").isEqualTo(11);
    }

    /**
     * A take-over of {@code previous}'s {@code previousAttempt} by {@code owner}, as a run that will wait (it claims
     * with no ticket yet when refused).
     */
    private Object takeOver(String name, String owner, long attempt, String previous, long previousAttempt) {
        return run(RedisScripts.ACQUIRE, acquireKeys(name), owner, LEASE, Long.toString(attempt), RedisScripts.CLAIM,
                "", previous, Long.toString(previousAttempt), keys.channel(name), "");
    }

    @Test
    @DisplayName("take-over: a grant replaces the previous hold with a fresh token; a claim made during a hold, "
            + "however old its ticket, lets its grants pass, then refuses the next take-over and leaves its hold alone")
    void takeOverAndTheGrantsAfterAClaim() throws Exception {
        String carol = "ca401000000000000000000000000000";
        assertThat(acquire("h", ALICE, 1)).isEqualTo(1);
        List<?> carols = (List<?>) acquireOrClaim("h", carol, 1, LEASE);
        assertThat(carols.get(0)).as("Carol waits: she claims").isEqualTo(1L);
        assertThat(carols.get(2)).as("her ticket").isEqualTo(1L);
        assertThat(release("h", ALICE, "1")).isEqualTo(1);
        assertThat(acquireOrClaim("h", carol, 2, LEASE)).as("Carol takes her turn").isEqualTo(2L);
        assertThat(release("h", carol, "2")).isEqualTo(1);
        for (int i = 0; i < 8; i++) {
            assertThat(acquire("h", ALICE, 10 + i)).isEqualTo(3 + i);
            assertThat(release("h", ALICE, Long.toString(10 + i))).isEqualTo(1);
        }
        assertThat(acquire("h", BOB, 1)).as("Bob holds the lock").isEqualTo(11);
        // Carol waits again with the ticket of her first wait: her claim is due at once by the ticket alone
        assertThat(run(RedisScripts.ACQUIRE, acquireKeys("h"), carol, LEASE, "3", RedisScripts.CLAIM, "1"))
                .as("Carol's claim, with ticket 1, made while Bob holds token 11").asList().first().isEqualTo(1L);
        String previous = BOB;
        for (int i = 0; i < RedisScripts.GRANTS_SINCE_A_CLAIM; i++) {
            String next = String.format("da4e%028d", i);
            assertThat(takeOver("h", next, 1, previous, 1)).as("take-over %d of the provider's previous hold by its "
                    + "next run, of the %d grants after the claim", i + 1, RedisScripts.GRANTS_SINCE_A_CLAIM)
                    .isEqualTo(12L + i);
            assertThat(holder("h", next)).isEqualTo("1");
            assertThat(holder("h", previous)).as("the hold it replaced").isNull();
            assertThat(REDIS.admin().<Long>call(jedis -> jedis.hlen(keys.lock("h")))).as("fields of the hash")
                    .isEqualTo(1);
            previous = next;
        }
        try (Subscriber subscriber = new Subscriber(keys.channel("h"))) {
            assertThat(takeOver("h", ALICE, 30, previous, 1)).as("the next take-over: refused, the turn is Carol's")
                    .asList().first().isEqualTo(0L);
            assertThat(exists("h")).as("a refused take-over deletes the previous hold").isFalse();
            assertThat(subscriber.next()).as("and wakes Carol, as its release would").isEqualTo(carol);
        }
        assertThat(release("h", previous, "1")).as("nothing left to release").isZero();
        assertThat(acquire("h", ALICE, 31)).as("free, but Carol's turn").isNegative();
        assertThat(acquireOrClaim("h", carol, 4, LEASE)).as("Carol takes her turn")
                .isEqualTo(12L + RedisScripts.GRANTS_SINCE_A_CLAIM);
    }

    @Test
    @DisplayName("claims: a waiter with an older ticket takes the claim from a younger one")
    void olderTicketTakesTheClaim() {
        String carol = "ca401000000000000000000000000000";
        String dave = "da7e0000000000000000000000000000";
        assertThat(acquire("t", ALICE, 1)).isEqualTo(1);
        assertThat(acquireOrClaim("t", BOB, 1, LEASE)).asList().first().isEqualTo(1L);
        assertThat(((List<?>) acquireOrClaim("t", carol, 1, LEASE)).get(2)).as("Carol's ticket").isEqualTo(1L);
        assertThat(release("t", ALICE, "1")).isEqualTo(1);
        assertThat(acquireOrClaim("t", BOB, 2, LEASE)).as("Bob's turn").isEqualTo(2L);
        assertThat(release("t", BOB, "2")).isEqualTo(1);
        assertThat(acquire("t", ALICE, 3)).isEqualTo(3);
        assertThat(acquireOrClaim("t", dave, 1, LEASE)).as("Dave, who came later, claims the free claim")
                .asList().first().isEqualTo(1L);
        assertThat(claimWithTicket("t", carol, 2, 1)).as("Carol, waiting since ticket 1, takes it from Dave (3)")
                .asList().first().isEqualTo(1L);
        assertThat(claimant("t")).isEqualTo(carol);
        assertThat(claimWithTicket("t", dave, 2, 3)).as("Dave's next attempt no longer holds the claim")
                .asList().first().isEqualTo(0L);
        assertThat(release("t", ALICE, "3")).isEqualTo(1);
        // Carol's grants count from her ticket: 3 tokens were issued since, so 6 more pass and the 7th is hers
        for (int i = 0; i < 6; i++) {
            assertThat(acquire("t", ALICE, 10 + i)).as("grant %d past Carol's claim", i + 1).isPositive();
            assertThat(release("t", ALICE, Long.toString(10 + i))).isEqualTo(1);
        }
        assertThat(acquire("t", ALICE, 20)).as("refused: the turn is Carol's").isNegative();
        assertThat(claimWithTicket("t", carol, 3, 1)).as("Carol takes her turn").isEqualTo(10L);
    }

    @Test
    @DisplayName("claims: a free lock whose claim has had its turns goes at once to a waiter with an older ticket, who"
            + " would otherwise take the claim and wait out its life with nobody to wake it; the claim stays")
    void olderTicketTakesAFreeLockPastAClaimThatHadItsTurns() {
        String carol = "ca401000000000000000000000000000";
        String dave = "da7e0000000000000000000000000000";
        assertThat(acquire("f", ALICE, 1)).isEqualTo(1);
        List<?> carolsFirst = (List<?>) acquireOrClaim("f", carol, 1, LEASE);
        assertThat(carolsFirst.get(0)).as("Carol waits and claims").isEqualTo(1L);
        assertThat(carolsFirst.get(2)).as("Carol's ticket").isEqualTo(1L);
        assertThat(release("f", ALICE, "1")).isEqualTo(1);
        // a Redlock split vote: Carol is granted here but not by a quorum, and gives it back; her grant ended her
        // claim, her run waits on with its ticket
        assertThat(claimWithTicket("f", carol, 2, 1)).isEqualTo(2L);
        assertThat(release("f", carol, "2")).isEqualTo(1);
        assertThat(claimant("f")).isNull();
        assertThat(acquire("f", ALICE, 2)).isEqualTo(3);
        assertThat(acquireOrClaim("f", dave, 1, LEASE)).as("Dave, waiting since ticket 3, claims the free claim")
                .asList().first().isEqualTo(1L);
        assertThat(release("f", ALICE, "2")).isEqualTo(1);
        for (int i = 0; i < LockStore.GRANTS_PAST_A_CLAIM; i++) {
            assertThat(acquire("f", ALICE, 10 + i)).as("grant %d past Dave's claim", i + 1).isPositive();
            assertThat(release("f", ALICE, Long.toString(10 + i))).isEqualTo(1);
        }
        assertThat(acquire("f", ALICE, 20)).as("refused: the turn is Dave's").isNegative();

        assertThat(claimWithTicket("f", carol, 3, 1)).as("Carol, older than Dave's claim, takes the free lock")
                .isEqualTo(12L);
        assertThat(claimant("f")).as("Dave's claim stays: his turn is the next").isEqualTo(dave);
        assertThat(release("f", carol, "3")).isEqualTo(1);
        assertThat(acquire("f", ALICE, 21)).as("still refused to others").isNegative();
        assertThat(claimWithTicket("f", dave, 2, 3)).as("Dave's turn").isEqualTo(13L);
        assertThat(claimant("f")).isNull();
    }

    private Object claimWithTicket(String name, String owner, long attempt, long ticket) {
        return run(RedisScripts.ACQUIRE, acquireKeys(name), owner, LEASE, Long.toString(attempt), RedisScripts.CLAIM,
                Long.toString(ticket));
    }

    @Test
    @DisplayName("claims: the claimant's release of nothing (abandon) ends the claim; a claim lapses with its lease")
    void claimEnds() {
        assertThat(acquire("e", ALICE, 1)).isEqualTo(1);
        assertThat(acquireOrClaim("e", BOB, 1, LEASE)).isInstanceOf(List.class);
        assertThat(release("e", BOB, "1")).as("Bob gives up: he held nothing").isZero();
        assertThat(claimant("e")).isNull();
        assertThat(exists("e")).as("Alice's hold is untouched").isTrue();

        assertThat(acquireOrClaim("e", BOB, 2, "20000")).isInstanceOf(List.class);
        long claimTtl = REDIS.admin().call(jedis -> jedis.pttl(keys.claim("e")));
        assertThat(claimTtl).as("the claim expires with the claimant's lease").isBetween(1L, 20_000L);
        REDIS.admin().call(jedis -> jedis.del(keys.claim("e"))); // what its expiry does, without waiting for it
        assertThat(release("e", ALICE, "1")).isEqualTo(1);
        for (int i = 0; i < 9; i++) {
            assertThat(acquire("e", ALICE, 10 + i)).as("grant %d", i + 1).isPositive();
            assertThat(release("e", ALICE, Long.toString(10 + i))).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("claims: a claimant that gives up while the lock is free wakes the waiters its claim kept from it")
    void claimantGivingUpOnAFreeLockWakesTheWaiters() throws Exception {
        assertThat(acquire("g", ALICE, 1)).isEqualTo(1);
        assertThat(acquireOrClaim("g", BOB, 1, LEASE)).asList().first().isEqualTo(1L);
        assertThat(release("g", ALICE, "1")).isEqualTo(1);
        try (Subscriber subscriber = new Subscriber(keys.channel("g"))) {
            assertThat(release("g", BOB, "1")).as("Bob gives up: he held nothing").isZero();
            assertThat(claimant("g")).isNull();
            assertThat(subscriber.next()).isEqualTo("released");
        }
    }

    @Test
    @DisplayName("wake-ups: a release names the claimant of the next turn while a claim lives; the claimant's grant, "
            + "which ends the claim, wakes everyone")
    void releaseNamesTheClaimantAndItsGrantWakesTheOthers() throws Exception {
        String carol = "ca401000000000000000000000000000";
        try (Subscriber subscriber = new Subscriber(keys.channel("w"))) {
            assertThat(acquire("w", ALICE, 1)).isEqualTo(1);
            assertThat(release("w", ALICE, "1")).isEqualTo(1);
            assertThat(subscriber.next()).as("a release with no claim names nobody").isEqualTo(RedisScripts.RELEASED);

            assertThat(acquire("w", ALICE, 2)).isEqualTo(2);
            assertThat(claimingWithChannel("w", BOB, 1)).as("Bob waits and claims").asList().first().isEqualTo(1L);
            assertThat(claimingWithChannel("w", carol, 1)).as("Carol waits, no claim").asList().first()
                    .isEqualTo(0L);
            assertThat(release("w", ALICE, "2")).isEqualTo(1);
            assertThat(subscriber.next()).as("the release names Bob, whose claim lives").isEqualTo(BOB);

            assertThat(claimingWithChannel("w", BOB, 2)).as("Bob takes his turn").isEqualTo(3L);
            assertThat(claimant("w")).isNull();
            assertThat(subscriber.next()).as("his grant ended his claim: Carol and the others may claim now")
                    .isEqualTo(RedisScripts.RELEASED);
            assertThat(claimingWithChannel("w", carol, 2)).as("Carol claims the next turn").asList().first()
                    .isEqualTo(1L);
            assertThat(release("w", BOB, "2")).isEqualTo(1);
            assertThat(subscriber.next()).as("Bob's release names Carol").isEqualTo(carol);
            assertThat(acquire("w", ALICE, 3)).as("a grant to someone who is not the claimant").isEqualTo(4);
            assertThat(release("w", ALICE, "3")).isEqualTo(1);
            assertThat(subscriber.next()).as("publishes nothing; its release names Carol again").isEqualTo(carol);
        }
    }

    /** An attempt that claims the next turn as the store sends it: with the lock's channel, no ticket yet. */
    private Object claimingWithChannel(String name, String owner, long attempt) {
        return run(RedisScripts.ACQUIRE, acquireKeys(name), owner, LEASE, Long.toString(attempt), RedisScripts.CLAIM,
                "", "", "", keys.channel(name), "");
    }

    @Test
    @DisplayName("acquire: attempt ids are compared as numbers, not as strings (\"10\" is newer than \"9\")")
    void attemptsCompareAsNumbers() {
        assertThat(acquire("n", ALICE, 9)).isEqualTo(1);
        assertThat(acquire("n", ALICE, 10)).as("attempt 10 after 9").isEqualTo(2);
        assertThat(acquire("n", ALICE, 9)).as("attempt 9 after 10").isNegative();
        assertThat(holder("n", ALICE)).isEqualTo("10");
    }

    @Test
    @DisplayName("issue 13 defect 4 replayed: acquire B, a late attempt A of the same owner, cancel A, another "
            + "client Q, renew B: B keeps the lock throughout")
    void lateAttemptCannotStealANewerHoldOfItsOwner() {
        long attemptA = 1;
        long attemptB = 2;
        assertThat(acquire("d4", ALICE, attemptB)).as("acquire B").isEqualTo(1);
        assertThat(acquire("d4", ALICE, attemptA)).as("the late acquire A: busy, B holds it").isBetween(-30_000L, -1L);
        assertThat(holder("d4", ALICE)).as("the attempt holding the lock").isEqualTo(Long.toString(attemptB));
        assertThat(cancel("d4", ALICE, attemptA)).as("cancel A: A never held it").isZero();
        assertThat(exists("d4")).as("the lock hash after cancel A").isTrue();
        assertThat(acquire("d4", BOB, 1)).as("acquire Q while B's lease is valid").isBetween(-30_000L, -1L);
        assertThat(renew("d4", ALICE, Long.toString(attemptB))).as("renew B: positions gone").isEqualTo(List.of());
        assertThat(REDIS.admin().<String>call(jedis -> jedis.get(keys.fence("d4")))).as("tokens issued").isEqualTo("1");
    }

    @Test
    @DisplayName("release: only the attempt that holds the lock frees it; the counter is kept and keeps growing")
    void release() {
        acquire("r", ALICE, 5);
        assertThat(release("r", BOB, "5")).as("another owner").isZero();
        assertThat(release("r", ALICE, "4")).as("an earlier attempt of the owner").isZero();
        assertThat(holder("r", ALICE)).isEqualTo("5");
        assertThat(release("r", ALICE, "5")).isEqualTo(1);
        assertThat(REDIS.admin().<Boolean>call(jedis -> jedis.exists(keys.lock("r")))).as("hash after release").isFalse();
        assertThat(release("r", ALICE, "5")).as("the same release repeated").isZero();

        assertThat(acquire("r", BOB, 1)).as("token after release").isEqualTo(2);
        assertThat(release("r", BOB, "")).as("any attempt of the owner").isEqualTo(1);
        assertThat(REDIS.admin().<String>call(jedis -> jedis.get(keys.fence("r")))).as("the fencing counter stays").isEqualTo("2");
    }

    @Test
    @DisplayName("renew: extends the holds still held by their owner's attempt and names the others by position")
    void renew() {
        acquire("kept", ALICE, 1);
        acquire("other", BOB, 1);
        acquire("replaced", ALICE, 2);
        acquire("replaced", ALICE, 3);
        REDIS.admin().call(jedis -> jedis.pexpire(keys.lock("kept"), 1_000));
        acquire("bobs", BOB, 4);
        REDIS.admin().call(jedis -> jedis.pexpire(keys.lock("bobs"), 1_000));
        Object gone = run(RedisScripts.RENEW,
                List.of(keys.lock("kept"), keys.lock("other"), keys.lock("missing"), keys.lock("replaced"),
                        keys.lock("bobs")),
                "60000", ALICE, "1", ALICE, "1", ALICE, "1", ALICE, "2", BOB, "4");
        assertThat(gone).as("positions no longer held").isEqualTo(List.of(2L, 3L, 4L));
        assertThat(REDIS.admin().<Long>call(jedis -> jedis.pttl(keys.lock("kept")))).as("renewed lease").isGreaterThan(30_000L);
        assertThat(REDIS.admin().<Long>call(jedis -> jedis.pttl(keys.lock("other")))).as("another owner's lease")
                .isLessThanOrEqualTo(30_000L);
        assertThat(REDIS.admin().<Long>call(jedis -> jedis.pttl(keys.lock("bobs")))).as("renewed with its own owner")
                .isGreaterThan(30_000L);
        assertThat(renew("other", BOB, "")).as("any attempt of the owner").isEqualTo(List.of());
    }

    @Test
    @DisplayName("cancel: undoes an acquisition that ran, and makes one that runs later do nothing")
    void cancel() {
        acquire("ran", ALICE, 7);
        assertThat(cancel("ran", ALICE, 7)).as("cancel after the acquisition ran").isEqualTo(1);
        assertThat(REDIS.admin().<Boolean>call(jedis -> jedis.exists(keys.lock("ran")))).isFalse();

        assertThat(cancel("late", ALICE, 8)).as("cancel before the acquisition runs").isZero();
        long pttl = REDIS.admin().call(jedis -> jedis.pttl(keys.cancelled("late")));
        assertThat(pttl).as("the cancellation is remembered for a while only").isBetween(1L, 60_000L);
        assertThat(acquire("late", ALICE, 8)).as("the cancelled acquisition arriving late").isZero();
        assertThat(REDIS.admin().<Boolean>call(jedis -> jedis.exists(keys.lock("late")))).isFalse();
        assertThat(acquire("late", ALICE, 9)).as("a new attempt of the same owner").isEqualTo(1);

        assertThat(cancel("late", ALICE, 8)).as("cancelling an old attempt leaves the new hold").isZero();
        assertThat(holder("late", ALICE)).isEqualTo("9");
    }

    @Test
    @DisplayName("inspect: the holder, its lease left and its token in one reply; free: nil holder, last token")
    void inspect() {
        List<String> lock = List.of(keys.lock("i"), keys.fence("i"));
        assertThat(inspect(lock)).as("never locked").containsExactly(null, -2L, null);
        acquire("i", ALICE, 3);
        List<Object> held = inspect(lock);
        assertThat(held.get(0)).isEqualTo(ALICE);
        assertThat((Long) held.get(1)).as("lease left").isBetween(1L, 30_000L);
        assertThat(held.get(2)).as("the hold's token").isEqualTo("1");
        REDIS.admin().call(jedis -> jedis.persist(keys.lock("i")));
        assertThat(inspect(lock)).as("a hash without expiry").containsExactly(ALICE, -1L, "1");
        release("i", ALICE, "3");
        assertThat(inspect(lock)).as("released").containsExactly(null, -2L, "1");
    }

    @Test
    @DisplayName("force-release: deletes whoever's hold, publishes a wake-up either way, answers whether it held")
    void forceRelease() throws Exception {
        acquire("f", BOB, 1);
        try (Subscriber subscriber = new Subscriber(keys.channel("f"))) {
            assertThat(run(RedisScripts.FORCE_RELEASE, List.of(keys.lock("f")), keys.channel("f"))).isEqualTo(1L);
            assertThat(subscriber.next()).isEqualTo("released");
            assertThat(REDIS.admin().<Boolean>call(jedis -> jedis.exists(keys.lock("f")))).isFalse();
            assertThat(run(RedisScripts.FORCE_RELEASE, List.of(keys.lock("f")), keys.channel("f"))).isEqualTo(0L);
            assertThat(subscriber.next()).isEqualTo("released");
        }
        assertThat(REDIS.admin().<String>call(jedis -> jedis.get(keys.fence("f")))).as("the fencing counter stays")
                .isEqualTo("1");
        assertThat(release("f", BOB, "1")).as("the holder's release afterwards").isZero();
    }

    @SuppressWarnings("unchecked")
    private static List<Object> inspect(List<String> keyList) {
        return (List<Object>) run(RedisScripts.INSPECT, keyList);
    }

    @Test
    @DisplayName("told 'sharded', release, cancel and force-release publish with SPUBLISH instead of PUBLISH")
    void shardedWakeUps() throws Exception {
        String channel = keys.channel("s");
        try (Subscriber plain = new Subscriber(channel); Subscriber sharded = Subscriber.sharded(channel)) {
            acquire("s", ALICE, 1);
            assertThat(run(RedisScripts.RELEASE, List.of(keys.lock("s")), ALICE, "1", channel, RedisScripts.SHARDED))
                    .isEqualTo(1L);
            assertThat(sharded.next()).as("after release").isEqualTo("released");
            acquire("s", ALICE, 2);
            assertThat(run(RedisScripts.CANCEL, List.of(keys.lock("s"), keys.cancelled("s")), ALICE, "2", "60000",
                    channel, RedisScripts.SHARDED)).isEqualTo(1L);
            assertThat(sharded.next()).as("after cancel").isEqualTo("released");
            assertThat(run(RedisScripts.FORCE_RELEASE, List.of(keys.lock("s")), channel, RedisScripts.SHARDED))
                    .isEqualTo(0L);
            assertThat(sharded.next()).as("after force-release").isEqualTo("released");
            // messages on one connection arrive in order: had a script used PUBLISH, its message came first
            REDIS.admin().call(jedis -> jedis.publish(channel, "marker"));
            assertThat(plain.next()).as("first message on the plain channel").isEqualTo("marker");
        }
    }

    /** Receives the messages of one channel (plain or sharded pub/sub) on a connection of its own. */
    private static final class Subscriber implements AutoCloseable {
        private final java.util.concurrent.BlockingQueue<String> messages =
                new java.util.concurrent.LinkedBlockingQueue<>();
        private final redis.clients.jedis.JedisPubSub pubSub = new redis.clients.jedis.JedisPubSub() {
            @Override
            public void onMessage(String channel, String message) {
                messages.add(message);
            }
        };
        private final redis.clients.jedis.JedisShardedPubSub shardedPubSub =
                new redis.clients.jedis.JedisShardedPubSub() {
                    @Override
                    public void onSMessage(String channel, String message) {
                        messages.add(message);
                    }
                };
        private final boolean isSharded;
        private final Thread thread;

        Subscriber(String channel) {
            this(channel, false);
        }

        static Subscriber sharded(String channel) {
            return new Subscriber(channel, true);
        }

        private Subscriber(String channel, boolean isSharded) {
            this.isSharded = isSharded;
            thread = new Thread(() -> REDIS.admin().call(jedis -> {
                if (isSharded) {
                    shardedPubSub.proceed(jedis.getConnection(), channel);
                } else {
                    jedis.subscribe(pubSub, channel);
                }
                return null;
            }), "test-subscriber");
            thread.setDaemon(true);
            thread.start();
            Await.until("subscribed to " + channel, java.time.Duration.ofSeconds(10),
                    () -> (isSharded ? REDIS.admin().shardSubscribers(channel) : REDIS.admin().subscribers(channel)) == 1);
        }

        String next() throws InterruptedException {
            return messages.poll(10, java.util.concurrent.TimeUnit.SECONDS);
        }

        @Override
        public void close() throws InterruptedException {
            if (isSharded) {
                shardedPubSub.sunsubscribe();
            } else {
                pubSub.unsubscribe();
            }
            thread.join(10_000);
        }
    }

    @Test
    @DisplayName("the SHA computed in Java is the one Redis caches the script under")
    void shaMatchesServer() {
        for (Script script : List.of(RedisScripts.ACQUIRE, RedisScripts.RELEASE, RedisScripts.RENEW,
                RedisScripts.CANCEL, RedisScripts.INSPECT, RedisScripts.FORCE_RELEASE)) {
            assertThat(REDIS.admin().<String>call(jedis -> jedis.scriptLoad(script.text()))).as(script.name())
                    .isEqualTo(script.sha());
        }
    }
}
