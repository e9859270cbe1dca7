package dev.pushservice.templates;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/**
 * The rules of a template create or update body, in one place for every caller ({@code /v1/templates}
 * and the dashboard, which builds the same body from its form): checked whole, every problem in one
 * {@link InvalidInput}.
 */
public final class TemplateInput {

    static final Set<String> CREATE_STATUSES = Set.of("draft", "published");
    static final Set<String> STATUSES = Set.of("draft", "published", "archived");

    private TemplateInput() {
    }

    /** A valid create body; {@code status} defaults to draft. */
    public record Create(String name, String status, TemplateContent content) {
    }

    /** A valid update body: null parts keep their current value. */
    public record Update(String name, String status, TemplateContent content) {
    }

    public static Create create(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = in.requiredText("name", Limits.NAME);
        String status = in.string("status", 20);
        if (status != null && !CREATE_STATUSES.contains(status)) {
            in.reject("status", "must be draft or published on creation");
        }
        TemplateContent content = null;
        if (in.value("content") == null) in.reject("content", "is required");
        else content = in.nested("content").map(TemplateContent::read).orElse(null);
        in.check();
        return new Create(name, status == null ? TemplateService.DRAFT : status, content);
    }

    public static Update update(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        for (String field : new String[] {"name", "status", "content"}) {
            if (in.has(field) && in.value(field) == null) in.reject(field, "must not be null (leave it out to keep the current value)");
        }
        String name = in.value("name") != null ? in.requiredText("name", Limits.NAME) : null;
        String status = in.string("status", 20);
        if (status != null && !STATUSES.contains(status)) in.reject("status", "must be draft, published or archived");
        TemplateContent content = in.nested("content").map(TemplateContent::read).orElse(null);
        if (!in.hasErrors() && !in.has("name") && !in.has("status") && !in.has("content")) {
            throw new InvalidInput("Nothing to change: give name, status or content");
        }
        in.check();
        return new Update(name, status, content);
    }
}
