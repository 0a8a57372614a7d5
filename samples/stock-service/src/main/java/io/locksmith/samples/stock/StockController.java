package io.locksmith.samples.stock;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** The stock endpoint. */
@RestController
public class StockController {

    private final StockService stock;

    public StockController(StockService stock) {
        this.stock = stock;
    }

    /** Orders one item: {@code {"sold": true}} if one was left for this order. */
    @PostMapping("/stock/{sku}/orders")
    public Map<String, Object> order(@PathVariable String sku,
            @RequestParam(defaultValue = "true") boolean locked) {
        boolean sold = locked ? stock.deduct(sku, 0) : stock.deductUnlocked(sku);
        return Map.of("sold", sold);
    }

    /** Puts {@code quantity} items on sale. */
    @PostMapping("/stock/{sku}")
    public Map<String, Object> restock(@PathVariable String sku, @RequestParam int quantity) {
        stock.restock(sku, quantity);
        return Map.of("sku", sku, "quantity", quantity);
    }

    /** What each instance sold, and oversold. */
    @GetMapping("/stock/{sku}")
    public Map<String, Object> report(@PathVariable String sku) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("sku", sku);
        body.put("left", stock.left(sku));
        body.put("instances", stock.report(sku));
        return body;
    }
}
