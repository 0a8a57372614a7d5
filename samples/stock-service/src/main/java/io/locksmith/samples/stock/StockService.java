package io.locksmith.samples.stock;

import io.locksmith.spring.FencingToken;
import io.locksmith.spring.Locked;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Sells items from a stock kept in PostgreSQL, the way a naive service does: read the quantity, do some work,
 * write the quantity back. Two instances doing this at once sell the same item twice; {@link Locked} on the
 * deduction serializes them across instances, and the lock is released only after the transaction committed.
 * The fencing token guards the write as well: the row keeps the newest token it saw and refuses older ones.
 */
@Service
public class StockService implements ApplicationRunner {

    private final JdbcTemplate jdbc;
    private final String instance;
    private final long workMicros;

    public StockService(JdbcTemplate jdbc, @Value("${sample.instance:${server.port}}") String instance,
            @Value("${sample.work-micros:500}") long workMicros) {
        this.jdbc = jdbc;
        this.instance = instance;
        this.workMicros = workMicros;
    }

    @Override
    public void run(ApplicationArguments args) {
        jdbc.execute("create table if not exists sample_stock (sku varchar(64) primary key, quantity int not null,"
                + " token bigint not null)");
        jdbc.execute("create table if not exists sample_sales (id bigserial primary key, sku varchar(64) not null,"
                + " item int not null, instance varchar(64) not null, token bigint not null)");
    }

    /** One order of one item, under the item's lock. */
    @Locked(name = "'stock:' + #sku", waitFor = "30s")
    @Transactional
    public boolean deduct(String sku, @FencingToken long token) {
        return sell(sku, token);
    }

    /** The same order without the lock, to show what the lock prevents. */
    @Transactional
    public boolean deductUnlocked(String sku) {
        return sell(sku, 0);
    }

    private boolean sell(String sku, long token) {
        List<Integer> left = jdbc.queryForList("select quantity from sample_stock where sku = ?", Integer.class, sku);
        if (left.isEmpty() || left.get(0) <= 0) {
            return false;
        }
        int item = left.get(0);
        work();
        int written = token == 0
                ? jdbc.update("update sample_stock set quantity = ? where sku = ?", item - 1, sku)
                : jdbc.update("update sample_stock set quantity = ?, token = ? where sku = ? and token < ?", item - 1,
                        token, sku, token);
        if (written == 0) {
            return false; // a newer holder's write is already there: this stale one is refused
        }
        jdbc.update("insert into sample_sales (sku, item, instance, token) values (?, ?, ?, ?)", sku, item, instance,
                token);
        return true;
    }

    /** Puts {@code quantity} items of {@code sku} on sale, forgetting earlier sales. */
    @Transactional
    public void restock(String sku, int quantity) {
        jdbc.update("delete from sample_sales where sku = ?", sku);
        jdbc.update("delete from sample_stock where sku = ?", sku);
        jdbc.update("insert into sample_stock (sku, quantity, token) values (?, ?, 0)", sku, quantity);
    }

    /**
     * Sold and oversold items per instance: a sale is oversold when an earlier sale (by any instance) already sold
     * the same item.
     */
    public List<Map<String, Object>> report(String sku) {
        return jdbc.queryForList("select s.instance, count(*) as sold, count(*) filter (where exists (select 1 from"
                + " sample_sales e where e.sku = s.sku and e.item = s.item and e.id < s.id)) as oversold"
                + " from sample_sales s where s.sku = ? group by s.instance order by s.instance", sku);
    }

    /** Items left. */
    public int left(String sku) {
        List<Integer> left = jdbc.queryForList("select quantity from sample_stock where sku = ?", Integer.class, sku);
        return left.isEmpty() ? 0 : left.get(0);
    }

    private void work() {
        long until = System.nanoTime() + workMicros * 1000;
        while (System.nanoTime() < until) {
            Thread.onSpinWait(); // the work a real deduction does between its read and its write
        }
    }
}
