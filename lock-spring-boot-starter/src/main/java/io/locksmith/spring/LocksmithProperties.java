package io.locksmith.spring;

import io.locksmith.LockOptions;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.core.Ordered;

/** The {@code locksmith.*} properties: which store, the lock options, and how {@link Locked} is applied. */
@ConfigurationProperties("locksmith")
public class LocksmithProperties {

    /** The stores a provider can be built from without a URI. */
    public enum Store {
        /** From spring.data.redis.* (needs lock-redis). */
        REDIS,
        /** From the application's CuratorFramework bean (needs lock-zookeeper). */
        ZOOKEEPER,
        /** From the application's DataSource (needs lock-jdbc). */
        JDBC
    }

    /** Whether the starter builds a LockProvider and applies @Locked. */
    private boolean enabled = true;
    /**
     * The store's URI (redis://, rediss://, redlock://, zookeeper://, jdbc:…, local://); when set, the provider is
     * opened from it and owns its connections. When not set, the provider is built from what the application
     * has: see store.
     */
    private String uri;
    /**
     * Which of the application's connections to build the provider from when uri is not set. When not set: Redis
     * if spring.data.redis.host or url is set, else ZooKeeper if there is a CuratorFramework bean, else JDBC if
     * there is one DataSource.
     */
    private Store store;
    /** How long a hold lasts in the store unless renewed. */
    private Duration lease = LockOptions.DEFAULT_LEASE_TIME;
    /** How often held leases are renewed; a third of the lease if not set. */
    private Duration renewInterval;
    /** The key prefix that keeps this application's locks apart from others' in a shared store. */
    private String namespace = LockOptions.DEFAULT_NAMESPACE;
    /** The longest one round trip to the store may take. */
    private Duration operationTimeout = LockOptions.DEFAULT_OPERATION_TIMEOUT;
    /** The first delay between attempts of backends that poll. */
    private Duration minBackoff = LockOptions.DEFAULT_MIN_BACKOFF;
    /** The longest delay between attempts of backends that poll. */
    private Duration maxBackoff = LockOptions.DEFAULT_MAX_BACKOFF;
    /**
     * The order of the @Locked advice among the others on a bean. Lower is outer; the default is just outside
     * Spring's @Transactional advice (Ordered.LOWEST_PRECEDENCE), so that the lock is released after the commit.
     */
    private int advisorOrder = Ordered.LOWEST_PRECEDENCE - 100;
    private final Jdbc jdbc = new Jdbc();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public String getUri() {
        return uri;
    }

    public void setUri(String uri) {
        this.uri = uri;
    }

    public Store getStore() {
        return store;
    }

    public void setStore(Store store) {
        this.store = store;
    }

    public Duration getLease() {
        return lease;
    }

    public void setLease(Duration lease) {
        this.lease = lease;
    }

    public Duration getRenewInterval() {
        return renewInterval;
    }

    public void setRenewInterval(Duration renewInterval) {
        this.renewInterval = renewInterval;
    }

    public String getNamespace() {
        return namespace;
    }

    public void setNamespace(String namespace) {
        this.namespace = namespace;
    }

    public Duration getOperationTimeout() {
        return operationTimeout;
    }

    public void setOperationTimeout(Duration operationTimeout) {
        this.operationTimeout = operationTimeout;
    }

    public Duration getMinBackoff() {
        return minBackoff;
    }

    public void setMinBackoff(Duration minBackoff) {
        this.minBackoff = minBackoff;
    }

    public Duration getMaxBackoff() {
        return maxBackoff;
    }

    public void setMaxBackoff(Duration maxBackoff) {
        this.maxBackoff = maxBackoff;
    }

    public int getAdvisorOrder() {
        return advisorOrder;
    }

    public void setAdvisorOrder(int advisorOrder) {
        this.advisorOrder = advisorOrder;
    }

    public Jdbc getJdbc() {
        return jdbc;
    }

    /** The lock options these properties give, before any {@link LockOptionsCustomizer}. */
    public LockOptions.Builder toOptions() {
        LockOptions.Builder builder = LockOptions.builder()
                .leaseTime(lease)
                .namespace(namespace)
                .operationTimeout(operationTimeout)
                .retryBackoff(minBackoff, maxBackoff);
        if (renewInterval != null) {
            builder.renewInterval(renewInterval);
        }
        return builder;
    }

    /** How a provider built from the application's DataSource keeps holds; lock-jdbc's modes. */
    public enum Mode {
        /** A row per lock with owner, expiry and fencing token; no connection kept while a lock is held. */
        LEASE,
        /** A row lock in a transaction kept open on a connection of its own while a lock is held. */
        SESSION
    }

    /** Settings of a provider built from the application's DataSource. */
    public static class Jdbc {
        /** How holds are kept: LEASE (a row per lock with a lease) or SESSION (SELECT … FOR UPDATE). */
        private Mode mode = Mode.LEASE;
        /** The lock table. */
        private String table = "locksmith_locks";
        /** Whether to create the table if it is missing. */
        private boolean createTable = true;

        public Mode getMode() {
            return mode;
        }

        public void setMode(Mode mode) {
            this.mode = mode;
        }

        public String getTable() {
            return table;
        }

        public void setTable(String table) {
            this.table = table;
        }

        public boolean isCreateTable() {
            return createTable;
        }

        public void setCreateTable(boolean createTable) {
            this.createTable = createTable;
        }
    }
}
