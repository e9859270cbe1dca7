package dev.pushservice.platform.rules;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.events.EventType;
import dev.pushservice.support.OpenApiContract;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * {@code openapi.yaml} states the same limits and value lists as {@link Limits}, {@link Platform},
 * {@link EventNames} and {@link EventType}: a limit changed on one side only fails here. Property
 * names that mean the same thing everywhere ({@code name}, {@code title}, {@code external_user_id},
 * …) are checked wherever they occur, so a new schema cannot slip by with another number.
 */
class LimitsMatchContractTests {

    private static final JsonNode DOC = OpenApiContract.get().document();
    private static final JsonNode SCHEMAS = DOC.path("components").path("schemas");

    /** A string property with one of these names has this {@code maxLength} wherever it is declared. */
    private static final Map<String, Integer> MAX_LENGTH_BY_PROPERTY = Map.ofEntries(
            Map.entry("push_token", Limits.PUSH_TOKEN),
            Map.entry("identity_token", Limits.IDENTITY_TOKEN),
            Map.entry("external_user_id", Limits.EXTERNAL_USER_ID),
            Map.entry("app_version", Limits.APP_VERSION),
            Map.entry("os_version", Limits.OS_VERSION),
            Map.entry("device_model", Limits.DEVICE_MODEL),
            Map.entry("locale", Limits.LOCALE),
            Map.entry("timezone", Limits.TIMEZONE),
            Map.entry("name", Limits.NAME),
            Map.entry("title", Limits.TITLE),
            Map.entry("body", Limits.BODY),
            Map.entry("image_url", Limits.IMAGE_URL),
            Map.entry("click_url", Limits.CLICK_URL),
            Map.entry("collapse_id", Limits.COLLAPSE_ID),
            Map.entry("sound", Limits.SOUND),
            Map.entry("category", Limits.CATEGORY),
            Map.entry("event_name", Limits.EVENT_NAME));

    @Test
    void everyNamedStringPropertyHasTheLimitOfItsRule() {
        List<String> problems = new ArrayList<>();
        List<String> checked = new ArrayList<>();
        walk(DOC, "", (path, property, schema) -> {
            Integer expected = MAX_LENGTH_BY_PROPERTY.get(property);
            if (expected == null || !schema.has("maxLength")) return;
            checked.add(path);
            if (schema.path("maxLength").asInt() != expected) {
                problems.add(path + ": maxLength " + schema.path("maxLength").asInt() + ", the rule says " + expected);
            }
        });
        assertThat(problems).isEmpty();
        // the walk found the schemas it is meant to check
        assertThat(checked).hasSizeGreaterThan(40);
        assertThat(DOC.path("components").path("parameters").path("external_user_id").path("schema").path("maxLength").asInt())
                .isEqualTo(Limits.EXTERNAL_USER_ID);
    }

    @Test
    void deviceRegistrationStatesEveryDeviceLimit() {
        JsonNode p = SCHEMAS.path("DeviceRegistration").path("properties");
        for (String field : List.of("push_token", "identity_token", "external_user_id", "app_version", "device_model",
                "os_version", "locale", "timezone")) {
            assertThat(p.path(field).path("maxLength").asInt()).as(field).isEqualTo(MAX_LENGTH_BY_PROPERTY.get(field));
        }
    }

    @Test
    void aliasTagAndDescriptionLimits() {
        for (String schema : List.of("Alias", "AliasInput")) {
            JsonNode p = SCHEMAS.path(schema).path("properties");
            assertThat(p.path("label").path("maxLength").asInt()).as(schema).isEqualTo(Limits.ALIAS_LABEL);
            assertThat(p.path("label").path("pattern").asString()).isEqualTo(keyPattern());
            assertThat(p.path("value").path("maxLength").asInt()).as(schema).isEqualTo(Limits.ALIAS_VALUE);
        }
        assertThat(SCHEMAS.path("TagKey").path("maxLength").asInt()).isEqualTo(Limits.TAG_KEY);
        assertThat(SCHEMAS.path("TagKey").path("pattern").asString()).isEqualTo(keyPattern());
        assertThat(SCHEMAS.path("TagsInput").path("maxProperties").asInt()).isEqualTo(Limits.TAGS);
        assertThat(SCHEMAS.path("TagsInput").path("additionalProperties").path("maxLength").asInt()).isEqualTo(Limits.TAG_VALUE);
        for (String schema : List.of("SegmentCreate", "SegmentUpdate")) {
            assertThat(SCHEMAS.path(schema).path("properties").path("description").path("maxLength").asInt())
                    .as(schema).isEqualTo(Limits.DESCRIPTION);
        }
    }

