package io.locksmith.spring.internal;

import io.locksmith.LockProvider;
import java.util.Arrays;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;

/** Finds the {@link LockProvider} bean a {@code @Locked} method uses, with errors that say what to do. */
public final class LockProviders {

    private final ListableBeanFactory beans;
    private volatile LockProvider only;

    public LockProviders(ListableBeanFactory beans) {
        this.beans = beans;
    }

    /**
     * The bean named {@code name}, or the only (or primary) one if {@code name} is empty.
     *
     * @throws IllegalStateException naming {@code method} if there is no such bean, or several and none primary
     */
    LockProvider get(String name, String method) {
        if (!name.isEmpty()) {
            try {
                return beans.getBean(name, LockProvider.class);
            } catch (NoSuchBeanDefinitionException e) {
                throw new IllegalStateException("@Locked on " + method + " names the LockProvider bean '" + name
                        + "', but there is none; LockProvider beans: " + names(), e);
            }
        }
        LockProvider known = only;
        if (known != null) {
            return known;
        }
        LockProvider unique = beans.getBeanProvider(LockProvider.class).getIfUnique();
        if (unique == null) {
            String[] names = beans.getBeanNamesForType(LockProvider.class);
            if (names.length == 0) {
                throw new IllegalStateException("@Locked on " + method + " needs a LockProvider bean and there is"
                        + " none: set locksmith.uri, or add lock-redis (with spring.data.redis.*), lock-jdbc (with a"
                        + " DataSource) or lock-zookeeper (with a CuratorFramework bean); see docs/spring.md");
            }
            throw new IllegalStateException("@Locked on " + method + ": there are " + names.length
                    + " LockProvider beans " + Arrays.toString(names) + " and none is @Primary: name one in"
                    + " @Locked(provider = \"...\") or mark one @Primary");
        }
        only = unique;
        return unique;
    }

    private String names() {
        return Arrays.toString(beans.getBeanNamesForType(LockProvider.class));
    }
}
