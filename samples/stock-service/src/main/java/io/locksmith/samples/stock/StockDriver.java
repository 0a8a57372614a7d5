package io.locksmith.samples.stock;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Drives running instances of the stock service, as clients behind a load balancer would: restocks through the
 * first, then sends orders to every instance from several client threads each until the stock is gone, and prints
 * what each instance sold and oversold. Exits with status 1 if anything was oversold through the lock.
 *
 * <p>Arguments: {@code SKU STOCK CLIENTS_PER_INSTANCE LOCKED(true|false) URL...}
 */
public final class StockDriver {

    private static final Pattern SOLD = Pattern.compile("\"sold\":(true|false)");
    private static final Pattern ROW = Pattern.compile(
            "\\{\"instance\":\"([^\"]+)\",\"sold\":(\\d+),\"oversold\":(\\d+)}");
    private static final Pattern LEFT = Pattern.compile("\"left\":(\\d+)");

    private StockDriver() {
    }

    public static void main(String[] args) throws Exception {
        String sku = args[0];
        int stock = Integer.parseInt(args[1]);
        int clients = Integer.parseInt(args[2]);
        boolean locked = Boolean.parseBoolean(args[3]);
        List<String> urls = List.of(args).subList(4, args.length);
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        send(http, HttpRequest.newBuilder(URI.create(urls.get(0) + "/stock/" + sku + "?quantity=" + stock))
                .POST(HttpRequest.BodyPublishers.noBody()).build());
        ExecutorService pool = Executors.newFixedThreadPool(clients * urls.size());
        List<Future<Integer>> orders = new ArrayList<>();
        long start = System.nanoTime();
        for (String url : urls) {
            HttpRequest order = HttpRequest.newBuilder(URI.create(url + "/stock/" + sku + "/orders?locked=" + locked))
                    .POST(HttpRequest.BodyPublishers.noBody()).build();
            for (int c = 0; c < clients; c++) {
                orders.add(pool.submit(() -> {
                    int placed = 0;
                    while (true) {
                        Matcher sold = SOLD.matcher(send(http, order));
                        if (!sold.find() || !sold.group(1).equals("true")) {
                            return placed; // sold out
                        }
                        placed++;
                    }
                }));
            }
        }
        int placed = 0;
        for (Future<Integer> f : orders) {
            placed += f.get();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        pool.shutdown();
        String report = send(http, HttpRequest.newBuilder(URI.create(urls.get(0) + "/stock/" + sku)).GET().build());

        System.out.printf(Locale.ROOT, "stock sample: %d items of '%s', %d instances x %d clients, %s%n", stock, sku,
                urls.size(), clients, locked ? "@Locked(name = \"'stock:' + #sku\") on Redis" : "WITHOUT the lock");
        System.out.printf(Locale.ROOT, "%-10s %6s %9s%n", "instance", "sold", "oversold");
        long sold = 0;
        long oversold = 0;
        Matcher row = ROW.matcher(report);
        while (row.find()) {
            System.out.printf(Locale.ROOT, "%-10s %6s %9s%n", row.group(1), row.group(2), row.group(3));
            sold += Long.parseLong(row.group(2));
            oversold += Long.parseLong(row.group(3));
        }
        System.out.printf(Locale.ROOT, "%-10s %6d %9d%n", "total", sold, oversold);
        Matcher left = LEFT.matcher(report);
        System.out.printf(Locale.ROOT, "stock left %s, %d orders answered 'sold' in %.2f s (%.0f orders/s)%n",
                left.find() ? left.group(1) : "?", placed, seconds, placed / seconds);
        if (locked && (oversold > 0 || sold != stock)) {
            System.out.println("FAILED: with the lock every item must be sold exactly once");
            System.exit(1);
        }
    }

    private static String send(HttpClient http, HttpRequest request) throws Exception {
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException(request.method() + " " + request.uri() + " answered "
                    + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }
}
