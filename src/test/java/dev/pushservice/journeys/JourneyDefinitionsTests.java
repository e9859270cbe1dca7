package dev.pushservice.journeys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The definition reader on its own: every form rule of the spec's "Journey" and "Node types" is a
 * violation naming the path of the offending value relative to the request body, all of them at once.
 */
class JourneyDefinitionsTests {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String WEBHOOK = "6f1c2b9e-1d1a-4c55-9a53-6a4f1c1e2b3d";

    /** Uses every node type; every node is reachable and the only cycle passes a wait. */
    static ObjectNode valid() {
        return (ObjectNode) JSON.readTree(q("""
                {'trigger':{'type':'custom_event','event_name':'signed_up'},
                 'start':'welcome',
                 'nodes':{
                   'welcome':{'type':'push','content':{'title':'Hi {{external_user_id}}','body':'Welcome'},'next':'pause'},
                   'pause':{'type':'wait','seconds':60,'next':'later'},
                   'later':{'type':'wait_until','at':'2026-12-01T09:00:00+01:00','next':'check'},
                   'check':{'type':'branch','filter':{'field':'platform','operator':'eq','value':'ios'},'yes':'s1','no':'hook'},
                   's1':{'type':'split','branches':[{'weight':30,'next':'g'},{'weight':70,'next':'hook'}]},
                   'hook':{'type':'webhook','webhook_id':'%s','next':'g'},
                   'g':{'type':'goal','name':'converted','next':'done'},
                   'done':{'type':'exit'}}}""".formatted(WEBHOOK)));
    }

    static String q(String s) {
        return s.replace('\'', '"');
    }

    /** A copy of {@code base} with the value at {@code path} (dots and [i]) set to {@code json}, or removed when null. */
    static ObjectNode with(ObjectNode base, String path, String json) {
        ObjectNode copy = base.deepCopy();
        String[] parts = path.split("\\.");
        JsonNode parent = copy;
        for (int i = 0; i < parts.length - 1; i++) parent = step(parent, parts[i]);
        String last = parts[parts.length - 1];
        if (last.endsWith("]")) {
            ArrayNode array = (ArrayNode) step(parent, last.substring(0, last.indexOf('[')));
            int index = Integer.parseInt(last.substring(last.indexOf('[') + 1, last.length() - 1));
            if (json == null) array.remove(index);
            else array.set(index, JSON.readTree(q(json)));
        } else if (json == null) {
            ((ObjectNode) parent).remove(last);
        } else {
            ((ObjectNode) parent).set(last, JSON.readTree(q(json)));
        }
        return copy;
    }

    private static JsonNode step(JsonNode node, String part) {
        if (part.endsWith("]")) {
            JsonNode array = node.get(part.substring(0, part.indexOf('[')));
            return array.get(Integer.parseInt(part.substring(part.indexOf('[') + 1, part.length() - 1)));
        }
        return node.get(part);
    }

    static List<String> violations(JsonNode definition) {
        InvalidInput e = catchThrowableOfType(InvalidInput.class, () -> JourneyDefinitions.read(definition));
        assertThat(e).as("a violation for %s", definition).isNotNull();
        return e.violations().stream().map(Violation::field).toList();
    }

    record Case(String path, String value, List<String> fields) {
        Case(String path, String value, String field) {
            this(path, value, List.of(field));
        }
    }

    @Test
    void aDefinitionWithEveryNodeTypeReadsAndRoundTrips() {
        JourneyDefinition d = JourneyDefinitions.read(valid());

        assertThat(d.trigger()).isEqualTo(new JourneyTrigger.CustomEvent("signed_up"));
        assertThat(d.start()).isEqualTo("welcome");
        assertThat(d.nodes().keySet()).containsExactly("welcome", "pause", "later", "check", "s1", "hook", "g", "done");
        assertThat(d.node("pause")).isEqualTo(new JourneyNode.Wait(60, "later"));
        assertThat(((JourneyNode.WaitUntil) d.node("later")).at()).hasToString("2026-12-01T08:00:00Z");
        assertThat(d.node("s1")).isEqualTo(new JourneyNode.Split(List.of(new JourneyNode.SplitBranch(30, "g"),
                new JourneyNode.SplitBranch(70, "hook"))));
        assertThat(d.node("hook")).isEqualTo(new JourneyNode.Webhook(UUID.fromString(WEBHOOK), "g"));
        assertThat(d.node("g")).isEqualTo(new JourneyNode.Goal("converted", "done"));
        assertThat(d.node("done")).isEqualTo(new JourneyNode.Exit());
        JourneyNode.Push push = (JourneyNode.Push) d.node("welcome");
        assertThat(push.title()).isEqualTo("Hi {{external_user_id}}");
        assertThat(push.body()).isEqualTo("Welcome");
        assertThat(push.priority()).isNull();
        assertThat(push.next()).isEqualTo("pause");
        assertThat(JourneyDefinitions.warnings(d)).isEmpty();

        ObjectNode json = JourneyDefinitions.toJson(d);
        assertThat(json.at("/nodes/later/at").stringValue()).isEqualTo("2026-12-01T08:00:00Z");
        assertThat(json.at("/nodes/check/filter")).isEqualTo(JSON.readTree(q("{'field':'platform','operator':'eq','value':'ios'}")));
        assertThat(JourneyDefinitions.toJson(JourneyDefinitions.read(json))).isEqualTo(json);
        assertThat(JourneyDefinitions.read(json)).isEqualTo(d);
    }

