package dev.pushservice.users;

import dev.pushservice.devices.DeviceService;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.error.ApiException;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.TimeZones;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PatchMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code /v1/users/{external_user_id}} and its aliases. The path value arrives URL-decoded exactly
 * once ({@code a%2Fb} is the user {@code a/b}). PATCH and alias creation create the user when it
 * does not exist yet, so a backend can set tags before the first device registers.
 */
@RestController
@RequestMapping("/v1/users/{external_user_id}")
class UserController {

    private static final Pattern LABEL = Pattern.compile("[A-Za-z0-9._-]{1,80}");
    private static final Pattern LOCALE = Pattern.compile("[A-Za-z]{2,3}([_-][A-Za-z0-9]{1,8})*");
    private static final Pattern NO_CONTROL = Pattern.compile("[^\\p{Cc}]*");
    /** Largest {@code properties} object, serialized. */
    static final int MAX_PROPERTIES_BYTES = 64 * 1024;

    private final UserRepository users;
    private final DeviceService devices;
    private final JsonMapper json;

    UserController(UserRepository users, DeviceService devices, JsonMapper json) {
        this.users = users;
        this.devices = devices;
        this.json = json;
    }

    @GetMapping
    @Authorize(Scope.DEVICES_WRITE)
    UserView get(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId) {
        return view(caller.appId(), checkedId(externalUserId));
    }

    @PatchMapping
    @Authorize(Scope.DEVICES_WRITE)
    @Transactional
    public UserView patch(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId, @RequestBody JsonNode body) {
        String id = checkedId(externalUserId);
        JsonInput in = JsonInput.object(body);
        String locale = in.string("locale", 20);
        if (locale != null && !LOCALE.matcher(locale).matches()) {
            in.reject("locale", "must be a language tag such as en, en-US or pt_BR");
        }
        String timezone = in.string("timezone", 64);
        if (timezone != null && !TimeZones.isValid(timezone)) {
            in.reject("timezone", "must be an IANA time zone such as Europe/Berlin");
        }
        Map<String, String> tags = Tags.read(in, "tags");
        if (in.has("tags") && in.value("tags") == null) in.reject("tags", "must be an object (send {} to clear)");
        Map<String, Object> properties = null;
        JsonNode props = in.value("properties");
        if (in.has("properties") && props == null) in.reject("properties", "must be an object (send {} to clear)");
        if (props != null) {
            if (!props.isObject()) in.reject("properties", "must be an object");
            else if (json.writeValueAsBytes(props).length > MAX_PROPERTIES_BYTES) {
                in.reject("properties", "must be at most " + MAX_PROPERTIES_BYTES + " bytes as JSON");
            } else {
                properties = json.convertValue(props, Map.class);
            }
        }
        in.check();
        users.patch(caller.appId(), id, locale, in.has("locale"), timezone, in.has("timezone"), tags, properties);
        return view(caller.appId(), id);
    }

    @DeleteMapping
    @Authorize(Scope.DEVICES_WRITE)
    @Transactional
    public Map<String, Object> delete(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId) {
        String id = checkedId(externalUserId);
        int disabled = users.delete(caller.appId(), id).orElseThrow(() -> ApiException.notFound("User"));
        return Map.of("external_user_id", id, "deleted", true, "devices_disabled", disabled);
    }

    @PostMapping("/aliases")
    @Authorize(Scope.DEVICES_WRITE)
    @Transactional
    public ResponseEntity<Map<String, Object>> addAlias(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId,
                                                 @RequestBody JsonNode body) {
        String id = checkedId(externalUserId);
        UserView.Alias alias = alias(body);
        UUID userId = users.upsertNamed(caller.appId(), id, Map.of());
        boolean moved = users.putAlias(caller.appId(), userId, alias.label(), alias.value());
        return ResponseEntity.status(HttpStatus.CREATED)
                .body(Map.of("external_user_id", id, "label", alias.label(), "value", alias.value(), "moved", moved));
    }

    @DeleteMapping("/aliases")
    @Authorize(Scope.DEVICES_WRITE)
    @Transactional
    public Map<String, Object> deleteAlias(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId,
                                    @RequestBody(required = false) JsonNode body) {
        String id = checkedId(externalUserId);
        if (body == null) throw ApiException.invalid("label", "a JSON body with label and value is required");
        UserView.Alias alias = alias(body);
        UUID userId = users.find(caller.appId(), id).map(UserRepository.UserRow::id)
                .orElseThrow(() -> ApiException.notFound("User"));
        boolean deleted = users.deleteAlias(caller.appId(), userId, alias.label(), alias.value());
        return Map.of("external_user_id", id, "label", alias.label(), "value", alias.value(), "deleted", deleted);
    }

    private UserView view(UUID appId, String externalUserId) {
        UserRepository.UserRow row = users.find(appId, externalUserId).orElseThrow(() -> ApiException.notFound("User"));
        var aliases = users.aliases(appId, row.id()).stream().map(a -> new UserView.Alias(a.label(), a.value())).toList();
        return new UserView(row.externalUserId(), row.locale(), row.timezone(), json.readTree(row.tags()),
                json.readTree(row.properties()), aliases, devices.ofUser(appId, row.id()),
                row.createdAt().toInstant(), row.updatedAt().toInstant());
    }

    private static UserView.Alias alias(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String label = in.requiredString("label", 80);
        if (label != null && !LABEL.matcher(label).matches()) {
            in.reject("label", "must be 1 to 80 letters, digits, '.', '_' or '-'");
        }
        String value = in.requiredString("value", 190);
        if (value != null && !NO_CONTROL.matcher(value).matches()) in.reject("value", "must not contain control characters");
        in.check();
        return new UserView.Alias(label, value);
    }

    private static String checkedId(String externalUserId) {
        if (externalUserId.length() > 190) {
            throw ApiException.invalid("external_user_id", "must be at most 190 characters");
        }
        if (externalUserId.isBlank() || !NO_CONTROL.matcher(externalUserId).matches()) {
            throw ApiException.invalid("external_user_id", "must be non-empty without control characters");
        }
        return externalUserId;
    }
}
