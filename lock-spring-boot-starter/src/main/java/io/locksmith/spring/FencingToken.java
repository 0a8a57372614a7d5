package io.locksmith.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a {@code long} (or {@code Long}) parameter of a {@link Locked} method that receives the hold's fencing
 * token: whatever the caller passed is replaced before the method runs.
 *
 * <pre>{@code
 * @Locked(name = "'stock:' + #sku")
 * public void deduct(String sku, int quantity, @FencingToken long token) {
 *     stock.update(sku, quantity, token); // the store rejects writes with a token older than the last one
 * }
 * }</pre>
 */
@Target(ElementType.PARAMETER)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface FencingToken {
}
