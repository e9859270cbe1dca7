package dev.pushservice.users;

import dev.pushservice.devices.Tags;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.TimeZones;
import java.util.Map;
import java.util.regex.Pattern;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
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

    private final UserService users;
    private final JsonMapper json;

    UserController(UserService users, JsonMapper json) {
        this.users = users;
        this.json = json;
    }

    @GetMapping
    @Authorize(Scope.DEVICES_WRITE)
    UserView get(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId) {
        return users.get(caller.appId(), checkedId(externalUserId));
    }

    @PatchMapping
    @Authorize(Scope.DEVICES_WRITE)
    UserView patch(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId, @RequestBody JsonNode body) {
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
        return users.patch(caller.appId(), id,
                new UserService.Patch(locale, in.has("locale"), timezone, in.has("timezone"), tags, properties));
    }

    @DeleteMapping
    @Authorize(Scope.DEVICES_WRITE)
    Map<String, Object> delete(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId) {
        String id = checkedId(externalUserId);
        int disabled = users.delete(caller.appId(), id);
        return Map.of("external_user_id", id, "deleted", true, "devices_disabled", disabled);
    }

    @PostMapping("/aliases")
    @Authorize(Scope.DEVICES_WRITE)
    ResponseEntity<Map<String, Object>> addAlias(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId,
                                                 @RequestBody JsonNode body) {
        String id = checkedId(externalUserId);
        UserView.Alias alias = alias(body);
        boolean moved = users.addAlias(caller.appId(), id, alias);
        return ResponseEntity.status(HttpStatus.CREATED)
                .body(Map.of("external_user_id", id, "label", alias.label(), "value", alias.value(), "moved", moved));
    }

    @DeleteMapping("/aliases")
    @Authorize(Scope.DEVICES_WRITE)
    Map<String, Object> deleteAlias(ApiPrincipal caller, @PathVariable("external_user_id") String externalUserId,
                                    @RequestBody(required = false) JsonNode body) {
        String id = checkedId(externalUserId);
        if (body == null) throw InvalidInput.of("label", "a JSON body with label and value is required");
        UserView.Alias alias = alias(body);
        boolean deleted = users.deleteAlias(caller.appId(), id, alias);
        return Map.of("external_user_id", id, "label", alias.label(), "value", alias.value(), "deleted", deleted);
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
            throw InvalidInput.of("external_user_id", "must be at most 190 characters");
        }
        if (externalUserId.isBlank() || !NO_CONTROL.matcher(externalUserId).matches()) {
            throw InvalidInput.of("external_user_id", "must be non-empty without control characters");
        }
        return externalUserId;
    }
}
