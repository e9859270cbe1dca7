package dev.pushservice.devices;

import dev.pushservice.delivery.webpush.ImportedVapidKeys;
import dev.pushservice.delivery.webpush.VapidKeyService;
import dev.pushservice.delivery.webpush.WebPushProperties;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Locales;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.TimeZones;
import java.util.Locale;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/** {@code /v1/devices}: registration, reads and disable. Public client keys may register and disable, never read. */
@RestController
@RequestMapping("/v1/devices")
class DeviceController {

    private final DeviceService devices;
    private final boolean allowInsecureWebEndpoints;
    private final VapidKeyService vapid;
    private final ImportedVapidKeys imported;

    DeviceController(DeviceService devices, WebPushProperties webPush, VapidKeyService vapid, ImportedVapidKeys imported) {
        this.devices = devices;
        this.vapid = vapid;
        this.imported = imported;
        this.allowInsecureWebEndpoints = webPush.allowInsecureEndpoints();
    }

    @PostMapping("/register")
    @Authorize(value = Scope.DEVICES_WRITE, publicKeyAllowed = true)
    ResponseEntity<DeviceView> register(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String platformValue = in.requiredString("platform", 20);
        Platform platform = platformValue == null ? null : Platform.fromValue(platformValue).orElse(null);
        if (platformValue != null && platform == null) in.reject("platform", Platform.RULE);
        String rawToken = in.requiredString("push_token", Limits.PUSH_TOKEN);
        String externalUserId = in.value("external_user_id") == null ? null
                : in.requiredText("external_user_id", Limits.EXTERNAL_USER_ID);
        String identityToken = in.string("identity_token", Limits.IDENTITY_TOKEN);
        String appVersion = in.text("app_version", Limits.APP_VERSION);
        String deviceModel = in.text("device_model", Limits.DEVICE_MODEL);
        String osVersion = in.text("os_version", Limits.OS_VERSION);
        String locale = in.string("locale", Limits.LOCALE);
        if (locale != null && !Locales.isValid(locale)) in.reject("locale", Locales.RULE);
        String timezone = in.string("timezone", Limits.TIMEZONE);
        if (timezone != null && !TimeZones.isValid(timezone)) in.reject("timezone", TimeZones.RULE);
        var tags = Tags.read(in, "tags");
        PushTokens.Checked token = null;
        if (platform != null && rawToken != null) {
            try {
                token = PushTokens.check(platform, rawToken, allowInsecureWebEndpoints);
                // A web subscription is stored with the key it was made with: the one it names, else the one its
                // device recorded (an endpoint belongs to one key: e.g. an imported subscription registered again
                // by code that sends subscription.toJSON(), which has no key), else the app's current one.
                String appKey = platform == Platform.WEB ? vapid.publicKey(caller.appId()).orElse(null) : null;
                if (platform == Platform.WEB && token.namedServerKey() == null) {
                    String recorded = devices.recordedServerKey(caller.appId(), token).orElse(appKey);
                    token = PushTokens.check(platform, rawToken, allowInsecureWebEndpoints, recorded);
                }
                String named = token.namedServerKey();
                if (named != null && !named.equals(appKey) && imported.find(caller.appId(), named).isEmpty()) {
                    // no send could be signed for it (and an app can never borrow another app's pair)
                    token = null;
                    in.reject("push_token", "application_server_key is not a VAPID key of this app (GET /v1/app/webpush shows its key)");
                }
            } catch (IllegalArgumentException e) {
                in.reject("push_token", e.getMessage());
            }
        }
        in.check();
        Registration r = new Registration(platform, rawToken, externalUserId, identityToken, appVersion, deviceModel,
                osVersion, locale, timezone, tags);
        DeviceService.Registered result = devices.register(caller, r, token);
        return ResponseEntity.status(result.created() ? HttpStatus.CREATED : HttpStatus.OK).body(result.device());
    }

    @GetMapping
    @Authorize(Scope.DEVICES_WRITE)
    Page<DeviceView> list(ApiPrincipal caller, PageRequest page,
                          @RequestParam(required = false) String platform,
                          @RequestParam(required = false) String enabled) {
        if (platform != null && Platform.fromValue(platform).isEmpty()) {
            throw InvalidInput.of("platform", Platform.RULE);
        }
        Boolean enabledFilter = null;
        if (enabled != null) {
            switch (enabled.toLowerCase(Locale.ROOT)) {
                case "true" -> enabledFilter = true;
                case "false" -> enabledFilter = false;
                default -> throw InvalidInput.of("enabled", "must be true or false");
            }
        }
        return devices.list(caller.appId(), platform, enabledFilter, page);
    }

    @GetMapping("/{device_id}")
    @Authorize(Scope.DEVICES_WRITE)
    DeviceView get(ApiPrincipal caller, @PathVariable("device_id") String deviceId) {
        return devices.get(caller.appId(), Uuids.pathId(deviceId, "device_id"));
    }

    @DeleteMapping("/{device_id}")
    @Authorize(value = Scope.DEVICES_WRITE, publicKeyAllowed = true)
    DeviceView disable(ApiPrincipal caller, @PathVariable("device_id") String deviceId) {
        return devices.disable(caller.appId(), Uuids.pathId(deviceId, "device_id"));
    }
}
