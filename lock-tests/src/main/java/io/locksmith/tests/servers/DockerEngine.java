package io.locksmith.tests.servers;

import java.util.Optional;

/**
 * Whether fixtures can fall back to Testcontainers: the library is on the classpath and a Docker engine answers.
 *
 * <p>This class names no Testcontainers type, so it loads without the optional dependency.
 */
final class DockerEngine {

    /** Which network containers join: {@code bridge} (Docker's default, ports published) or {@code host}. */
    static final Settings.Key NETWORK_SETTING = new Settings.Key("locksmith.docker.network",
            "LOCKSMITH_DOCKER_NETWORK");

    private static volatile Optional<String> unreachable;

    private DockerEngine() {
    }

    /** Returns whether Testcontainers can start containers in this JVM; asks the engine once per JVM. */
    static boolean reachable() {
        return unreachable().isEmpty();
    }

    /**
     * Returns normally if Testcontainers can start containers in this JVM.
     *
     * @throws ServerUnavailableException saying why not, for {@code what}
     */
    static void require(String what) {
        Optional<String> why = unreachable();
        if (why.isPresent()) {
            throw new ServerUnavailableException(what + " needs Testcontainers and a Docker engine: " + why.get()
                    + " (scripts/test starts one: dockerd --bridge=none --iptables=false, with "
                    + NETWORK_SETTING.describe("host") + ")");
        }
    }

    private static Optional<String> unreachable() {
        Optional<String> known = unreachable;
        if (known == null) {
            known = OptionalDependency.TESTCONTAINERS.present()
                    ? DockerServer.engineUnreachable()
                    : Optional.of(OptionalDependency.TESTCONTAINERS.coordinates() + " is not on the test classpath");
            unreachable = known;
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
