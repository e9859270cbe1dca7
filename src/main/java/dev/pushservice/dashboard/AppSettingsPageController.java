package dev.pushservice.dashboard;

import dev.pushservice.apps.AppSettings;
import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.delivery.CredentialCheck;
import dev.pushservice.delivery.CredentialChecks;
import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.domain.InvalidInput;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Base64;
import java.util.Map;
import java.util.Objects;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.multipart.MultipartFile;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's settings and provider credentials. Every change is a PATCH body handed to
 * {@link AppSettingsService#update}, the code behind {@code PATCH /v1/app/settings}: the same
 * validation (a bad value is a 422 with the form shown again, and nothing changes) and the same audit
 * entries ({@code settings.update}, {@code credentials.update}), recorded as the member's. Secrets
 * are write-only: the page shows what the settings read shows (identifiers, whether each provider is
 * configured, the provider's refusal and when), never a key, and a form shown again after an error
 * never carries the secret back. "Check credentials" runs {@link CredentialChecks}, the code of
 * {@code POST /v1/app/settings/check}. Members read; admins and owners change.
 */
@Controller
class AppSettingsPageController {

    private final AppSettingsService settings;
    private final CredentialChecks checks;
    private final DashboardAccess access;
    private final JsonMapper json;

    AppSettingsPageController(AppSettingsService settings, CredentialChecks checks, DashboardAccess access, JsonMapper json) {
        this.settings = settings;
        this.checks = checks;
        this.access = access;
        this.json = json;
    }

    @GetMapping("/dashboard/apps/{appId}/settings")
    String page(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        return page(me, access.app(me, appId), model);
    }

    /** Name, time zone, quiet hours and throttle: only the fields that differ from the stored ones are sent. */
    @PostMapping("/dashboard/apps/{appId}/settings")
    String general(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                   @RequestParam(name = "name", required = false) String name,
                   @RequestParam(name = "timezone", required = false) String timezone,
                   @RequestParam(name = "quiet_start", required = false) String quietStart,
                   @RequestParam(name = "quiet_end", required = false) String quietEnd,
                   @RequestParam(name = "throttle_per_minute", required = false) String throttle,
                   Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        AppSettings current = settings.read(app.id());
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        if (name != null && !name.equals(current.name())) body.put("name", name);
        if (timezone != null && !timezone.equals(current.timezone())) body.put("timezone", timezone);
        String start = blankToNull(quietStart);
        String end = blankToNull(quietEnd);
        AppSettings.QuietHoursView quiet = current.quietHours();
        if (start == null && end == null) {
            if (quiet != null) body.putNull("quiet_hours");
        } else if (quiet == null || !Objects.equals(start, quiet.start()) || !Objects.equals(end, quiet.end())) {
            ObjectNode q = body.putObject("quiet_hours");
            if (start != null) q.put("start", start);
            if (end != null) q.put("end", end);
        }
        String perMinute = blankToNull(throttle);
        if (perMinute == null) {
            if (current.throttlePerMinute() != null) body.putNull("throttle_per_minute");
        } else if (!perMinute.equals(String.valueOf(current.throttlePerMinute()))) {
            try {
                body.put("throttle_per_minute", Long.parseLong(perMinute));
            } catch (NumberFormatException e) {
                body.put("throttle_per_minute", perMinute); // the service's own message for a non-number
            }
        }
        model.addAttribute("form", Map.of("name", nz(name), "timezone", nz(timezone), "quiet_start", nz(quietStart),
                "quiet_end", nz(quietEnd), "throttle_per_minute", nz(throttle)));
        return apply(me, app, body, "general", "Settings saved.", model, response);
    }

    /**
     * Any part of the settings as the API's PATCH body (notification defaults, frequency cap,
     * identity verification, …). Shown again after an error unless it held credentials.
     */
    @PostMapping("/dashboard/apps/{appId}/settings/json")
    String patch(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                 @RequestParam(name = "body", required = false) String text, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        JsonNode body;
        try {
            body = json.readTree(text == null ? "" : text);
        } catch (JacksonException e) {
            body = null;
        }
        if (body == null || !body.isObject()) {
            response.setStatus(422);
            model.addAttribute("problem", "The body must be a JSON object, as PATCH /v1/app/settings takes it");
            model.addAttribute("problemAt", "json");
            return page(me, app, model);
        }
        if (!body.has("apns") && !body.has("fcm")) model.addAttribute("jsonBody", text);
        return apply(me, app, (ObjectNode) body, "json", "Settings saved.", model, response);
    }

    /** APNs token (.p8) credentials, set or replaced whole. The key is never shown again, even after an error. */
    @PostMapping("/dashboard/apps/{appId}/settings/apns")
    String apns(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                @RequestParam(name = "bundle_id", required = false) String bundleId,
                @RequestParam(name = "environment", required = false) String environment,
                @RequestParam(name = "key_id", required = false) String keyId,
                @RequestParam(name = "team_id", required = false) String teamId,
                @RequestParam(name = "signing_key", required = false) String signingKey,
                Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        ObjectNode apns = body.putObject("apns");
        apns.put("bundle_id", nz(bundleId).strip());
        apns.put("environment", nz(environment).strip());
        apns.putObject("token").put("key_id", nz(keyId).strip()).put("team_id", nz(teamId).strip()).put("signing_key", nz(signingKey));
        model.addAttribute("apnsForm", Map.of("bundle_id", nz(bundleId), "environment", nz(environment),
                "key_id", nz(keyId), "team_id", nz(teamId)));
        return apply(me, app, body, "apns", "APNs credentials saved.", model, response);
    }

    /**
     * APNs certificate credentials: the .p12 file (PKCS#12, certificate and key) uploaded as a
     * multipart part and its password, sent as the API's {@code apns.certificate} (base64). Both are
     * write-only: never shown again, also not when the form comes back with an error.
     */
    @PostMapping(path = "/dashboard/apps/{appId}/settings/apns-certificate", consumes = "multipart/form-data")
    String apnsCertificate(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                           @RequestParam(name = "bundle_id", required = false) String bundleId,
                           @RequestParam(name = "environment", required = false) String environment,
                           @RequestParam(name = "certificate", required = false) MultipartFile certificate,
                           @RequestParam(name = "password", required = false) String password,
                           Model model, HttpServletResponse response) throws IOException {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        model.addAttribute("apnsForm", Map.of("bundle_id", nz(bundleId), "environment", nz(environment), "key_id", "", "team_id", ""));
        if (certificate == null || certificate.isEmpty()) {
            response.setStatus(422);
            model.addAttribute("problem", "apns.certificate.pkcs12: choose the .p12 file (certificate and private key)");
            model.addAttribute("problemAt", "apns-certificate");
            return page(me, app, model);
        }
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        ObjectNode apns = body.putObject("apns");
        apns.put("bundle_id", nz(bundleId).strip());
        apns.put("environment", nz(environment).strip());
        ObjectNode cert = apns.putObject("certificate");
        cert.put("pkcs12", Base64.getEncoder().encodeToString(certificate.getBytes()));
        if (password != null && !password.isEmpty()) cert.put("password", password);
        return apply(me, app, body, "apns-certificate", "APNs certificate saved.", model, response);
    }

    /** The FCM service-account JSON, set or replaced whole; never shown again. */
    @PostMapping("/dashboard/apps/{appId}/settings/fcm")
    String fcm(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
               @RequestParam(name = "service_account", required = false) String serviceAccount,
               Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        body.putObject("fcm").put("service_account", nz(serviceAccount));
        return apply(me, app, body, "fcm", "FCM credentials saved.", model, response);
    }

    /** Removes a provider's credentials ({@code apns} or {@code fcm}): the API's {@code {"apns": null}}. */
    @PostMapping("/dashboard/apps/{appId}/settings/{provider}/remove")
    String remove(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String provider,
                  Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        if (!provider.equals("apns") && !provider.equals("fcm")) throw new dev.pushservice.platform.domain.NotFound("Provider");
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        body.putNull(provider);
        return apply(me, app, body, provider, provider.equals("apns") ? "APNs credentials removed." : "FCM credentials removed.",
                model, response);
    }

    /** Asks each provider whether it accepts the app's credentials; shows each verdict. */
    @PostMapping("/dashboard/apps/{appId}/settings/check")
    String check(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        Map<String, CredentialCheck> verdicts = checks.check(app.id());
        model.addAttribute("checks", verdicts);
        return page(me, app, model);
    }

    private String apply(DashboardMember me, Tenants.App app, ObjectNode body, String section, String saved,
                         Model model, HttpServletResponse response) {
        if (body.isEmpty()) {
            model.addAttribute("saved", "Nothing changed.");
            return page(me, app, model);
        }
        try {
            settings.update(app.id(), body);
            model.addAttribute("saved", saved);
            model.asMap().remove("form");
            model.asMap().remove("apnsForm");
            model.asMap().remove("jsonBody");
        } catch (InvalidInput e) {
            response.setStatus(422);
            model.addAttribute("problem", e.violations().isEmpty() ? e.getMessage()
                    : e.violations().stream().map(v -> v.field() + ": " + v.message()).reduce((a, b) -> a + "; " + b).orElseThrow());
            model.addAttribute("problemAt", section);
        }
        return page(me, app, model);
    }

    private String page(DashboardMember me, Tenants.App app, Model model) {
        AppSettings current = settings.read(app.id());
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("settings", current);
        model.addAttribute("settingsJson", json.writerWithDefaultPrettyPrinter().writeValueAsString(current));
        model.addAttribute("apnsInvalidAt", current.apns() == null || current.apns().invalid() == null ? null
                : DashboardFormat.minute(current.apns().invalid().detectedAt()));
        model.addAttribute("fcmInvalidAt", current.fcm() == null || current.fcm().invalid() == null ? null
                : DashboardFormat.minute(current.fcm().invalid().detectedAt()));
        model.addAttribute("apnsCertificateExpires", current.apns() == null ? null : DashboardFormat.minute(current.apns().certificateExpiresAt()));
        if (!model.containsAttribute("form")) {
            AppSettings.QuietHoursView q = current.quietHours();
            model.addAttribute("form", Map.of("name", nz(current.name()), "timezone", nz(current.timezone()),
                    "quiet_start", q == null ? "" : q.start(), "quiet_end", q == null ? "" : q.end(),
                    "throttle_per_minute", current.throttlePerMinute() == null ? "" : current.throttlePerMinute().toString()));
        }
        if (!model.containsAttribute("apnsForm")) {
            AppSettings.ApnsView a = current.apns();
            model.addAttribute("apnsForm", Map.of("bundle_id", a == null ? "" : nz(a.bundleId()),
                    "environment", a == null ? "production" : nz(a.environment()),
                    "key_id", a == null ? "" : nz(a.keyId()), "team_id", a == null ? "" : nz(a.teamId())));
        }
        model.addAttribute("mayChange", me.role().includes(MemberRole.ADMIN));
        return "settings";
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.strip();
    }

    private static String nz(String s) {
        return s == null ? "" : s;
    }
}
