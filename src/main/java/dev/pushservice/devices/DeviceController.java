package dev.pushservice.devices;

import dev.pushservice.delivery.Platform;
import dev.pushservice.delivery.webpush.WebPushProperties;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.json.TimeZones;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import java.util.Locale;
import java.util.UUID;
import java.util.regex.Pattern;
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

    private static final Pattern LOCALE = Pattern.compile("[A-Za-z]{2,3}([_-][A-Za-z0-9]{1,8})*");
    private static final Pattern NO_CONTROL = Pattern.compile("[^\\p{Cc}]*");

    private final DeviceService devices;
    private final boolean allowInsecureWebEndpoints;

    DeviceController(DeviceService devices, WebPushProperties webPush) {
        this.devices = devices;
        this.allowInsecureWebEndpoints = webPush.allowInsecureEndpoints();
    }

    @PostMapping("/register")
    @Authorize(value = Scope.DEVICES_WRITE, publicKeyAllowed = true)
    ResponseEntity<DeviceView> register(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String platformValue = in.requiredString("platform", 20);
        Platform platform = null;
        if (platformValue != null) {
            switch (platformValue) {
                case "ios" -> platform = Platform.IOS;
                case "android" -> platform = Platform.ANDROID;
                case "web" -> platform = Platform.WEB;
                default -> in.reject("platform", "must be one of ios, android, web");
            }
        }
        String rawToken = in.requiredString("push_token", 2048);
        String externalUserId = in.string("external_user_id", 190);
        if (externalUserId != null) checkUserId(in, "external_user_id", externalUserId);
        String identityToken = in.string("identity_token", 8192);
        String appVersion = text(in, "app_version", 50);
        String deviceModel = text(in, "device_model", 120);
        String osVersion = text(in, "os_version", 50);
        String locale = in.string("locale", 20);
        if (locale != null && !LOCALE.matcher(locale).matches()) {
            in.reject("locale", "must be a language tag such as en, en-US or pt_BR");
        }
        String timezone = in.string("timezone", 64);
        if (timezone != null && !TimeZones.isValid(timezone)) {
            in.reject("timezone", "must be an IANA time zone such as Europe/Berlin");
        }
        var tags = Tags.read(in, "tags");
        PushTokens.Checked token = null;
        if (platform != null && rawToken != null) {
            try {
                token = PushTokens.check(platform, rawToken, allowInsecureWebEndpoints);
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
        if (platform != null && !platform.matches("ios|android|web")) {
            throw InvalidInput.of("platform", "must be one of ios, android, web");
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


    /** {@code external_user_id}: 1–190 characters, no control characters. Shared with the users routes. */
    static void checkUserId(JsonInput in, String field, String value) {
        if (value.isBlank()) in.reject(field, "must not be empty");
        else if (!NO_CONTROL.matcher(value).matches()) in.reject(field, "must not contain control characters");
    }

    private static String text(JsonInput in, String field, int max) {
        String value = in.string(field, max);
        if (value != null && !NO_CONTROL.matcher(value).matches()) {
            in.reject(field, "must not contain control characters");
            return null;
        }
        return value;
    }
}
