package io.locksmith.redis;

import io.locksmith.tests.servers.RedisServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.HostAndPort;

/**
 * A Redis Cluster of three masters (no replicas) for tests: three {@code redis-server --cluster-enabled yes}
 * processes from the server fixture, joined with {@code redis-cli --cluster create}.
 */
final class TestCluster implements AutoCloseable {

    final List<RedisServer> nodes;
    final List<RedisAdmin> admins = new ArrayList<>();

    private TestCluster(List<RedisServer> nodes) {
        this.nodes = nodes;
        nodes.forEach(node -> admins.add(new RedisAdmin(node)));
    }

    static TestCluster start() throws IOException, InterruptedException {
        List<RedisServer> nodes = RedisServer.startIndependent(3, "--cluster-enabled", "yes",
                "--cluster-node-timeout", "5000");
        TestCluster cluster = new TestCluster(nodes);
        try {
            cluster.create();
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    private void create() throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        nodes.forEach(node -> command.add(node.host() + ":" + node.port()));
        command.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + output);
        }
        Await.until("every node of the cluster reports cluster_state:ok with 3 masters", Duration.ofSeconds(30),
                () -> admins.stream().allMatch(admin -> {
                    String info = admin.call(jedis -> jedis.clusterInfo());
                    return info.contains("cluster_state:ok") && info.contains("cluster_size:3")
                            && info.contains("cluster_slots_assigned:16384");
                }));
    }

    Set<HostAndPort> addresses() {
        Set<HostAndPort> addresses = new LinkedHashSet<>();
        nodes.forEach(node -> addresses.add(new HostAndPort(node.host(), node.port())));
        return addresses;
    }

    @Override
    public void close() {
        nodes.forEach(RedisServer::close);
    }

    @Override
    public String toString() {
        return "3-master cluster " + addresses();
    }
}
