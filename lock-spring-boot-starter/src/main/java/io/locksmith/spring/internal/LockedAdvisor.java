package io.locksmith.spring.internal;

import java.lang.reflect.Method;
import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;

/**
 * Applies {@link LockedInterceptor} to the methods annotated {@link io.locksmith.spring.Locked}. Matching reads
 * and checks each annotation, so a wrong one fails the bean's creation, naming the method.
 */
public final class LockedAdvisor extends AbstractPointcutAdvisor {
    private static final long serialVersionUID = 1L;

    private final transient LockedInterceptor interceptor;
    private final transient Pointcut pointcut;

    public LockedAdvisor(LockedInterceptor interceptor, int order) {
        this.interceptor = interceptor;
        this.pointcut = new StaticMethodMatcherPointcut() {
            @Override
            public boolean matches(Method method, Class<?> targetClass) {
                return interceptor.prepare(method, targetClass != null ? targetClass : method.getDeclaringClass())
                        != null;
            }
        };
        setOrder(order);
    }

    @Override
    public Pointcut getPointcut() {
        return pointcut;
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }
}
