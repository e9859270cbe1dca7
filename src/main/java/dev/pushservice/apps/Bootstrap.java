package dev.pushservice.apps;

import dev.pushservice.platform.config.PushEnvironment;
import dev.pushservice.platform.config.PushProperties;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;

/**
 * First start on an empty database: creates the default tenant and shows its raw keys once, in
 * {@code <dataDir>/bootstrap-keys.txt} with mode 0600 and, when standard output is a terminal, on
 * the console (never through the logger). When it is not (a service manager, a container, a pipe),
 * whatever reads it is log storage, so only the file's path is printed. Later starts do nothing.
 */
@Component
@ConditionalOnProperty(name = "push.bootstrap.enabled", havingValue = "true", matchIfMissing = true)
class Bootstrap implements ApplicationRunner {

    private static final Logger log = LoggerFactory.getLogger(Bootstrap.class);

    private final TenantService tenants;
    private final PushProperties properties;

    Bootstrap(TenantService tenants, PushProperties properties) {
        this.tenants = tenants;
        this.properties = properties;
    }

    @Override
    public void run(ApplicationArguments args) throws IOException {
        var result = tenants.bootstrapIfEmpty();
        if (result.isEmpty()) return;
        var r = result.get();
        String text = """
                Push Service: first start. These keys are shown once and cannot be retrieved later.
                  organisation  %s (%s)
                  app           %s (%s)
                  server key    %s
                                scopes: %s
                  public key    %s
                                scopes: %s
                """.formatted(r.organisation().name(), r.organisation().id(), r.app().name(), r.app().id(),
                r.serverKey().rawKey(), String.join(" ", r.serverKey().key().scopes()),
                r.publicKey().rawKey(), String.join(" ", r.publicKey().key().scopes()));
        Path file = writeKeyFile(text);
        PrintStream out = System.out;
        out.println();
        if (PushEnvironment.attachedToTerminal()) {
            out.print(text);
            out.println("  also written to " + file.toAbsolutePath() + " (mode 0600); delete it once the keys are stored safely.");
        } else {
            // standard output is a pipe, a file or a container's log: whatever reads it stores it, so the
            // raw keys stay in the file only
            out.println("Push Service: first start. The server key and the public key of app " + r.app().id()
                    + " are in " + file.toAbsolutePath() + " (mode 0600), shown nowhere else and never again:"
                    + " store them safely, then delete the file.");
        }
        out.println();
        log.info("Bootstrapped organisation {} and app {}; keys written to {}", r.organisation().id(), r.app().id(), file);
    }

    private Path writeKeyFile(String text) throws IOException {
        Files.createDirectories(properties.dataDir());
        Path file = properties.dataDir().resolve("bootstrap-keys.txt");
        Files.deleteIfExists(file);
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException notPosix) {
            Files.createFile(file);
        } catch (FileAlreadyExistsException e) {
            throw e;
        }
        Files.writeString(file, text);
        return file;
    }
}
