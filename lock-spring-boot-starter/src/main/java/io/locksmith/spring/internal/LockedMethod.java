package io.locksmith.spring.internal;

import io.locksmith.spring.FencingToken;
import io.locksmith.spring.Locked;
import io.locksmith.spring.Locked.OnBusy;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.time.Duration;
import java.util.Optional;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.annotation.Schedules;
import org.springframework.util.StringValueResolver;

/**
 * One {@link Locked} method, its annotation read and checked once: the name expression parsed, the durations and
 * placeholders resolved, the fencing-token parameter found. Every problem is an {@link IllegalStateException}
 * naming the method, raised when the bean is proxied, so that a bad annotation stops the application at startup.
 */
final class LockedMethod {

    private static final SpelExpressionParser PARSER = new SpelExpressionParser();
    private static final ParameterNameDiscoverer PARAMETER_NAMES = new DefaultParameterNameDiscoverer();

    final Method method;
    final String description;
    final Expression name;
    final String nameSource;
    /** Null: not set. */
    final Duration wait;
    /** Null: the provider's lease, renewed. */
    final Duration lease;
    /** Null: released when the method returns. */
    final Duration atLeast;
    final OnBusy onBusy;
    final String provider;
    /** The index of the {@link FencingToken} parameter, or -1. */
    final int tokenParameter;

    private LockedMethod(Method method, Locked locked, StringValueResolver placeholders) {
        this.method = method;
        this.description = method.getDeclaringClass().getName() + '.' + method.getName();
        this.nameSource = locked.name();
        if (nameSource.isBlank()) {
            throw bad("name must be a SpEL expression giving the lock's name, such as \"'stock:' + #sku\"");
        }
        try {
            this.name = PARSER.parseExpression(nameSource);
        } catch (ParseException e) {
            throw bad("name \"" + nameSource + "\" is not a valid SpEL expression (a fixed name is written in quotes:"
                    + " \"'report'\"): " + e.getMessage());
        }
        this.wait = duration("waitFor", locked.waitFor(), placeholders);
        this.lease = duration("lease", locked.lease(), placeholders);
        if (lease != null && lease.isZero()) {
            throw bad("lease must be positive, got '" + locked.lease() + "'");
        }
        Duration minimum = duration("atLeast", locked.atLeast(), placeholders);
        this.atLeast = minimum == null || minimum.isZero() ? null : minimum;
        if (atLeast != null && lease != null && atLeast.compareTo(lease) > 0) {
            throw bad("atLeast (" + atLeast + ") must not exceed lease (" + lease + "): the lock cannot stay held"
                    + " longer than its lease");
        }
        this.onBusy = locked.onBusy() != OnBusy.AUTO ? locked.onBusy() : isScheduled(method) ? OnBusy.SKIP
                : OnBusy.WAIT;
        String providerName = placeholders == null ? locked.provider()
                : placeholders.resolveStringValue(locked.provider());
        this.provider = providerName == null ? "" : providerName;
        this.tokenParameter = tokenParameter(method);
    }

    /** Reads {@code method}'s annotation, or returns null if it has none. */
    static LockedMethod of(Method method, StringValueResolver placeholders) {
        Locked locked = AnnotatedElementUtils.findMergedAnnotation(method, Locked.class);
        return locked == null ? null : new LockedMethod(method, locked, placeholders);
    }

    /** The lock's name for one call. */
    String lockName(Object target, Object[] arguments, BeanFactory beans) {
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(new Root(method, arguments, target),
                method, arguments, PARAMETER_NAMES);
        if (beans != null) {
            context.setBeanResolver(new BeanFactoryResolver(beans));
        }
        Object value;
        try {
            value = name.getValue(context);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("@Locked name \"" + nameSource + "\" of " + description
                    + " could not be evaluated: " + e.getMessage(), e);
        }
        String lockName = value == null ? null : value.toString();
        if (lockName == null || lockName.isEmpty()) {
            throw new IllegalArgumentException("@Locked name \"" + nameSource + "\" of " + description + " gave "
                    + (value == null ? "null" : "an empty name") + "; is a parameter name right (by name needs the"
                    + " -parameters compiler flag; #p0 works without)?");
        }
        return lockName;
    }

    /** What a skipped call returns. */
    Object skippedResult() {
        Class<?> type = method.getReturnType();
        if (type == Optional.class) {
            return Optional.empty();
        }
        if (!type.isPrimitive() || type == void.class) {
            return null;
        }
        if (type == boolean.class) {
            return false;
        }
        if (type == char.class) {
            return (char) 0;
        }
        if (type == byte.class) {
            return (byte) 0;
        }
        if (type == short.class) {
            return (short) 0;
        }
        if (type == int.class) {
            return 0;
        }
        if (type == long.class) {
            return 0L;
        }
        if (type == float.class) {
            return 0f;
        }
        return 0d;
    }

    private Duration duration(String attribute, String text, StringValueResolver placeholders) {
        String resolved = placeholders == null ? text : placeholders.resolveStringValue(text);
        try {
            return Durations.parse(resolved == null ? "" : resolved, attribute);
        } catch (IllegalArgumentException e) {
            throw bad(e.getMessage());
        }
    }

    private int tokenParameter(Method m) {
        Parameter[] parameters = m.getParameters();
        int found = -1;
        for (int i = 0; i < parameters.length; i++) {
            if (!parameters[i].isAnnotationPresent(FencingToken.class)) {
                continue;
            }
            Class<?> type = parameters[i].getType();
            if (type != long.class && type != Long.class) {
                throw bad("the @FencingToken parameter " + i + " must be a long or Long, not " + type.getName());
            }
            if (found >= 0) {
                throw bad("only one parameter may be annotated @FencingToken, found " + found + " and " + i);
            }
            found = i;
        }
        return found;
    }

    private static boolean isScheduled(Method m) {
        return AnnotatedElementUtils.hasAnnotation(m, Scheduled.class)
                || AnnotatedElementUtils.hasAnnotation(m, Schedules.class);
    }

    private IllegalStateException bad(String problem) {
        return new IllegalStateException("@Locked on " + description + ": " + problem);
    }

    @Override
    public String toString() {
        return "@Locked " + description;
    }

    /** The root object of the name expression: {@code #root.method}, {@code #root.args}, {@code #root.target}. */
    public static final class Root {
        private final Method method;
        private final Object[] args;
        private final Object target;

        Root(Method method, Object[] args, Object target) {
            this.method = method;
            this.args = args;
            this.target = target;
        }

        /** The method called. */
        public Method getMethod() {
            return method;
        }

        /** Its arguments. */
        public Object[] getArgs() {
            return args;
        }

        /** The bean it was called on. */
        public Object getTarget() {
            return target;
        }
    }
}
