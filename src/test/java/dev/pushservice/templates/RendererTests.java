package dev.pushservice.templates;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The parser and the renderer on their own: no Spring, no database. */
class RendererTests {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    static CompiledText parse(String text) {
        try {
            return CompiledText.parse(text);
        } catch (PlaceholderException e) {
            throw new AssertionError(text + ": " + e.getMessage(), e);
        }
    }

    static Renderer.Values values() {
        return new Renderer.Values("user-7", Map.of("first_name", "Ada", "app.plan", "pro", "empty", ""),
                JSON.readTree("""
                        {"age":42,"ratio":3.5,"vip":true,"nothing":null,"name":"Ada Lovelace",
                         "address":{"city":"London","zip":"N1"},"langs":["en","fr"],"flat":"x"}"""),
                JSON.readTree("{\"code\":\"SAVE10\",\"order\":{\"id\":991},\"braces\":\"{{ tags.first_name }}\"}"));
    }

    static String render(String text) {
        return Renderer.render(parse(text), values());
    }

    @Test
    void everySourceRenders() {
        assertThat(render("Hi {{ tags.first_name }}, you are {{external_user_id}}"))
                .isEqualTo("Hi Ada, you are user-7");
        assertThat(render("{{ properties.name }} from {{\tproperties.address.city\t}}")).isEqualTo("Ada Lovelace from London");
        assertThat(render("Code {{ template.code }} for order {{ template.order.id }}")).isEqualTo("Code SAVE10 for order 991");
        assertThat(render("{{ tags.app.plan }}")).as("a tag key may contain dots").isEqualTo("pro");
    }

    @Test
    void textWithoutPlaceholdersIsReturnedAsIs() {
        String text = "Plain { text } with single braces";
        CompiledText compiled = parse(text);
        assertThat(compiled.isConstant()).isTrue();
        assertThat(Renderer.render(compiled, values())).isSameAs(text);
        assertThat(render("")).isEmpty();
    }

    @Test
    void missingValuesRenderEmpty() {
        assertThat(render("[{{ tags.nope }}][{{ properties.nope }}][{{ template.nope }}][{{ properties.nothing }}]"))
                .isEqualTo("[][][][]");
        assertThat(render("[{{ properties.flat.deeper }}][{{ properties.address.city.more }}][{{ tags.empty }}]"))
                .as("a path through a non-object is missing").isEqualTo("[][][]");
        assertThat(Renderer.render(parse("Hi {{ external_user_id }}{{ tags.x }}{{ properties.a }}{{ template.b }}!"),
                Renderer.Values.NONE)).isEqualTo("Hi !");
    }

    @Test
    void nonStringValuesRenderAsJsonText() {
        assertThat(render("{{ properties.age }}|{{ properties.ratio }}|{{ properties.vip }}"))
                .isEqualTo("42|3.5|true");
        assertThat(render("{{ properties.address }}")).isEqualTo("{\"city\":\"London\",\"zip\":\"N1\"}");
        assertThat(render("{{ properties.langs }}")).isEqualTo("[\"en\",\"fr\"]");
    }

    @Test
    void renderedValuesAreNeitherEscapedNorParsedAgain() {
        assertThat(render("{{ template.braces }}")).isEqualTo("{{ tags.first_name }}");
        Renderer.Values html = new Renderer.Values("<b>&\"x\"</b>", Map.of(), null, null);
        assertThat(Renderer.render(parse("{{ external_user_id }}"), html)).isEqualTo("<b>&\"x\"</b>");
    }

    @Test
    void placeholdersAreRecognisedWithAndWithoutSpacesAndRepeated() {
        assertThat(render("{{tags.first_name}}{{  tags.first_name  }}{{ tags.first_name}}")).isEqualTo("AdaAdaAda");
        assertThat(parse("a{{ tags.first_name }}b{{ external_user_id }}c").placeholders())
                .extracting(Placeholder::toString).containsExactly("{{ tags.first_name }}", "{{ external_user_id }}");
        assertThat(render("{{ tags.first_name }}}")).as("a third brace is plain text").isEqualTo("Ada}");
        assertThat(render("{ {{ tags.first_name }} }")).isEqualTo("{ Ada }");
    }

    @Test
    void brokenSyntaxIsRefusedWithThePosition() {
        record Case(String text, int position, String says) {
        }
        for (Case c : List.of(
                new Case("{{", 1, "not closed"),
                new Case("Hi {{ tags.first_name", 4, "not closed"),
                new Case("Hi {{ tags.a {{ tags.b }}", 4, "not closed"),
                new Case("Hi }} there", 4, "no opening"),
                new Case("{ tags.a }}", 10, "no opening"),
                new Case("ok {{ tags.a }} then }}", 22, "no opening"),
                new Case("{{}}", 1, "empty placeholder"),
                new Case("x {{ }}", 3, "empty placeholder"),
                new Case("{{ nope.x }}", 1, "unknown placeholder source 'nope'"),
                new Case("{{ Tags.x }}", 1, "unknown placeholder source 'Tags'"),
                new Case("{{ name }}", 1, "unknown placeholder source 'name'"),
                new Case("{{ tags. }}", 1, "has no key"),
                new Case("{{ tags }}", 1, "has no key"),
                new Case("{{ properties. }}", 1, "has no key"),
                new Case("{{ template }}", 1, "has no key"),
                new Case("{{ external_user_id.x }}", 1, "takes no key"),
                new Case("{{ tags.a b }}", 1, "tag keys"),
                new Case("{{ tags.ü }}", 1, "tag keys"),
                new Case("{{ properties.a..b }}", 1, "properties keys"),
                new Case("{{ properties.a. }}", 1, "properties keys"),
                new Case("{{ template.a$b }}", 1, "template keys"),
                new Case("{{{ tags.a }}}", 1, "unknown placeholder source '{ tags'"))) {
            assertThatThrownBy(() -> CompiledText.parse(c.text()))
                    .as(c.text())
                    .isInstanceOfSatisfying(PlaceholderException.class, e -> {
                        assertThat(e.getMessage()).contains(c.says()).contains("character " + c.position());
                        assertThat(e.position()).isEqualTo(c.position());
                    });
        }
    }