    @Test
    void optionalValuesAreKeptAndUnknownFieldsDropped() {
        ObjectNode d = with(valid(), "nodes.welcome", """
                {'type':'push','content':{'title':'T','body':'B','image_url':'https://x.test/i.png',
                 'click_url':'https://x.test/c','data':{'k':[1,2]},'subtitle':'dropped'},
                 'priority':'transactional','interruption_level':'time_sensitive','next':'pause','color':'red'}""");
        d = with(d, "nodes.g", "{'type':'goal'}");
        JourneyDefinition read = JourneyDefinitions.read(d);

        JourneyNode.Push push = (JourneyNode.Push) read.node("welcome");
        assertThat(push.priority()).isEqualTo("transactional");
        assertThat(push.interruptionLevel()).isEqualTo("time_sensitive");
        assertThat(push.content()).isEqualTo(JSON.readTree(q(
                "{'title':'T','body':'B','image_url':'https://x.test/i.png','click_url':'https://x.test/c','data':{'k':[1,2]}}")));
        assertThat(read.node("g")).isEqualTo(new JourneyNode.Goal(null, null));
        ObjectNode json = JourneyDefinitions.toJson(read);
        assertThat(json.at("/nodes/welcome/color").isMissingNode()).isTrue();
        assertThat(json.at("/nodes/g")).isEqualTo(JSON.readTree(q("{'type':'goal'}")));
        // "done" is no longer reached: a warning, not a violation
        assertThat(JourneyDefinitions.warnings(read)).extracting(Violation::field).containsExactly("definition.nodes.done");
    }

    @Test
    void aSegmentTriggerNamesTheSegment() {
        UUID segment = UUID.randomUUID();
        JourneyDefinition d = JourneyDefinitions.read(with(valid(), "trigger", "{'type':'segment','segment_id':'" + segment + "'}"));
        assertThat(d.trigger()).isEqualTo(new JourneyTrigger.SegmentEntry(segment));
        assertThat(JourneyDefinitions.toJson(d).get("trigger"))
                .isEqualTo(JSON.readTree(q("{'type':'segment','segment_id':'" + segment + "'}")));
    }

    @Test
    void theLimitsThemselvesAreAccepted() {
        JourneyDefinitions.read(with(valid(), "nodes.pause.seconds", "1"));
        JourneyDefinitions.read(with(valid(), "nodes.pause.seconds", "2678400"));
        JourneyDefinitions.read(with(valid(), "nodes.later.at", "'2026-12-01T09:00:00Z'"));
        JourneyDefinitions.read(with(valid(), "nodes.welcome.content.title", "'" + "t".repeat(250) + "'"));
        JourneyDefinitions.read(with(valid(), "nodes.welcome.content.body", "'" + "b".repeat(4096) + "'"));
        JourneyDefinitions.read(with(valid(), "nodes.s1.branches", "[{'weight':1,'next':'g'},{'weight':98,'next':'g'},{'weight':1,'next':'hook'}]"));
        String id80 = "a".repeat(80);
        JourneyDefinition d = JourneyDefinitions.read(JSON.readTree(q(
                "{'trigger':{'type':'custom_event','event_name':'e'},'start':'" + id80 + "','nodes':{'" + id80 + "':{'type':'exit'}}}")));
        assertThat(d.nodes()).containsOnlyKeys(id80);
        JourneyDefinitions.read(manyNodes(100));
    }

