package io.locksmith.redis;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.io.OutputStream;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.SslVerifyMode;

/**
 * A throw-away certificate authority and a server certificate for {@code localhost}/{@code 127.0.0.1}, made with
 * {@code openssl} in a temp directory, and Jedis TLS options that trust only that authority.
 */
final class TestTls {

    final Path directory;
    final Path caCert;
    final Path serverCert;
    final Path serverKey;

    private TestTls(Path directory) {
        this.directory = directory;
        this.caCert = directory.resolve("ca.crt");
        this.serverCert = directory.resolve("server.crt");
        this.serverKey = directory.resolve("server.key");
    }

    static TestTls create() throws IOException, InterruptedException {
        TestTls tls = new TestTls(Files.createTempDirectory("locksmith-tls-"));
        Path dir = tls.directory;
        Path caKey = dir.resolve("ca.key");
        Path csr = dir.resolve("server.csr");
        Path ext = dir.resolve("server.ext");
        Files.writeString(ext, "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
        openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey.toString(), "-out",
                tls.caCert.toString(), "-days", "2", "-subj", "/CN=locksmith test CA");
        openssl(dir, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", tls.serverKey.toString(), "-out",
                csr.toString(), "-subj", "/CN=localhost");
        openssl(dir, "x509", "-req", "-in", csr.toString(), "-CA", tls.caCert.toString(), "-CAkey",
                caKey.toString(), "-CAcreateserial", "-out", tls.serverCert.toString(), "-days", "2", "-extfile",
                ext.toString());
        return tls;
    }

    /** The {@code redis-server} arguments that serve TLS on {@code port} with this certificate. */
    List<String> serverArgs(int port) {
        return List.of("--tls-port", Integer.toString(port), "--tls-cert-file", serverCert.toString(),
                "--tls-key-file", serverKey.toString(), "--tls-ca-cert-file", caCert.toString(),
                "--tls-auth-clients", "no");
    }

    /** Jedis TLS options that trust this authority and nothing else, and check the server's host name. */
    SslOptions sslOptions() throws Exception {
        Certificate ca;
        try (InputStream in = Files.newInputStream(caCert)) {
            ca = CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        trust.setCertificateEntry("locksmith-test-ca", ca);
        Path file = directory.resolve("truststore.p12");
        char[] password = "changeit".toCharArray();
        try (OutputStream out = Files.newOutputStream(file)) {
            trust.store(out, password);
        }
        return SslOptions.builder()
                .truststore(file.toFile(), password)
                .trustStoreType("PKCS12")
                .sslVerifyMode(SslVerifyMode.FULL)
                .build();
    }

    private static void openssl(Path dir, String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("openssl.log").toFile()).start();
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException("openssl " + String.join(" ", args) + " failed; see " + dir.resolve("openssl.log")
                    + ": " + Files.readString(dir.resolve("openssl.log")));
        }
    }
}
