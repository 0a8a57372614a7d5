package io.locksmith.tests.servers;

import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;

/** The explicit settings fixtures read: a system property wins over the environment variable of the same setting. */
final class Settings {

    /** One setting, named both as a system property and as an environment variable. */
    record Key(String property, String variable) {

        /** Returns how a user sets it, for error messages: {@code LOCKSMITH_X (or -Dlocksmith.x)}. */
        String describe() {
            return variable + " (or -D" + property + ")";
        }

        /** Returns how a user sets it to {@code example}: {@code LOCKSMITH_X=example (or -Dlocksmith.x)}. */
        String describe(String example) {
            return variable + "=" + example + " (or -D" + property + ")";
        }
    }

    /** A value that was set, and where it came from. */
    record Value(String text, String source) {
    }

    private final UnaryOperator<String> properties;
    private final UnaryOperator<String> environment;

    private Settings(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        this.properties = properties;
        this.environment = environment;
    }

    /** Returns the settings of this JVM: its system properties and its environment. */
    static Settings system() {
        return new Settings(System::getProperty, System::getenv);
    }

    /** Returns settings holding only the given system properties and no environment, for tests. */
    static Settings of(Map<String, String> properties) {
        return new Settings(properties::get, name -> null);
    }

    /** Returns the non-blank value of the key, if set. */
    Optional<Value> get(Key key) {
        String fromProperty = properties.apply(key.property());
        if (fromProperty != null && !fromProperty.isBlank()) {
            return Optional.of(new Value(fromProperty.trim(), "-D" + key.property()));
        }
        String fromEnvironment = environment.apply(key.variable());
        if (fromEnvironment != null && !fromEnvironment.isBlank()) {
            return Optional.of(new Value(fromEnvironment.trim(), key.variable()));
        }
        return Optional.empty();
    }

    /** Returns the value of an environment variable that is not a Locksmith setting, such as {@code PATH}. */
    Optional<String> environmentVariable(String name) {
        return Optional.ofNullable(environment.apply(name));
    }
}
