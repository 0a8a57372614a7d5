package io.locksmith.zookeeper;

import io.locksmith.LockBackendException;
import io.locksmith.LockOptions;
import io.locksmith.LockProvider;
import io.locksmith.spi.LockStores;
import java.nio.charset.StandardCharsets;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.RetryPolicy;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.curator.utils.ZookeeperFactory;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

/**
 * Opens {@link LockProvider}s on ZooKeeper over a Curator client the application already has.
 *
 * <pre>{@code
 * CuratorFramework curator = CuratorFrameworkFactory.newClient("zk1:2181,zk2:2181,zk3:2181",
 *         new ExponentialBackoffRetry(100, 3));
 * curator.start();
 * LockProvider locks = ZooKeeperLockProviders.builder(curator)
 *         .options(LockOptions.builder().namespace("orders").build())
 *         .build();
 * }</pre>
 *
 * <p>Each lock is a container node {@code /<namespace>/<encoded name>} (inside the client's own namespace, if it
 * has one) holding one ephemeral-sequential node per provider that holds or waits for it; the lowest holds the
 * lock. The fencing token is the creation zxid of the holder's node. A node lives until its holder deletes it or
 * the client's session ends, so the session timeout is how long the lock of a crashed process stays taken. The
 * provider waits for each call at most {@link LockOptions#operationTimeout()}, whatever the client's own
 * timeouts. Give the client a count-based retry policy ({@code ExponentialBackoffRetry},
 * {@code BoundedExponentialBackoffRetry}, {@code RetryNTimes}), not {@code RetryUntilElapsed}: Curator restarts the
 * background clean-up of a protected create whose retries ran out, which an elapsed-time policy turns into an
 * endless, immediate loop. The provider does not close the client; close the provider first, then the client.
 *
 * <p>To let Locksmith create and own the client, open
 * {@code zookeeper://[user:password@]host1:2181,host2:2181[/chroot]} with {@link LockProvider#open(String,
 * LockOptions)} instead: its session timeout is three times {@link LockOptions#operationTimeout()} and its
 * connection timeout one operation timeout, unless the URI's {@code sessionTimeoutMs} and
 * {@code connectionTimeoutMs} parameters say otherwise.
 */
public final class ZooKeeperLockProviders {

    /** How many operation timeouts the session timeout of an owned client lasts. */
    static final int SESSION_TIMEOUTS_PER_OPERATION_TIMEOUT = 3;

    private ZooKeeperLockProviders() {
    }

    /**
     * What a provider does with its holds while the connection to ZooKeeper is suspended (Curator's
     * {@code SUSPENDED}: no answer from the ensemble, session not yet known to be expired). A {@code LOST} session
     * always marks every hold lost, whatever the policy.
     */
    public enum SuspendedPolicy {
        /**
         * Every hold is lost at once. The safest choice: no hold outlives a connection problem, at the price of
         * losing the holds on every short network hiccup.
         */
        LOST,
        /**
         * Holds are kept while the connection is suspended and lost once the negotiated session timeout has
         * passed without reconnecting (the default). The server may expire the session somewhat earlier than
         * the client notices: the client suspends only after two thirds of the session timeout without an
         * answer from the server, so for up to two thirds of the session timeout another client may already
         * hold the lock. Fencing tokens cover that window.
         */
        LOST_AFTER_SESSION_TIMEOUT
    }

    /** A builder of a provider over {@code client}, a started client the provider uses but does not close. */
    public static Builder builder(CuratorFramework client) {
        return new Builder(Objects.requireNonNull(client, "client"));
    }

