package io.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.tests.servers.RedisServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@code locksmith demo --backend redlock://…} over three independent redis-server processes. */
class LocksmithRedlockCommandTest {

    private static List<RedisServer> servers;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @BeforeAll
    static void startServers() {
        servers = RedisServer.startIndependent(3);
    }

    @AfterAll
    static void stopServers() {
        if (servers != null) {
            servers.forEach(RedisServer::close);
        }
    }

    @Test
    void demoOverThreeMastersSellsEveryItemOnce() {
        String backend = "redlock://" + servers.stream().map(s -> s.host() + ":" + s.port())
                .collect(Collectors.joining(","));
        int status = Locksmith.run(new String[] {"demo", "--backend", backend, "--stock", "200"},
                new PrintWriter(out, true), new PrintWriter(err, true));
        assertThat(status).as(err.toString()).isZero();
        assertThat(field("items sold")).isEqualTo(200);
        assertThat(field("oversold")).isZero();
        assertThat(out.toString()).contains("backend          redlock://");
    }

    private long field(String label) {
        Matcher m = Pattern.compile("(?m)^" + label + "\\s+(\\d+)").matcher(out.toString());
        assertThat(m.find()).as("'%s' in%n%s", label, out).isTrue();
        return Long.parseLong(m.group(1));
    }
}
