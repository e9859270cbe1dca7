package dev.pushservice.webhooks;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/**
 * The rules of a webhook create or update body, for every caller ({@code /v1/webhooks} and the
 * dashboard): read field by field, every problem in one {@link InvalidInput}. The URL rule needs
 * the service's settings and is checked by {@link WebhookService}.
 */
public final class WebhookInput {

    private WebhookInput() {
    }

    public static WebhookService.Changes create(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String url = in.requiredString("url", WebhookService.URL_MAX);
        String description = in.text("description", WebhookService.DESCRIPTION_MAX);
        List<String> events = in.value("events") == null ? reject(in, "events", "is required") : events(in);
        Boolean enabled = in.bool("enabled");
        in.check();
        return new WebhookService.Changes(url, true, description, events, enabled, false);
    }

    public static WebhookService.Changes update(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        for (String field : new String[] {"url", "events", "enabled", "rotate_secret"}) {
            if (in.has(field) && in.value(field) == null) in.reject(field, "must not be null (leave it out to keep the current value)");
        }
        String url = in.string("url", WebhookService.URL_MAX);
        String description = in.text("description", WebhookService.DESCRIPTION_MAX);
        List<String> events = in.value("events") == null ? null : events(in);
        Boolean enabled = in.bool("enabled");
        Boolean rotate = in.bool("rotate_secret");
        if (!in.hasErrors() && !in.has("url") && !in.has("description") && !in.has("events") && !in.has("enabled")
                && !in.has("rotate_secret")) {
            throw new InvalidInput("Nothing to change: give url, description, events, enabled or rotate_secret");
        }
        in.check();
        return new WebhookService.Changes(url, in.has("description"), description, events, enabled, Boolean.TRUE.equals(rotate));
    }

    private static <T> T reject(JsonInput in, String field, String message) {
        in.reject(field, message);
        return null;
    }

    /** {@code events}: a non-empty array of catalogue names or {@code *}; duplicates collapse. */
    private static List<String> events(JsonInput in) {
        JsonNode value = in.value("events");
        if (!value.isArray()) return reject(in, "events", "must be an array of event kinds");
        if (value.isEmpty()) return reject(in, "events", "must name at least one event kind (or \"*\" for all)");
        if (value.size() > WebhookService.EVENTS_MAX) return reject(in, "events", "must have at most " + WebhookService.EVENTS_MAX + " items");
        Set<String> kinds = new LinkedHashSet<>();
        List<String> bad = new ArrayList<>();
        for (int i = 0; i < value.size(); i++) {
            JsonNode item = value.get(i);
            if (!item.isString()) {
                in.reject("events[" + i + "]", "must be a string");
            } else if (!WebhookEvents.subscribable(item.asString())) {
                in.reject("events[" + i + "]", "is not a known event kind; see the event catalogue (or \"*\" for all)");
                bad.add(item.asString());
            } else {
                kinds.add(item.asString());
            }
        }
        return bad.isEmpty() ? List.copyOf(kinds) : null;
    }
}
