package io.locksmith.internal;

import io.locksmith.spi.ForwardingLockStore;
import io.locksmith.spi.LockStore;

/** A store that forwards to a real one; tests override a method to observe or disturb it. */
class ForwardingStore extends ForwardingLockStore {

    ForwardingStore(LockStore delegate) {
        super(delegate);
    }
}
