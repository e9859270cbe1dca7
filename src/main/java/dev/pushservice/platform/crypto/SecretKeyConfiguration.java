package dev.pushservice.platform.crypto;

import dev.pushservice.platform.config.PushProperties;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Base64;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@link SecretBox} key: {@code PUSH_SECRET_KEY} when set; otherwise {@code <dataDir>/secret.key},
 * generated (mode 0600) on first start. Every instance sharing a database needs the same key.
 */
@Configuration(proxyBeanMethods = false)
class SecretKeyConfiguration {

    private static final Logger log = LoggerFactory.getLogger(SecretKeyConfiguration.class);

    @Bean
    SecretBox secretBox(PushProperties properties) {
        String configured = properties.secretKey();
        if (configured != null && !configured.isBlank()) {
            return new SecretBox(decode(configured.trim(), "PUSH_SECRET_KEY"));
        }
        Path file = properties.dataDir().resolve("secret.key");
        try {
            if (!Files.exists(file)) {
                Files.createDirectories(properties.dataDir());
                byte[] key = new byte[32];
                new SecureRandom().nextBytes(key);
                try {
                    Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                } catch (UnsupportedOperationException notPosix) {
                    Files.createFile(file);
                } catch (FileAlreadyExistsException raced) {
                    return new SecretBox(decode(Files.readString(file).trim(), file.toString()));
                }
                Files.writeString(file, Base64.getEncoder().encodeToString(key));
                log.warn("PUSH_SECRET_KEY is not set: generated {} (set PUSH_SECRET_KEY in production, the same on every instance)",
                        file.toAbsolutePath());
                return new SecretBox(key);
            }
            return new SecretBox(decode(Files.readString(file).trim(), file.toString()));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read or create " + file.toAbsolutePath(), e);
        }
    }

    private static byte[] decode(String value, String where) {
        try {
            return Base64.getDecoder().decode(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + " must be base64 (e.g. openssl rand -base64 32)");
        }
    }
}