    /** {@code n} nodes: n0 → n1 → … → exit. */
    static ObjectNode manyNodes(int n) {
        String nodes = IntStream.range(0, n).mapToObj(i -> i == n - 1 ? "'n" + i + "':{'type':'exit'}"
                : "'n" + i + "':{'type':'goal','next':'n" + (i + 1) + "'}").collect(Collectors.joining(","));
        return (ObjectNode) JSON.readTree(q("{'trigger':{'type':'custom_event','event_name':'e'},'start':'n0','nodes':{" + nodes + "}}"));
    }

    @Test
    void everyRuleIsAViolationNamingItsPath() {
        String n = "definition.nodes.";
        List<Case> cases = List.of(
                // trigger
                new Case("trigger", null, "definition.trigger"),
                new Case("trigger", "'signed_up'", "definition.trigger"),
                new Case("trigger.type", null, "definition.trigger.type"),
                new Case("trigger.type", "'cron'", "definition.trigger.type"),
                new Case("trigger.type", "5", "definition.trigger.type"),
                new Case("trigger.event_name", null, "definition.trigger.event_name"),
                new Case("trigger.event_name", "'signed up'", "definition.trigger.event_name"),
                new Case("trigger.event_name", "''", "definition.trigger.event_name"),
                new Case("trigger.event_name", "'" + "e".repeat(101) + "'", "definition.trigger.event_name"),
                new Case("trigger.event_name", "5", "definition.trigger.event_name"),
                new Case("trigger", "{'type':'segment'}", "definition.trigger.segment_id"),
                new Case("trigger", "{'type':'segment','segment_id':'nope'}", "definition.trigger.segment_id"),
                new Case("trigger", "{'type':'segment','segment_id':'1-1-1-1-1'}", "definition.trigger.segment_id"),
                new Case("trigger", "{'type':'segment','segment_id':5}", "definition.trigger.segment_id"),
                // start
                new Case("start", null, "definition.start"),
                new Case("start", "'nowhere'", "definition.start"),
                new Case("start", "5", "definition.start"),
                new Case("start", "['welcome']", "definition.start"),
                // nodes
                new Case("nodes", null, "definition.nodes"),
                new Case("nodes", "[]", "definition.nodes"),
                new Case("nodes", "'welcome'", "definition.nodes"),
                new Case("nodes.pause", "5", n + "pause"),
                new Case("nodes.pause", "[]", n + "pause"),
                new Case("nodes.pause.type", null, n + "pause.type"),
                new Case("nodes.pause.type", "'sleep'", n + "pause.type"),
                new Case("nodes.pause.type", "true", n + "pause.type"),
                // wait
                new Case("nodes.pause.seconds", null, n + "pause.seconds"),
                new Case("nodes.pause.seconds", "'60'", n + "pause.seconds"),
                new Case("nodes.pause.seconds", "60.5", n + "pause.seconds"),
                new Case("nodes.pause.seconds", "60.0", n + "pause.seconds"),
                new Case("nodes.pause.seconds", "0", n + "pause.seconds"),
                new Case("nodes.pause.seconds", "-1", n + "pause.seconds"),
                new Case("nodes.pause.seconds", "2678401", n + "pause.seconds"),
                new Case("nodes.pause.seconds", "99999999999999999999", n + "pause.seconds"),
                new Case("nodes.pause.next", null, n + "pause.next"),
                new Case("nodes.pause.next", "'nowhere'", n + "pause.next"),
                new Case("nodes.pause.next", "7", n + "pause.next"),
                // wait_until
                new Case("nodes.later.at", null, n + "later.at"),
                new Case("nodes.later.at", "'2026-12-01T09:00:00'", n + "later.at"),
                new Case("nodes.later.at", "'2026-12-01'", n + "later.at"),
                new Case("nodes.later.at", "'tomorrow'", n + "later.at"),
                new Case("nodes.later.at", "1767225600", n + "later.at"),
                new Case("nodes.later.next", null, n + "later.next"),
                // branch
                new Case("nodes.check.filter", null, n + "check.filter"),
                new Case("nodes.check.filter", "{'field':'platform','operator':'like','value':'ios'}", n + "check.filter.operator"),
                new Case("nodes.check.filter", "{'all':[{'field':'platform','operator':'eq','value':'ios'},{'field':'nope','operator':'eq','value':1}]}",
                        n + "check.filter.all[1].field"),
                new Case("nodes.check.filter", "'platform = ios'", n + "check.filter"),
                new Case("nodes.check.yes", null, n + "check.yes"),
                new Case("nodes.check.no", "'nowhere'", n + "check.no"),
                // split
                new Case("nodes.s1.branches", null, n + "s1.branches"),
                new Case("nodes.s1.branches", "{'weight':100,'next':'g'}", n + "s1.branches"),
                new Case("nodes.s1.branches", "[{'weight':100,'next':'g'}]", n + "s1.branches"),
                new Case("nodes.s1.branches", "[]", n + "s1.branches"),
                new Case("nodes.s1.branches[1]", "5", n + "s1.branches[1]"),
                new Case("nodes.s1.branches[1].weight", null, n + "s1.branches[1].weight"),
                new Case("nodes.s1.branches[1].weight", "0", List.of(n + "s1.branches[1].weight")),
                new Case("nodes.s1.branches[1].weight", "-70", n + "s1.branches[1].weight"),
                new Case("nodes.s1.branches[1].weight", "'70'", n + "s1.branches[1].weight"),
                new Case("nodes.s1.branches[1].weight", "70.0", n + "s1.branches[1].weight"),
                new Case("nodes.s1.branches[1].weight", "69", n + "s1.branches"),
                new Case("nodes.s1.branches[1].weight", "71", n + "s1.branches"),
                new Case("nodes.s1.branches[1].next", null, n + "s1.branches[1].next"),
                new Case("nodes.s1.branches[1].next", "'nowhere'", n + "s1.branches[1].next"),
                // push
                new Case("nodes.welcome.content", null, n + "welcome.content"),
                new Case("nodes.welcome.content", "'Hi'", n + "welcome.content"),
                new Case("nodes.welcome.content.title", null, n + "welcome.content.title"),
                new Case("nodes.welcome.content.title", "''", n + "welcome.content.title"),
                new Case("nodes.welcome.content.title", "5", n + "welcome.content.title"),
                new Case("nodes.welcome.content.title", "'" + "t".repeat(251) + "'", n + "welcome.content.title"),
                new Case("nodes.welcome.content.title", "'Hi {{nope.x}}'", n + "welcome.content.title"),
                new Case("nodes.welcome.content.body", null, n + "welcome.content.body"),
                new Case("nodes.welcome.content.body", "'" + "b".repeat(4097) + "'", n + "welcome.content.body"),
                new Case("nodes.welcome.content.image_url", "''", n + "welcome.content.image_url"),
                new Case("nodes.welcome.content.click_url", "'" + "u".repeat(2049) + "'", n + "welcome.content.click_url"),
                new Case("nodes.welcome.content.data", "'x'", n + "welcome.content.data"),
                new Case("nodes.welcome.content.data", "{'big':'" + "x".repeat(16 * 1024) + "'}", n + "welcome.content.data"),
                new Case("nodes.welcome.priority", "'urgent'", n + "welcome.priority"),
                new Case("nodes.welcome.priority", "1", n + "welcome.priority"),
                new Case("nodes.welcome.interruption_level", "'loud'", n + "welcome.interruption_level"),
                new Case("nodes.welcome.next", null, n + "welcome.next"),
                new Case("nodes.welcome.next", "'nowhere'", n + "welcome.next"),
                // webhook
                new Case("nodes.hook.webhook_id", null, n + "hook.webhook_id"),
                new Case("nodes.hook.webhook_id", "'abc'", n + "hook.webhook_id"),
                new Case("nodes.hook.next", null, n + "hook.next"),
                // goal
                new Case("nodes.g.name", "'" + "g".repeat(191) + "'", n + "g.name"),
                new Case("nodes.g.name", "5", n + "g.name"),
                new Case("nodes.g.name", "''", n + "g.name"),
                new Case("nodes.g.next", "'nowhere'", n + "g.next"),
                new Case("nodes.g.next", "false", n + "g.next"));
        List<String> failures = new ArrayList<>();
        for (Case c : cases) {
            List<String> fields = violations(with(valid(), c.path(), c.value()));
            if (!fields.equals(c.fields())) failures.add(c.path() + " = " + c.value() + ": " + fields + ", expected " + c.fields());
        }
        assertThat(failures).isEmpty();
    }

