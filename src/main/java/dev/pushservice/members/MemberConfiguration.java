package dev.pushservice.members;

import java.util.Map;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.password.DelegatingPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;

/** How member passwords are hashed. */
@Configuration(proxyBeanMethods = false)
class MemberConfiguration {

    /**
     * bcrypt (cost 10, about 50-100 ms a check here), stored with its {@code {bcrypt}} prefix so that
     * a later change of algorithm can upgrade hashes as members sign in. bcrypt rather than Argon2id:
     * Spring Security's Argon2 encoder needs BouncyCastle's provider on the runtime classpath, which
     * the service does not otherwise ship (docs/dashboard.md).
     */
    @Bean
    PasswordEncoder memberPasswordEncoder() {
        return new DelegatingPasswordEncoder("bcrypt", Map.of("bcrypt", new BCryptPasswordEncoder()));
    }
}
