package io.locksmith.spring.autoconfigure;

import io.locksmith.LockBackendException;
import io.locksmith.LockInfo;
import io.locksmith.LockProvider;
import io.locksmith.spring.internal.HeldLocks;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * The {@code locksmith} Actuator endpoint: {@code GET /actuator/locksmith} lists the application's providers and
 * the locks it holds through those the starter built (name, fencing token, held for, lease left in the store);
 * {@code GET /actuator/locksmith/{name}} shows what each provider's store knows of one lock.
 */
@Endpoint(id = "locksmith")
public class LocksmithEndpoint {

    private final Map<String, LockProvider> providers;
    private final HeldLocks held;

    public LocksmithEndpoint(Map<String, LockProvider> providers, HeldLocks held) {
        this.providers = providers;
        this.held = held;
    }

    /** The providers and the holds. */
    @ReadOperation
    public Map<String, Object> locks() {
        List<Map<String, Object>> providerList = new ArrayList<>();
        providers.forEach((bean, provider) -> {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("bean", bean);
            entry.put("backend", provider.backend());
            entry.put("clientId", provider.clientId());
            providerList.add(entry);
        });
        List<Map<String, Object>> holds = new ArrayList<>();
        for (HeldLocks.Held hold : held.list()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("name", hold.name());
            entry.put("backend", hold.backend());
            entry.put("fencingToken", hold.fencingToken());
            entry.put("since", hold.since().toString());
            entry.put("heldForMs", hold.heldFor().toMillis());
            entry.put("thread", hold.thread());
            LockProvider provider = providerOf(hold.backend());
            if (provider != null) {
                try {
                    provider.inspect(hold.name()).leaseRemaining()
                            .ifPresent(left -> entry.put("leaseLeftMs", left.toMillis()));
                } catch (LockBackendException e) {
                    entry.put("leaseLeftError", e.getMessage());
                }
            }
            holds.add(entry);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("providers", providerList);
        body.put("holds", holds);
        return body;
    }

    /** What each provider's store knows of the lock {@code name}. */
    @ReadOperation
    public Map<String, Object> lock(@Selector String name) {
        Map<String, Object> body = new LinkedHashMap<>();
        providers.forEach((bean, provider) -> {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("backend", provider.backend());
            try {
                LockInfo info = provider.inspect(name);
                entry.put("locked", info.isLocked());
                info.owner().ifPresent(owner -> entry.put("owner", owner));
                info.acquiredAt().ifPresent(at -> entry.put("acquiredAt", at.toString()));
                info.leaseRemaining().ifPresent(left -> entry.put("leaseLeftMs", left.toMillis()));
                info.fencingToken().ifPresent(token -> entry.put("fencingToken", token));
            } catch (IllegalArgumentException | LockBackendException e) {
                entry.put("error", e.getMessage());
            }
            body.put(bean, entry);
        });
        return body;
    }

    private LockProvider providerOf(String backend) {
        for (LockProvider provider : providers.values()) {
            if (provider.backend().equals(backend)) {
                return provider;
            }
        }
        return null;
    }
}