    @Test
    void notificationLimits() {
        JsonNode p = SCHEMAS.path("NotificationCreate").path("properties");
        assertThat(p.path("name").path("maxLength").asInt()).isEqualTo(Limits.NOTIFICATION_NAME);
        assertThat(p.path("actions").path("maxItems").asInt()).isEqualTo(Limits.ACTIONS);
        assertThat(p.path("ttl").path("minimum").asInt()).isEqualTo(Limits.TTL_MIN);
        assertThat(p.path("ttl").path("maximum").asInt()).isEqualTo(Limits.TTL_MAX);
        assertThat(p.path("included_segment_ids").path("maxItems").asInt()).isEqualTo(Limits.SEGMENT_IDS);
        assertThat(p.path("excluded_segment_ids").path("maxItems").asInt()).isEqualTo(Limits.SEGMENT_IDS);
        JsonNode action = SCHEMAS.path("NotificationAction").path("properties");
        assertThat(action.path("id").path("maxLength").asInt()).isEqualTo(Limits.ACTION_ID);
        assertThat(action.path("text").path("maxLength").asInt()).isEqualTo(Limits.ACTION_TEXT);
        assertThat(action.path("icon").path("maxLength").asInt()).isEqualTo(Limits.ACTION_ICON);
    }

    @Test
    void deliveryControlLimits() {
        for (String schema : List.of("FrequencyCapSettings", "FrequencyCapUpdate")) {
            JsonNode p = SCHEMAS.path(schema).path("properties");
            assertThat(p.path("limit").path("minimum").asInt()).as(schema).isEqualTo(Limits.FREQUENCY_CAP_LIMIT_MIN);
            assertThat(p.path("limit").path("maximum").asInt()).as(schema).isEqualTo(Limits.FREQUENCY_CAP_LIMIT_MAX);
            assertThat(p.path("window_seconds").path("minimum").asInt()).as(schema).isEqualTo(Limits.FREQUENCY_CAP_WINDOW_MIN);
            assertThat(p.path("window_seconds").path("maximum").asInt()).as(schema).isEqualTo(Limits.FREQUENCY_CAP_WINDOW_MAX);
        }
        for (String schema : List.of("NotificationDefaults", "NotificationDefaultsUpdate")) {
            JsonNode ttl = SCHEMAS.path(schema).path("properties").path("ttl");
            assertThat(ttl.path("minimum").asInt()).as(schema).isEqualTo(Limits.TTL_MIN);
            assertThat(ttl.path("maximum").asInt()).as(schema).isEqualTo(Limits.TTL_MAX);
        }
    }

    @Test
    void analyticsAndJourneyLimits() {
        List<Integer> daysMaxima = new ArrayList<>();
        walk(DOC, "", (path, property, schema) -> {
            if (property.equals("days") && schema.has("maximum")) daysMaxima.add(schema.path("maximum").asInt());
        });
        for (JsonNode parameter : DOC.path("paths").path("/v1/analytics").path("get").path("parameters")) {
            if (parameter.path("name").asString().equals("days")) daysMaxima.add(parameter.path("schema").path("maximum").asInt());
        }
        assertThat(daysMaxima).hasSize(2).containsOnly(Limits.ANALYTICS_DAYS);

        assertThat(SCHEMAS.path("NodeId").path("pattern").asString()).contains("{1," + Limits.JOURNEY_NODE_ID + "}");
        List<Integer> waits = new ArrayList<>();
        List<Integer> reentry = new ArrayList<>();
        walk(DOC, "", (path, property, schema) -> {
            if (property.equals("seconds") && path.contains("JourneyNode")) {
                assertThat(schema.path("minimum").asLong()).isEqualTo(Limits.WAIT_MIN.toSeconds());
                waits.add(schema.path("maximum").asInt());
            }
            // requests clamp instead of refusing, so only the read models state a maximum
            if (property.equals("reentry_limit") && schema.has("maximum")) reentry.add(schema.path("maximum").asInt());
        });
        assertThat(waits).containsExactly((int) Limits.WAIT_MAX.toSeconds());
        assertThat(reentry).hasSize(2).containsOnly(Limits.REENTRY_LIMIT_MAX);
        assertThat(SCHEMAS.path("JourneyDefinition").path("properties").path("nodes").path("maxProperties").asInt())
                .isEqualTo(Limits.JOURNEY_NODES);
    }