    /**
     * Opens a provider that owns a client built from {@code uri}: the URI form of the backend.
     *
     * @param zookeeperFactory how the client creates its ZooKeeper handles; null for Curator's default
     */
    static LockProvider open(ZooKeeperUri uri, LockOptions options, ZookeeperFactory zookeeperFactory) {
        long operationMs = Math.max(1, options.operationTimeout().toMillis());
        int sessionMs = uri.sessionTimeoutMs().orElse(
                (int) Math.min(Integer.MAX_VALUE, operationMs * SESSION_TIMEOUTS_PER_OPERATION_TIMEOUT));
        int connectionMs = uri.connectionTimeoutMs().orElse((int) Math.min(Integer.MAX_VALUE, operationMs));
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(uri.hosts())
                .namespace(uri.chroot())
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(connectionMs)
                // Count-based, not elapsed-time-based: Curator restarts the background clean-up of a protected
                // create whose retries ran out, and an elapsed-time policy would refuse it at once, forever.
                .retryPolicy(retryPolicy(operationMs));
        if (uri.user() != null) {
            builder.authorization("digest", (uri.user() + ":" + uri.password()).getBytes(StandardCharsets.UTF_8));
        }
        if (zookeeperFactory != null) {
            builder.zookeeperFactory(zookeeperFactory);
        }
        String namespace = options.namespace();
        checkNamespace(uri.chroot(), namespace);
        CuratorFramework client = builder.build();
        client.start();
        boolean connected = false;
        try {
            connected = client.blockUntilConnected((int) Math.min(Integer.MAX_VALUE, operationMs),
                    TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new LockBackendException(uri.address() + " - interrupted while connecting", e);
        }
        if (!connected) {
            client.close();
            throw new LockBackendException(uri.address() + " - could not connect to ZooKeeper within the operation "
                    + "timeout of " + operationMs + " ms");
        }
        List<ACL> acl = uri.user() == null ? null : digestAcl(uri.user(), uri.password());
        SuspendedPolicy policy = uri.suspendedPolicy() == null ? SuspendedPolicy.LOST_AFTER_SESSION_TIMEOUT
                : uri.suspendedPolicy();
        ZooKeeperLockStore store = new ZooKeeperLockStore(client, true, uri.address(), namespace, acl, policy,
                options.operationTimeout());
        return LockStores.newProvider(store, options);
    }

    /** Builds a {@link LockProvider} over an application's {@link CuratorFramework}. */
    public static final class Builder {
        private final CuratorFramework client;
        private LockOptions options = LockOptions.defaults();
        private SuspendedPolicy suspendedPolicy = SuspendedPolicy.LOST_AFTER_SESSION_TIMEOUT;
        private List<ACL> acl;

        private Builder(CuratorFramework client) {
            this.client = client;
        }

        /** The provider's options; default {@link LockOptions#defaults()}. */
        public Builder options(LockOptions options) {
            this.options = Objects.requireNonNull(options, "options");
            return this;
        }

        /** What happens to holds while the connection is suspended; default {@link SuspendedPolicy#LOST_AFTER_SESSION_TIMEOUT}. */
        public Builder suspendedPolicy(SuspendedPolicy policy) {
            this.suspendedPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * Protects the lock nodes and the parents the provider creates with a digest ACL: {@code user} may do
         * anything, everybody else may only read, so a client without these credentials can neither delete nor
         * change them. The client must be authenticated with the same credentials, as in
         * {@code CuratorFrameworkFactory.builder().authorization("digest", "user:password".getBytes(UTF_8))};
         * otherwise every call fails with a NOAUTH {@link LockBackendException}.
         *
         * @throws IllegalArgumentException if {@code user} is empty or contains ':'
         */
        public Builder digestAcl(String user, String password) {
            Objects.requireNonNull(user, "user");
            Objects.requireNonNull(password, "password");
            if (user.isEmpty() || user.indexOf(':') >= 0) {
                throw new IllegalArgumentException("digest user must be non-empty and free of ':', got '" + user + "'");
            }
            this.acl = ZooKeeperLockProviders.digestAcl(user, password);
            return this;
        }

        /**
         * Builds the provider.
         *
         * @throws IllegalArgumentException if the client is not started, or the namespace would be ZooKeeper's
         *     reserved {@code /zookeeper}
         */
        public LockProvider build() {
            if (client.getState() != CuratorFrameworkState.STARTED) {
                throw new IllegalArgumentException("the CuratorFramework must be started (client.start()) before "
                        + "building a lock provider on it; its state is " + client.getState());
            }
            String chroot = client.getNamespace();
            checkNamespace(chroot, options.namespace());
            String address = "zookeeper://" + client.getZookeeperClient().getCurrentConnectionString()
                    + (chroot == null || chroot.isEmpty() ? "" : "/" + chroot);
            ZooKeeperLockStore store = new ZooKeeperLockStore(client, false, address, options.namespace(), acl,
                    suspendedPolicy, options.operationTimeout());
            return LockStores.newProvider(store, options);
        }
    }

    /** Retries from 50 ms up to one operation timeout (at most 1 s) apart; the provider stops waiting sooner. */
    static RetryPolicy retryPolicy(long operationMs) {
        return new BoundedExponentialBackoffRetry(50, (int) Math.max(50, Math.min(1000, operationMs)), 10);
    }

    private static void checkNamespace(String chroot, String namespace) {
        if ((chroot == null || chroot.isEmpty()) && namespace.equals("zookeeper")) {
            throw new IllegalArgumentException("namespace 'zookeeper' would put the locks in /zookeeper, which "
                    + "ZooKeeper reserves; choose another namespace or give the client a chroot");
        }
    }

    /** All rights for the digest user, read for everybody (so that anyone may see who holds what). */
    static List<ACL> digestAcl(String user, String password) {
        String digest;
        try {
            digest = DigestAuthenticationProvider.generateDigest(user + ":" + password);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM cannot compute ZooKeeper digest credentials", e);
        }
        return List.of(new ACL(ZooDefs.Perms.ALL, new Id("digest", digest)),
                new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE));
    }
}
