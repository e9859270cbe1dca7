package dev.pushservice.apps;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PatchMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/**
 * {@code /v1/app/settings}: the calling key's app. PATCH changes only the supplied fields; GET (an
 * addition to the spec, see docs/api-decisions.md) reads them, never returning secrets.
 */
@RestController
@RequestMapping("/v1/app/settings")
class AppSettingsController {

    private final AppSettingsService settings;

    AppSettingsController(AppSettingsService settings) {
        this.settings = settings;
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    AppSettings read(ApiPrincipal caller) {
        return settings.read(caller.appId());
    }

    @PatchMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    AppSettings update(ApiPrincipal caller, @RequestBody JsonNode body) {
        return settings.update(caller.appId(), body);
    }
}
