package io.locksmith.samples.stock;

import static org.assertj.core.api.Assertions.assertThat;

import io.locksmith.tests.servers.DatabaseServer;
import io.locksmith.tests.servers.RedisServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The sample as scripts/run-stock-sample runs it, once, in the build: the real application on a random port,
 * against a Redis server of the test's own and the machine's PostgreSQL; orders from concurrent clients sell every
 * item exactly once, and the lock shows in /actuator/prometheus, /actuator/locksmith and /actuator/health.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"sample.instance=test", "sample.work-micros=200"})
class StockSampleTest {

    private static final RedisServer REDIS = RedisServer.start();
    private static final DatabaseServer POSTGRES = DatabaseServer.startPostgres();

    private final HttpClient http = HttpClient.newHttpClient();

    @Value("${local.server.port}")
    private int port;

    @DynamicPropertySource
    static void servers(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.host", REDIS::host);
        registry.add("spring.data.redis.port", REDIS::port);
        registry.add("spring.datasource.url", POSTGRES::jdbcUrl);
        registry.add("spring.datasource.username", POSTGRES::user);
        registry.add("spring.datasource.password", POSTGRES::password);
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void concurrentOrdersSellEveryItemOnceAndTheLockIsObservable() throws Exception {
        post("/stock/sku-test?quantity=40");
        ExecutorService clients = Executors.newFixedThreadPool(4);
        List<Future<Integer>> sold = new ArrayList<>();
        for (int c = 0; c < 4; c++) {
            sold.add(clients.submit(() -> {
                int n = 0;
                while (post("/stock/sku-test/orders").contains("\"sold\":true")) {
                    n++;
                }
                return n;
            }));
        }
        int total = 0;
        for (Future<Integer> f : sold) {
            total += f.get();
        }
        clients.shutdown();
        assertThat(total).as("orders answered 'sold'").isEqualTo(40);
        assertThat(get("/stock/sku-test")).contains("\"left\":0")
                .contains("{\"instance\":\"test\",\"sold\":40,\"oversold\":0}");

        // every order took the lock once: 40 that sold and one sold-out answer per client
        assertThat(get("/actuator/prometheus"))
                .containsPattern("locksmith_acquisitions_seconds_count\\{[^}]*outcome=\"acquired\"[^}]*} 44(\\.0)?\n")
                .containsPattern("locksmith_locks_held\\{[^}]*backend=\"redis\"[^}]*} 0(\\.0)?\n");
        assertThat(get("/actuator/locksmith")).contains("\"holds\":[]").contains("\"backend\":\"redis://");
        Matcher health = Pattern.compile("\"locksmith\":\\{(\"details\":\\{\"lockProvider\":\\{[^}]*}},\"status\":\"[A-Z]+\""
                + "|\"status\":\"[A-Z]+\",\"details\":\\{\"lockProvider\":\\{[^}]*}})}").matcher(get("/actuator/health"));
        assertThat(health.find()).as("the locksmith health component").isTrue();
        assertThat(health.group()).doesNotContain("DOWN").contains("\"status\":\"UP\"")
                .contains("\"backend\":\"redis://");
    }

    private String post(String path) throws Exception {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .POST(HttpRequest.BodyPublishers.noBody()).build());
    }

    private String get(String path) throws Exception {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).GET().build());
    }

    private String send(HttpRequest request) throws Exception {
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(request.uri() + ": " + response.body()).isEqualTo(200);
        return response.body();
    }
}