    @Test
    void nodeIdsAndNodeCountsOutsideTheLimitsAreViolations() {
        assertThat(violations(JSON.readTree(q("{'trigger':{'type':'custom_event','event_name':'e'},'start':'a','nodes':{}}"))))
                .containsExactly("definition.nodes", "definition.start");
        assertThat(violations(manyNodes(101))).containsExactly("definition.nodes");
        assertThat(violations(with(valid(), "nodes.bad id", "{'type':'exit'}"))).containsExactly("definition.nodes");
        assertThat(violations(with(valid(), "nodes." + "x".repeat(81), "{'type':'exit'}"))).containsExactly("definition.nodes");
        assertThat(violations(with(valid(), "nodes.é", "{'type':'exit'}"))).containsExactly("definition.nodes");
    }

    @Test
    void aDefinitionThatIsNotAnObjectIsAViolation() {
        assertThat(violations(null)).containsExactly("definition");
        assertThat(violations(JSON.readTree("[]"))).containsExactly("definition");
        assertThat(violations(JSON.readTree("\"x\""))).containsExactly("definition");
        assertThat(violations(JSON.readTree("{}"))).containsExactly("definition.trigger", "definition.start", "definition.nodes");
    }

    @Test
    void everyViolationIsReportedAtOnce() {
        ObjectNode d = with(valid(), "nodes.pause.seconds", "'60'");
        d = with(d, "nodes.s1.branches[0].weight", "0");
        d = with(d, "nodes.welcome.content.title", null);
        d = with(d, "trigger.event_name", "'a b'");
        d = with(d, "nodes.check.filter", "{'field':'platform','operator':'eq','value':'windows'}");
        assertThat(violations(d)).containsExactlyInAnyOrder("definition.trigger.event_name", "definition.nodes.pause.seconds",
                "definition.nodes.s1.branches[0].weight", "definition.nodes.welcome.content.title",
                "definition.nodes.check.filter.value");
    }

