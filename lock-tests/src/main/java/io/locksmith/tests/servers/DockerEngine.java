package io.locksmith.tests.servers;

/**
 * Whether fixtures can fall back to Testcontainers: the library is on the classpath and a Docker engine answers.
 *
 * <p>This class names no Testcontainers type, so it loads without the optional dependency.
 */
final class DockerEngine {

    private static volatile Boolean reachable;

    private DockerEngine() {
    }

    /** Returns whether Testcontainers can start containers in this JVM; asks the engine once per JVM. */
    static boolean reachable() {
        Boolean known = reachable;
        if (known == null) {
            known = OptionalDependency.TESTCONTAINERS.present() && DockerServer.engineReachable();
            reachable = known;
        }
        return known;
    }

    /** Returns the advice that ends every "no server" message: how to get the Testcontainers path. */
    static String howToGet() {
        return OptionalDependency.TESTCONTAINERS.present()
                ? "or start a Docker engine for Testcontainers"
                : "or add " + OptionalDependency.TESTCONTAINERS.coordinates()
                        + " to the test classpath and start a Docker engine";
    }
}
