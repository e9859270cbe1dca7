package dev.pushservice.delivery;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import java.util.Map;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /v1/app/settings/check}: asks each provider whether it accepts the calling app's
 * credentials ({@link CredentialChecks}, which the dashboard's "Check credentials" button runs too).
 */
@RestController
class CredentialCheckController {

    private final CredentialChecks checks;

    CredentialCheckController(CredentialChecks checks) {
        this.checks = checks;
    }

    @PostMapping("/v1/app/settings/check")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    Map<String, CredentialCheck> check(ApiPrincipal caller) {
        return checks.check(caller.appId());
    }
}
