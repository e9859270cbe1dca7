package dev.pushservice.apps;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.json.JsonInput;
import java.time.DateTimeException;
import java.time.ZoneId;
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

    private final AppSettingsRepository settings;

    AppSettingsController(AppSettingsRepository settings) {
        this.settings = settings;
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    AppSettings read(ApiPrincipal caller) {
        return settings.find(caller.appId());
    }

    @PatchMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    AppSettings update(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = in.string("name", 190);
        if (name != null && name.isBlank()) in.reject("name", "must not be empty");
        String timezone = in.string("timezone", 64);
        if (timezone != null && !isZone(timezone)) {
            in.reject("timezone", "must be an IANA time zone such as Europe/Berlin");
        }
        if (in.has("name") && in.value("name") == null) in.reject("name", "must not be null");
        if (in.has("timezone") && in.value("timezone") == null) in.reject("timezone", "must not be null");
        in.check();
        settings.update(caller.appId(), name == null ? null : name.strip(), timezone);
        return settings.find(caller.appId());
    }

    static boolean isZone(String zone) {
        if (!zone.contains("/") && !zone.equals("UTC")) return false;
        try {
            ZoneId.of(zone);
            return true;
        } catch (DateTimeException e) {
            return false;
        }
    }
}