    @Test
    void eventNamesFollowOneRuleAtIngestAndInFilters() {
        List<String> found = new ArrayList<>();
        walk(DOC, "", (path, property, schema) -> {
            // request schemas state the rule; read models only say "string"
            if (property.equals("event_name") && schema.has("maxLength")) {
                found.add(path);
                assertThat(schema.path("pattern").asString()).as(path).isEqualTo(keyPattern());
            }
        });
        assertThat(found).as("EventSubmission and the journey trigger").hasSize(2);
        String field = SCHEMAS.path("SegmentCondition").path("properties").path("field").path("pattern").asString();
        assertThat(field).contains("custom_event\\.[A-Za-z0-9._-]{1," + Limits.EVENT_NAME + "}")
                .contains("tag\\.[A-Za-z0-9._-]{1," + Limits.TAG_KEY + "}");

        for (String ok : List.of("checkout", "Purchase.completed_v2-A", "x".repeat(Limits.EVENT_NAME))) {
            assertThat(EventNames.isValid(ok)).as(ok).isTrue();
        }
        for (String bad : List.of("", "x".repeat(Limits.EVENT_NAME + 1), "sign up", "a/b", "é", "a\u0001")) {
            assertThat(EventNames.isValid(bad)).as(bad).isFalse();
        }
    }

    @Test
    void enumerationsAreTheJavaOnes() {
        assertThat(strings(SCHEMAS.path("Platform").path("enum")))
                .containsExactlyElementsOf(Arrays.stream(Platform.values()).map(Platform::value).toList());
        assertThat(strings(SCHEMAS.path("EventType").path("enum")))
                .containsExactlyElementsOf(Arrays.stream(EventType.values()).map(EventType::value).toList());
        String field = SCHEMAS.path("SegmentCondition").path("properties").path("field").path("pattern").asString();
        Matcher m = Pattern.compile("event\\\\\\.\\(([a-z_|]+)\\)").matcher(field);
        assertThat(m.find()).as(field).isTrue();
        Set<String> filterTypes = new TreeSet<>(List.of(m.group(1).split("\\|")));
        assertThat(filterTypes).isEqualTo(new TreeSet<>(dev.pushservice.segments.FilterParser.EVENT_TYPES));
        assertThat(filterTypes).doesNotContain(EventType.CUSTOM.value());
    }

    @Test
    void textRules() {
        assertThat(TextRules.hasControl("tab\there")).isTrue();
        assertThat(TextRules.hasControl("del\u007f")).isTrue();
        assertThat(TextRules.hasControl("c1\u0085")).isTrue();
        assertThat(TextRules.hasControl("Zoë 🎉 日本")).isFalse();
        assertThat(TextRules.hasControlBesidesLineBreaks("two\nlines\r\n\tindented")).isFalse();
        assertThat(TextRules.hasControlBesidesLineBreaks("bell\u0007")).isTrue();
        assertThat(TextRules.textProblem(" ", Limits.NAME)).isEqualTo("must not be empty");
        assertThat(TextRules.textProblem("n".repeat(Limits.NAME + 1), Limits.NAME)).isEqualTo("must be at most 190 characters");
        assertThat(TextRules.textProblem("a\u0000b", Limits.NAME)).isEqualTo(TextRules.NO_CONTROL);
        assertThat(TextRules.textProblem("n".repeat(Limits.NAME), Limits.NAME)).isNull();
        assertThat(Locales.isValid("pt_BR")).isTrue();
        assertThat(Locales.isValid("zh-Hant-TW")).isTrue();
        assertThat(Locales.isValid("english")).isFalse();
        assertThat(Locales.isValid("en-abcdefgh-abcdefgh")).isTrue();
        assertThat(Locales.isValid("en-abcdefgh-abcdefgh-a")).as("over " + Limits.LOCALE + " characters").isFalse();
        assertThat(TimeZones.isValid("Europe/Berlin")).isTrue();
        assertThat(TimeZones.isValid("UTC")).isTrue();
        assertThat(TimeZones.isValid("+02:00")).isFalse();
        assertThat(Platform.fromValue("ios")).contains(Platform.IOS);
        assertThat(Platform.fromValue("IOS")).isEmpty();
        assertThat(Platform.RULE).isEqualTo("must be one of ios, android, web");
    }

    private static String keyPattern() {
        return "^[A-Za-z0-9._-]+$";
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }

    private interface PropertyVisitor {
        void visit(String path, String property, JsonNode schema);
    }

    /** Visits every entry of every {@code properties} object in the document, at any depth. */
    private static void walk(JsonNode node, String path, PropertyVisitor visitor) {
        if (node.isObject()) {
            for (var e : node.properties()) {
                String here = path + "/" + e.getKey();
                if (e.getKey().equals("properties") && e.getValue().isObject()) {
                    for (var p : e.getValue().properties()) visitor.visit(here + "/" + p.getKey(), p.getKey(), p.getValue());
                }
                walk(e.getValue(), here, visitor);
            }
        } else if (node.isArray()) {
            for (int i = 0; i < node.size(); i++) walk(node.get(i), path + "/" + i, visitor);
        }
    }
}
