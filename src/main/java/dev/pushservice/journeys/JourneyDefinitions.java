package dev.pushservice.journeys;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.rules.EventNames;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.Timestamps;
import dev.pushservice.platform.rules.Urls;
import dev.pushservice.segments.Filter;
import dev.pushservice.segments.FilterParser;
import dev.pushservice.templates.CompiledContent;
import dev.pushservice.templates.TemplateContent;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Reads a journey definition from JSON ({@link #read}) with every form rule of the spec ("Journey",
 * "Node types", "Limits") and writes it back ({@link #toJson}); the two round-trip, so what is stored
 * in {@code journey_versions.definition} reads back into an equal definition. Pure: no database (that
 * a segment trigger names an active segment and a webhook node an existing webhook of the app is the
 * API's check). Stateless and thread-safe.
 *
 * <p>Every problem is reported, all at once, with its path relative to the request body:
 * {@code definition.start}, {@code definition.trigger.event_name}, {@code definition.nodes.welcome.seconds},
 * {@code definition.nodes.s1.branches[1].weight}, {@code definition.nodes.b.filter.all[0].operator}.
 * Nothing is coerced ({@code "60"} and {@code 60.5} are not a number of seconds); unknown fields are
 * ignored and not stored.
 *
 * <p>The rules beyond the spec's words (docs/api-decisions.md, "Journeys: definitions and versions"):
 * <ul>
 *   <li>A cycle of edges that passes through no {@code wait} node is refused (an execution would run
 *       round it without end inside one step); the violation names a node of the cycle. A
 *       {@code wait_until} does not break a cycle: once its instant is past it no longer pauses.</li>
 *   <li>Nodes that {@code start} does not reach are accepted and reported by {@link #warnings}.</li>
 *   <li>{@code push} content: {@code title} (≤ {@value Limits#TITLE}) and {@code body}
 *       (≤ {@value Limits#BODY}) required; optional {@code image_url}, {@code click_url}
 *       (≤ {@value Limits#IMAGE_URL}) and {@code data} (an object of at most {@value Limits#DATA_BYTES}
 *       bytes); placeholders as in notifications.</li>
 *   <li>{@code goal}: optional {@code name} (≤ {@value Limits#NAME}, as every name) and optional
 *       {@code next}.</li>
 *   <li>{@code wait_until.at} is an ISO 8601 timestamp with an offset or {@code Z}; it is stored and
 *       returned in UTC.</li>
 * </ul>
 */
public final class JourneyDefinitions {

    /** The node types, as {@code type} names them. */
    public static final List<String> NODE_TYPES = List.of("wait", "wait_until", "branch", "split", "push", "webhook",
            "goal", "exit");
    /** The trigger types, as {@code trigger.type} names them. */
    public static final List<String> TRIGGER_TYPES = List.of("custom_event", "segment");
    /** {@code wait.seconds}: 1 second to 31 days. */
    public static final long WAIT_MIN_SECONDS = Limits.WAIT_MIN.toSeconds();
    public static final long WAIT_MAX_SECONDS = Limits.WAIT_MAX.toSeconds();
    /** A goal's optional {@code name}. */
    public static final int GOAL_NAME = Limits.NAME;

    static final String NODE_ID_RULE = "must be 1 to " + Limits.JOURNEY_NODE_ID + " letters, digits, '_' or '-'";
    private static final Pattern NODE_ID = Pattern.compile("[A-Za-z0-9_-]{1," + Limits.JOURNEY_NODE_ID + "}");
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private JourneyDefinitions() {
    }

    /** Whether {@code id} is a valid node id: 1 to 80 letters, digits, {@code _} or {@code -}. */
    public static boolean isNodeId(String id) {
        return id != null && NODE_ID.matcher(id).matches();
    }

    /**
     * Reads a definition (the value of the body's {@code definition}); throws {@link InvalidInput}
     * listing every violation, paths starting with {@code definition}.
     */
    public static JourneyDefinition read(JsonNode definition) {
        ObjectNode body = NODES.objectNode();
        body.set("definition", definition);
        JsonInput in = JsonInput.object(body);
        JourneyDefinition result = read(in, true);
        in.check();
        return result;
    }

    /**
     * Reads the field {@code definition} of a request body, recording problems on {@code body} (so
     * they are answered together with the other fields'); null when absent or invalid.
     *
     * @param required whether a missing definition is a violation (POST) or means "unchanged" (PATCH)
     */
    public static JourneyDefinition read(JsonInput body, boolean required) {
        JsonNode raw = body.value("definition");
        if (raw == null) {
            if (required) {
                body.reject("definition", "is required: an object with trigger, start and nodes");
            } else if (body.has("definition")) {
                body.reject("definition", "cannot be removed; give a new definition or leave the field out");
            }
            return null;
        }
        if (!raw.isObject()) {
            body.reject("definition", "must be an object with trigger, start and nodes");
            return null;
        }
        // a JsonInput of its own, so that whether the definition is valid does not depend on other fields
        ObjectNode wrapper = NODES.objectNode();
        wrapper.set("definition", raw);
        JsonInput own = JsonInput.object(wrapper);
        JourneyDefinition definition = new Reader(own.nested("definition").orElseThrow()).read();
        try {
            own.check();
        } catch (InvalidInput e) {
            body.rejectAll(e.violations());
            return null;
        }
        return definition;
    }

    /**
     * Problems that do not make a definition invalid, each as a path and a message: nodes that
     * {@code start} does not reach (an execution can never run them).
     */
    public static List<Violation> warnings(JourneyDefinition definition) {
        Set<String> reached = reachable(definition);
        List<Violation> warnings = new ArrayList<>();
        for (String id : definition.nodes().keySet()) {
            if (!reached.contains(id)) {
                warnings.add(new Violation("definition.nodes." + id,
                        "is not reachable from start: no execution will ever run it"));
            }
        }
        return warnings;
    }

    /** The definition as the API returns and stores it: {@code {trigger, start, nodes}}, nodes in their order. */
    public static ObjectNode toJson(JourneyDefinition definition) {
        ObjectNode out = NODES.objectNode();
        ObjectNode trigger = out.putObject("trigger");
        switch (definition.trigger()) {
            case JourneyTrigger.CustomEvent e -> {
                trigger.put("type", "custom_event");
                trigger.put("event_name", e.eventName());
            }
            case JourneyTrigger.SegmentEntry s -> {
                trigger.put("type", "segment");
                trigger.put("segment_id", s.segmentId().toString());
            }
        }
        out.put("start", definition.start());
        ObjectNode nodes = out.putObject("nodes");
        definition.nodes().forEach((id, node) -> nodes.set(id, toJson(node)));
        return out;
    }

    private static ObjectNode toJson(JourneyNode node) {
        ObjectNode o = NODES.objectNode();
        switch (node) {
            case JourneyNode.Wait w -> {
                o.put("type", "wait");
                o.put("seconds", w.seconds());
                o.put("next", w.next());
            }
            case JourneyNode.WaitUntil w -> {
                o.put("type", "wait_until");
                o.put("at", w.at().toString());
                o.put("next", w.next());
            }
            case JourneyNode.Branch b -> {
                o.put("type", "branch");
                o.set("filter", FilterParser.toJson(b.filter()));
                o.put("yes", b.yes());
                o.put("no", b.no());
            }
            case JourneyNode.Split s -> {
                o.put("type", "split");
                ArrayNode branches = o.putArray("branches");
                for (JourneyNode.SplitBranch b : s.branches()) {
                    branches.addObject().put("weight", b.weight()).put("next", b.next());
                }
            }
            case JourneyNode.Push p -> {
                o.put("type", "push");
                o.set("content", p.content().deepCopy());
                if (p.priority() != null) o.put("priority", p.priority());
                if (p.interruptionLevel() != null) o.put("interruption_level", p.interruptionLevel());
                o.put("next", p.next());
            }
            case JourneyNode.Webhook w -> {
                o.put("type", "webhook");
                o.put("webhook_id", w.webhookId().toString());
                o.put("next", w.next());
            }
            case JourneyNode.Goal g -> {
                o.put("type", "goal");
                if (g.name() != null) o.put("name", g.name());
                if (g.next() != null) o.put("next", g.next());
            }
            case JourneyNode.Exit x -> o.put("type", "exit");
        }
        return o;
    }

    /** The ids of the nodes an execution can reach from {@code start}. */
    static Set<String> reachable(JourneyDefinition definition) {
        Set<String> seen = new HashSet<>();
        Deque<String> todo = new ArrayDeque<>();
        todo.push(definition.start());
        while (!todo.isEmpty()) {
            String id = todo.pop();
            if (seen.add(id)) {
                edges(definition.node(id)).forEach(todo::push);
            }
        }
        return seen;
    }

    /** The nodes {@code node} can go on to. */
    static List<String> edges(JourneyNode node) {
        return switch (node) {
            case JourneyNode.Wait w -> List.of(w.next());
            case JourneyNode.WaitUntil w -> List.of(w.next());
            case JourneyNode.Branch b -> List.of(b.yes(), b.no());
            case JourneyNode.Split s -> s.branches().stream().map(JourneyNode.SplitBranch::next).toList();
            case JourneyNode.Push p -> List.of(p.next());
            case JourneyNode.Webhook w -> List.of(w.next());
            case JourneyNode.Goal g -> g.next() == null ? List.of() : List.of(g.next());
            case JourneyNode.Exit x -> List.of();
        };
    }

    /** One read of one definition; problems go to {@code in} (nested at {@code definition.}). */
    private static final class Reader {
        private final JsonInput in;
        /** Valid node ids of the definition: what edges may name. */
        private final Set<String> ids = new HashSet<>();
        /** Edges to check once every id is known: (path, node id named). */
        private final List<String[]> edgeChecks = new ArrayList<>();

        Reader(JsonInput in) {
            this.in = in;
        }

        JourneyDefinition read() {
            JourneyTrigger trigger = trigger();
            String start = in.value("start") == null ? missing("start") : edge(in, "start");
            Map<String, JourneyNode> nodes = nodes();
            // without a nodes object every edge would dangle: that says nothing new
            for (String[] check : nodes == null ? List.<String[]>of() : edgeChecks) {
                if (!ids.contains(check[1])) {
                    in.rejectAll(List.of(new Violation(check[0], "names no node of this definition: '" + check[1] + "'")));
                }
            }
            if (in.hasErrors() || trigger == null || start == null || nodes == null) {
                return null;
            }
            JourneyDefinition definition = new JourneyDefinition(trigger, start, nodes);
            String loop = loopWithoutWait(definition);
            if (loop != null) {
                in.reject("nodes." + loop.substring(0, loop.indexOf(' ')),
                        "is on a cycle without a wait node (" + loop + "): an execution would loop without end;"
                                + " put a wait node on the cycle or end it");
                return null;
            }
            return definition;
        }

        private String missing(String field) {
            in.reject(field, "is required");
            return null;
        }

        private JourneyTrigger trigger() {
            if (in.value("trigger") == null) {
                in.reject("trigger", "is required: {\"type\":\"custom_event\",\"event_name\":…} or {\"type\":\"segment\",\"segment_id\":…}");
                return null;
            }
            JsonInput t = in.nested("trigger").orElse(null);
            if (t == null) return null;
            String type = t.requiredString("type", 40);
            if (type == null) return null;
            switch (type) {
                case "custom_event" -> {
                    String name = t.requiredString("event_name", Limits.EVENT_NAME);
                    if (name == null) return null;
                    if (!EventNames.isValid(name)) {
                        t.reject("event_name", EventNames.RULE);
                        return null;
                    }
                    return new JourneyTrigger.CustomEvent(name);
                }
                case "segment" -> {
                    UUID id = requiredUuid(t, "segment_id");
                    return id == null ? null : new JourneyTrigger.SegmentEntry(id);
                }
                default -> {
                    t.reject("type", "must be one of " + String.join(", ", TRIGGER_TYPES));
                    return null;
                }
            }
        }

        private Map<String, JourneyNode> nodes() {
            JsonNode raw = in.value("nodes");
            if (raw == null) {
                in.reject("nodes", "is required: an object of 1 to " + Limits.JOURNEY_NODES + " nodes keyed by node id");
                return null;
            }
            if (!raw.isObject()) {
                in.reject("nodes", "must be an object of nodes keyed by node id");
                return null;
            }
            if (raw.isEmpty() || raw.size() > Limits.JOURNEY_NODES) {
                in.reject("nodes", "must hold 1 to " + Limits.JOURNEY_NODES + " nodes; it holds " + raw.size());
            }
            JsonInput nodesIn = in.nested("nodes").orElseThrow();
            for (String id : raw.propertyNames()) {
                if (isNodeId(id)) {
                    ids.add(id);
                } else {
                    String shown = id.length() > 100 ? id.substring(0, 100) + "…" : id;
                    in.reject("nodes", "node id '" + shown + "' " + NODE_ID_RULE);
                }
            }
            Map<String, JourneyNode> nodes = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> entry : raw.properties()) {
                if (!isNodeId(entry.getKey())) continue;
                JourneyNode node = node(nodesIn, entry.getKey(), entry.getValue());
                if (node != null) nodes.put(entry.getKey(), node);
            }
            return nodes;
        }

        private JourneyNode node(JsonInput nodesIn, String id, JsonNode raw) {
            if (raw == null || raw.isNull() || !raw.isObject()) {
                nodesIn.reject(id, "must be an object with a type (" + String.join(", ", NODE_TYPES) + ")");
                return null;
            }
            JsonInput n = nodesIn.nested(id).orElseThrow();
            String type = n.requiredString("type", 40);
            if (type == null) return null;
            return switch (type) {
                case "wait" -> {
                    Long seconds = requiredInteger(n, "seconds", WAIT_MIN_SECONDS, WAIT_MAX_SECONDS,
                            " (1 second to 31 days)");
                    String next = requiredEdge(n, "next");
                    yield seconds == null || next == null ? null : new JourneyNode.Wait(seconds, next);
                }
                case "wait_until" -> {
                    Instant at = at(n);
                    String next = requiredEdge(n, "next");
                    yield at == null || next == null ? null : new JourneyNode.WaitUntil(at, next);
                }
                case "branch" -> {
                    Filter filter = filter(n);
                    String yes = requiredEdge(n, "yes");
                    String no = requiredEdge(n, "no");
                    yield filter == null || yes == null || no == null ? null
                            : new JourneyNode.Branch(filter, FilterParser.toJson(filter), yes, no);
                }
                case "split" -> split(n);
                case "push" -> push(n);
                case "webhook" -> {
                    UUID webhookId = requiredUuid(n, "webhook_id");
                    String next = requiredEdge(n, "next");
                    yield webhookId == null || next == null ? null : new JourneyNode.Webhook(webhookId, next);
                }
                case "goal" -> {
                    String name = n.text("name", GOAL_NAME);
                    if (name != null && name.isBlank()) {
                        n.reject("name", "must not be empty (leave it out for none)");
                        name = null;
                    }
                    String next = n.value("next") == null ? null : edge(n, "next");
                    yield n.hasErrors() ? null : new JourneyNode.Goal(name, next);
                }
                case "exit" -> new JourneyNode.Exit();
                default -> {
                    n.reject("type", "must be one of " + String.join(", ", NODE_TYPES));
                    yield null;
                }
            };
        }

        private Instant at(JsonInput n) {
            if (n.value("at") == null) {
                n.reject("at", "is required: an ISO 8601 timestamp with a time zone offset or Z");
                return null;
            }
            String raw = n.string("at", 64);
            if (raw == null) return null;
            // in range: a year the database cannot store would fail every batch holding the execution
            Instant at = Timestamps.parseOffset(raw);
            if (at == null) {
                n.reject("at", "must be an ISO 8601 timestamp with a time zone offset or Z, " + Timestamps.RANGE
                        + ", such as 2026-05-01T09:00:00+02:00");
                return null;
            }
            return at.truncatedTo(ChronoUnit.MICROS);
        }

        private Filter filter(JsonInput n) {
            JsonNode raw = n.value("filter");
            if (raw == null) {
                n.reject("filter", "is required: a condition or a group in the segment filter grammar");
                return null;
            }
            List<Violation> errors = new ArrayList<>();
            Filter filter = FilterParser.parse(raw, n.name("filter"), errors);
            in.rejectAll(errors);
            return filter;
        }

        private JourneyNode split(JsonInput n) {
            JsonNode raw = n.value("branches");
            if (raw == null || !raw.isArray()) {
                n.reject("branches", (raw == null ? "is required: " : "must be ")
                        + "an array of at least 2 objects with weight and next");
                return null;
            }
            if (raw.size() < 2) {
                n.reject("branches", "must have at least 2 branches");
            }
            List<JourneyNode.SplitBranch> branches = new ArrayList<>();
            long total = 0;
            boolean weightsOk = true;
            for (int i = 0; i < raw.size(); i++) {
                String at = "branches[" + i + "]";
                JsonNode b = raw.get(i);
                if (b == null || !b.isObject()) {
                    n.reject(at, "must be an object with weight and next");
                    weightsOk = false;
                    continue;
                }
                JsonNode w = b.get("weight");
                Integer weight = null;
                if (w == null || w.isNull()) {
                    n.reject(at + ".weight", "is required: a positive integer");
                } else if (!w.isIntegralNumber() || !w.canConvertToInt()) {
                    n.reject(at + ".weight", "must be a positive integer");
                } else if (w.intValue() < 1) {
                    n.reject(at + ".weight", "must be a positive integer");
                } else {
                    weight = w.intValue();
                }
                if (weight == null) weightsOk = false;
                else total += weight;
                String next = requiredEdgeValue(n, at + ".next", b.get("next"));
                if (weight != null && next != null) branches.add(new JourneyNode.SplitBranch(weight, next));
            }
            if (weightsOk && raw.size() >= 2 && total != Limits.SPLIT_WEIGHT_TOTAL) {
                n.reject("branches", "weights must total " + Limits.SPLIT_WEIGHT_TOTAL + "; they total " + total);
            }
            return n.hasErrors() ? null : new JourneyNode.Split(branches);
        }

        private JourneyNode push(JsonInput n) {
            ObjectNode content = NODES.objectNode();
            String title = null;
            String body = null;
            if (n.value("content") == null) {
                n.reject("content", "is required: an object with title and body");
            } else {
                JsonInput c = n.nested("content").orElse(null);
                if (c != null) {
                    // a push step's content is a notification's: the same text and URL rules
                    title = c.requiredMultilineText("title", Limits.TITLE);
                    body = c.requiredMultilineText("body", Limits.BODY);
                    String imageUrl = c.string("image_url", Limits.IMAGE_URL, Urls::imageUrlProblem);
                    String clickUrl = c.string("click_url", Limits.CLICK_URL, Urls::clickUrlProblem);
                    JsonNode data = data(c);
                    if (title != null) content.put("title", title);
                    if (body != null) content.put("body", body);
                    if (imageUrl != null) content.put("image_url", imageUrl);
                    if (clickUrl != null) content.put("click_url", clickUrl);
                    if (data != null) content.set("data", data.deepCopy());
                    if (title != null && body != null) {
                        CompiledContent.compile(new TemplateContent(title, body, clickUrl, data, null), c::reject);
                    }
                }
            }
            String priority = oneOf(n, "priority", Priority.WIRE_VALUES);
            String level = oneOf(n, "interruption_level", InterruptionLevel.WIRE_VALUES);
            String next = requiredEdge(n, "next");
            return n.hasErrors() ? null : new JourneyNode.Push(content, title, body, priority, level, next);
        }

        private static JsonNode data(JsonInput c) {
            JsonNode node = c.value("data");
            if (node == null) return null;
            if (!node.isObject()) {
                c.reject("data", "must be an object");
                return null;
            }
            if (node.toString().getBytes(StandardCharsets.UTF_8).length > Limits.DATA_BYTES) {
                c.reject("data", "must be at most " + Limits.DATA_BYTES + " bytes as JSON");
                return null;
            }
            return node;
        }

        private static String oneOf(JsonInput n, String field, Set<String> values) {
            String s = n.string(field, 40);
            if (s != null && !values.contains(s)) {
                n.reject(field, "must be one of " + String.join(", ", new TreeSet<>(values)));
                return null;
            }
            return s;
        }

        private static Long requiredInteger(JsonInput n, String field, long min, long max, String what) {
            if (n.value(field) == null) {
                n.reject(field, "is required: an integer from " + min + " to " + max + what);
                return null;
            }
            return n.integer(field, min, max);
        }

        private static UUID requiredUuid(JsonInput n, String field) {
            JsonNode raw = n.value(field);
            if (raw == null) {
                n.reject(field, "is required: a UUID");
                return null;
            }
            UUID id = raw.isString() ? Uuids.parse(raw.stringValue()) : null;
            if (id == null) n.reject(field, "must be a UUID");
            return id;
        }

        private String requiredEdge(JsonInput n, String field) {
            if (n.value(field) == null) {
                n.reject(field, "is required: the id of the node to go on to");
                return null;
            }
            return edge(n, field);
        }

        /** An edge: a string naming a node; whether the node exists is checked once all are read. */
        private String edge(JsonInput n, String field) {
            return requiredEdgeValue(n, field, n.value(field));
        }

        private String requiredEdgeValue(JsonInput n, String field, JsonNode raw) {
            if (raw == null || raw.isNull()) {
                n.reject(field, "is required: the id of the node to go on to");
                return null;
            }
            if (!raw.isString()) {
                n.reject(field, "must be a node id (a string)");
                return null;
            }
            String id = raw.stringValue();
            edgeChecks.add(new String[] {n.name(field), id});
            return id;
        }

        /**
         * A cycle through no {@code wait} node, as {@code "a → b → a"}, or null when there is none.
         * Depth-first over the graph without its wait nodes; each node is visited once.
         */
        private static String loopWithoutWait(JourneyDefinition definition) {
            Map<String, Integer> state = new HashMap<>(); // 1 on the current path, 2 done
            for (String root : definition.nodes().keySet()) {
                if (state.containsKey(root) || definition.node(root) instanceof JourneyNode.Wait) continue;
                Deque<String> path = new ArrayDeque<>();
                Deque<java.util.Iterator<String>> pending = new ArrayDeque<>();
                path.addLast(root);
                pending.addLast(edges(definition.node(root)).iterator());
                state.put(root, 1);
                while (!path.isEmpty()) {
                    java.util.Iterator<String> it = pending.peekLast();
                    if (!it.hasNext()) {
                        state.put(path.removeLast(), 2);
                        pending.removeLast();
                        continue;
                    }
                    String next = it.next();
                    if (definition.node(next) instanceof JourneyNode.Wait) continue;
                    Integer s = state.get(next);
                    if (s == null) {
                        state.put(next, 1);
                        path.addLast(next);
                        pending.addLast(edges(definition.node(next)).iterator());
                    } else if (s == 1) {
                        List<String> cycle = new ArrayList<>();
                        boolean on = false;
                        for (String p : path) {
                            if (p.equals(next)) on = true;
                            if (on) cycle.add(p);
                        }
                        cycle.add(next);
                        return String.join(" → ", cycle);
                    }
                }
            }
            return null;
        }
    }
}
