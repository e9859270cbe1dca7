package dev.pushservice;

import dev.pushservice.apps.cli.AdminCli;
import java.util.Arrays;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** Entry point: the service, or with {@code admin …} arguments the admin CLI ({@link AdminCli}), which exits when done. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class PushServiceApplication {

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("admin")) {
            AdminCli.main(PushServiceApplication.class, Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        SpringApplication.run(PushServiceApplication.class, args);
    }
}