    @Test
    void aCycleThatNeverWaitsIsAViolationNamingANodeOfIt() {
        // welcome → pause(wait) → … → check → yes → s1 → g → done: add g → welcome, a cycle through the wait: fine
        JourneyDefinitions.read(with(valid(), "nodes.g.next", "'welcome'"));
        // check → s1 → g → check never waits
        assertThat(violations(with(valid(), "nodes.g.next", "'check'")))
                .singleElement().isIn("definition.nodes.check", "definition.nodes.s1", "definition.nodes.g");
        // a goal that leads to itself
        assertThat(violations(with(valid(), "nodes.g.next", "'g'"))).containsExactly("definition.nodes.g");
        // a wait_until does not break a cycle: once its instant is past it no longer pauses
        assertThat(violations(with(valid(), "nodes.g.next", "'later'")))
                .singleElement().isIn("definition.nodes.later", "definition.nodes.check", "definition.nodes.s1",
                        "definition.nodes.hook", "definition.nodes.g");
        InvalidInput e = catchThrowableOfType(InvalidInput.class,
                () -> JourneyDefinitions.read(with(valid(), "nodes.g.next", "'g'")));
        assertThat(e.violations().getFirst().message()).contains("g → g").contains("wait");
    }

    @Test
    void unreachableNodesAreWarningsNotViolations() {
        ObjectNode d = with(valid(), "nodes.orphan", "{'type':'goal','next':'orphan2'}");
        d = with(d, "nodes.orphan2", "{'type':'exit'}");
        JourneyDefinition read = JourneyDefinitions.read(d);
        assertThat(JourneyDefinitions.warnings(read)).extracting(Violation::field)
                .containsExactly("definition.nodes.orphan", "definition.nodes.orphan2");
    }

    @Test
    void theBodyFormReportsDefinitionViolationsWithTheOtherFields() {
        ObjectNode body = JSON.createObjectNode();
        body.put("name", 5);
        body.set("definition", with(valid(), "start", "'nowhere'"));
        dev.pushservice.platform.json.JsonInput in = dev.pushservice.platform.json.JsonInput.object(body);
        in.string("name", 10);
        assertThat(JourneyDefinitions.read(in, true)).isNull();
        assertThatThrownBy(in::check).isInstanceOfSatisfying(InvalidInput.class, e ->
                assertThat(e.violations()).extracting(Violation::field).containsExactly("name", "definition.start"));
        // absent: required on POST, unchanged on PATCH; null is never "unchanged"
        ObjectNode empty = JSON.createObjectNode();
        dev.pushservice.platform.json.JsonInput patch = dev.pushservice.platform.json.JsonInput.object(empty);
        assertThat(JourneyDefinitions.read(patch, false)).isNull();
        assertThat(patch.hasErrors()).isFalse();
        empty.putNull("definition");
        dev.pushservice.platform.json.JsonInput nulled = dev.pushservice.platform.json.JsonInput.object(empty);
        JourneyDefinitions.read(nulled, false);
        assertThatThrownBy(nulled::check).isInstanceOfSatisfying(InvalidInput.class, e ->
                assertThat(e.violations()).singleElement().satisfies(v -> {
                    assertThat(v.field()).isEqualTo("definition");
                    assertThat(v.message()).startsWith("cannot be removed");
                }));
    }
}
