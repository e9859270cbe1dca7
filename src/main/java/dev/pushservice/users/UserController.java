package dev.pushservice.users;

import dev.pushservice.devices.Tags;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Locales;
import dev.pushservice.platform.rules.TextRules;
import dev.pushservice.platform.rules.TimeZones;
import java.util.Map;
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
        String locale = in.string("locale", Limits.LOCALE);
        if (locale != null && !Locales.isValid(locale)) in.reject("locale", Locales.RULE);
        String timezone = in.string("timezone", Limits.TIMEZONE);
        if (timezone != null && !TimeZones.isValid(timezone)) in.reject("timezone", TimeZones.RULE);
        Map<String, String> tags = Tags.read(in, "tags");
        if (in.has("tags") && in.value("tags") == null) in.reject("tags", "must be an object (send {} to clear)");
        Map<String, Object> properties = null;
        JsonNode props = in.value("properties");
        if (in.has("properties") && props == null) in.reject("properties", "must be an object (send {} to clear)");
        if (props != null) {
            if (!props.isObject()) in.reject("properties", "must be an object");
            else if (json.writeValueAsBytes(props).length > Limits.USER_PROPERTIES_BYTES) {
                in.reject("properties", "must be at most " + Limits.USER_PROPERTIES_BYTES + " bytes as JSON");
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
        String label = in.requiredString("label", Limits.ALIAS_LABEL);
        if (label != null && !TextRules.isKey(label, Limits.ALIAS_LABEL)) in.reject("label", TextRules.keyRule(Limits.ALIAS_LABEL));
        String value = in.requiredText("value", Limits.ALIAS_VALUE);
        in.check();
        return new UserView.Alias(label, value);
    }

    private static String checkedId(String externalUserId) {
        String problem = TextRules.textProblem(externalUserId, Limits.EXTERNAL_USER_ID);
        if (problem != null) throw InvalidInput.of("external_user_id", problem);
        return externalUserId;
    }
}
