package io.locksmith.tests.servers;

/**
 * An optional dependency of lock-tests that some fixture path needs.
 *
 * <p>Fixtures ask {@link #present()} before touching any class of the dependency, so a missing jar
 * means "take another path", never {@link NoClassDefFoundError}.
 */
enum OptionalDependency {
    TESTCONTAINERS("org.testcontainers.DockerClientFactory", "org.testcontainers:testcontainers"),
    CURATOR_TEST("org.apache.curator.test.TestingServer", "org.apache.curator:curator-test"),
    ZOOKEEPER_SERVER(ZooKeeperProcess.MAIN_CLASS, "org.apache.zookeeper:zookeeper"),
    MARIADB_DRIVER("org.mariadb.jdbc.Driver", "org.mariadb.jdbc:mariadb-java-client"),
    MYSQL_DRIVER("com.mysql.cj.jdbc.Driver", "com.mysql:mysql-connector-j"),
    POSTGRES_DRIVER("org.postgresql.Driver", "org.postgresql:postgresql");

    private final String probeClass;
    private final String coordinates;

    OptionalDependency(String probeClass, String coordinates) {
        this.probeClass = probeClass;
        this.coordinates = coordinates;
    }

    /** Returns whether the dependency is on the classpath. */
    boolean present() {
        try {
            // initialize=false: a driver or library must not start doing things just because we looked
            Class.forName(probeClass, false, OptionalDependency.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Returns the Maven coordinates to add, {@code groupId:artifactId}. */
    String coordinates() {
        return coordinates;
    }
}