    @Test
    void keyLengthsAreBounded() {
        assertThat(parse("{{ tags." + "k".repeat(128) + " }}").placeholders()).hasSize(1);
        assertThatThrownBy(() -> CompiledText.parse("{{ tags." + "k".repeat(129) + " }}")).hasMessageContaining("1 to 128");
        assertThat(parse("{{ properties." + "p".repeat(256) + " }}").placeholders()).hasSize(1);
        assertThatThrownBy(() -> CompiledText.parse("{{ properties." + "p".repeat(257) + " }}")).hasMessageContaining("at most 256");
    }

    @Test
    void dataStringsAreTemplatesAtAnyDepthAndConstantPartsAreShared() {
        JsonNode data = JSON.readTree("""
                {"screen":"home","user":"{{ external_user_id }}","n":5,
                 "deep":{"list":["a","{{ tags.first_name }}",{"age":"{{ properties.age }}"}],"fixed":{"k":"v"}}}""");
        CompiledJson compiled = CompiledJson.compile(data, "data", (f, m) -> {
            throw new AssertionError(f + ": " + m);
        });
        assertThat(compiled.isConstant()).isFalse();
        JsonNode out = Renderer.render(compiled, values());
        assertThat(out).isEqualTo(JSON.readTree("""
                {"screen":"home","user":"user-7","n":5,
                 "deep":{"list":["a","Ada",{"age":"42"}],"fixed":{"k":"v"}}}"""));
        assertThat(out.path("deep").path("fixed")).as("constant subtree shared").isSameAs(data.path("deep").path("fixed"));
        assertThat(data.path("user").stringValue()).as("the source is untouched").isEqualTo("{{ external_user_id }}");

        JsonNode constant = JSON.readTree("{\"a\":[1,\"b\"]}");
        CompiledJson plain = CompiledJson.compile(constant, "data", (f, m) -> {
            throw new AssertionError(f + ": " + m);
        });
        assertThat(plain.isConstant()).isTrue();
        assertThat(Renderer.render(plain, values())).isSameAs(constant);
    }

    @Test
    void everyBadDataStringIsReportedWithItsPath() {
        JsonNode data = JSON.readTree("{\"ok\":\"{{ tags.a }}\",\"links\":[\"x\",\"{{ nope.y }}\"],\"deep\":{\"k\":\"}}\"}}");
        Map<String, String> problems = new LinkedHashMap<>();
        assertThat(CompiledJson.compile(data, "data", problems::put)).isNull();
        assertThat(problems.keySet()).containsExactly("data.links[1]", "data.deep.k");
    }

    @Test
    void contentCompilesAndRendersEveryField() {
        TemplateContent content = new TemplateContent("Hi {{ tags.first_name }}", "Your code: {{ template.code }}",
                "https://example.com/u/{{ external_user_id }}", JSON.readTree("{\"c\":\"{{ template.code }}\"}"), "time_sensitive");
        List<String> problems = new ArrayList<>();
        CompiledContent compiled = CompiledContent.compile(content, (f, m) -> problems.add(f));
        assertThat(problems).isEmpty();
        RenderedContent out = Renderer.render(compiled, values());
        assertThat(out).isEqualTo(new RenderedContent("Hi Ada", "Your code: SAVE10", "https://example.com/u/user-7",
                JSON.readTree("{\"c\":\"SAVE10\"}"), "time_sensitive"));

        TemplateContent bad = new TemplateContent("{{", "{{ tags. }}", "{{ nope.x }}", JSON.readTree("{\"a\":\"{{}}\"}"), null);
        Map<String, String> reported = new LinkedHashMap<>();
        assertThat(CompiledContent.compile(bad, reported::put)).isNull();
        assertThat(reported.keySet()).containsExactly("title", "body", "click_url", "data.a");
    }

    /** Prints renders per second of a typical title + body; a measurement, never an assertion on time. */
    @Test
    void renderThroughput() {
        CompiledContent content = CompiledContent.compile(new TemplateContent(
                "Hi {{ tags.first_name }}, your {{ properties.address.city }} deal",
                "Use code {{ template.code }} before Sunday. Order {{ template.order.id }} ships to {{ properties.name }}.",
                "https://example.com/o/{{ template.order.id }}?u={{ external_user_id }}", null, null), (f, m) -> {
            throw new AssertionError(f + ": " + m);
        });
        Renderer.Values v = values();
        int n = 2_000_000;
        long chars = 0;
        for (int i = 0; i < 200_000; i++) chars += Renderer.render(content, v).body().length(); // warm-up
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) chars += Renderer.render(content, v).title().length();
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("Renderer: %,d renders (title, body, click_url; 7 placeholders) in %.2f s = %,.0f renders/s%n",
                n, seconds, n / seconds);
        assertThat(Renderer.render(content, v).title()).isEqualTo("Hi Ada, your London deal");
        assertThat(chars).isPositive();
    }
}
