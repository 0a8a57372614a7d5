package io.locksmith.spi;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class UrisTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "redis://h:6379/0                                  | redis://h:6379/0",
        "redis://app:secret@h:6379/0                       | redis://***@h:6379/0",
        "redis://:secret@h                                 | redis://***@h",
        "redis://app:top/secret@h:6379                     | redis://***@h:6379",
        "redis://app:a?b#c@h                               | redis://***@h",
        "redlock://app:pw%2Fone@h1:6379,:second-pw@h2,h3/0 | redlock://***@h1:6379,***@h2,h3/0",
        "zookeeper://h1:2181,h2:2181/chroot                | zookeeper://h1:2181,h2:2181/chroot",
        "zookeeper://user:pw@h1:2181/chroot                | zookeeper://***@h1:2181/chroot",
        "jdbc:mariadb://root:pw@db/app?user=x&password=p@ss | jdbc:mariadb://***@db/app?user=x&password=***",
        "jdbc:postgresql://db/app?user=app&password=s3cret&ssl=true | jdbc:postgresql://db/app?user=app&password=***&ssl=true",
        "jdbc:mysql://u:p@h1,h2:3306/app                   | jdbc:mysql://***@h1,h2:3306/app",
        "jdbc:sqlserver://h;user=u;password=pw;db=x        | jdbc:sqlserver://h;user=u;password=***;db=x",
        "jdbc:h2:mem:test;PASSWORD=pw                      | jdbc:h2:mem:test;PASSWORD=***",
        "local://bench                                     | local://bench",
        "@//weird@                                          | @//***@",
        "app:topsecret@h:6379                              | ***@h:6379",
    })
    void hidesCredentials(String uri, String shown) {
        assertThat(Uris.redact(uri)).isEqualTo(shown);
    }
}
