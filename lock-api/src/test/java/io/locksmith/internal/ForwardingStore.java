package io.locksmith.internal;

import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * A store that forwards to a real one; tests override a method to observe or disturb it. Tests see the store's
 * hold as an opaque object, and read the lock name and owner id of a hold this store made with {@link #name} and
 * {@link #owner}.
 */
class ForwardingStore extends ForwardingLockStore<Object> {

    private final Map<Object, String[]> made = Collections.synchronizedMap(new WeakHashMap<>());

    @SuppressWarnings("unchecked") // every hold the machinery passes back came from the delegate's newHold
    ForwardingStore(LockStore<?> delegate) {
        super((LockStore<Object>) delegate);
    }

    @Override
    public Object newHold(String name, String owner) {
        Object hold = delegate.newHold(name, owner);
        made.put(hold, new String[] {name, owner});
        return hold;
    }

    String name(Object hold) {
        return made.get(hold)[0];
    }

    String owner(Object hold) {
        return made.get(hold)[1];
    }
}
