package io.locksmith.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ServersTest {

    @Test
    void redlockMastersDefaultsToFive() {
        assertThat(Servers.redlockMasters(null)).isEqualTo(5);
    }

    @Test
    void redlockMastersTakesAWholeNumber() {
        assertThat(Servers.redlockMasters("3")).isEqualTo(3);
        assertThat(Servers.redlockMasters(" 1 ")).isEqualTo(1);
    }

    @Test
    void redlockMastersRefusesWhatIsNoNumberOfMasters() {
        for (String bad : new String[] {"0", "-3", "three", "", "2.5"}) {
            assertThatThrownBy(() -> Servers.redlockMasters(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("-Dbench.redlock.masters=" + bad
                            + ": expected a whole number of Redlock masters, at least 1 (default 5)");
        }
    }
}
