package dev.pushservice.journeys;

import java.util.Map;

/**
 * A validated journey definition (spec "Journey", "Definition rules"): what starts an execution,
 * the first node, and the nodes keyed by id. Instances come only from the definition reader, which
 * enforces every rule the spec names (node ids, 1 to 100 nodes, edges naming existing nodes, each
 * node type's required values); an execution can therefore follow any edge without checking it.
 * Immutable; a stored version's definition never changes.
 *
 * @param nodes in the order the client wrote them (reads return them in that order)
 */
public record JourneyDefinition(JourneyTrigger trigger, String start, Map<String, JourneyNode> nodes) {

    public JourneyDefinition {
        nodes = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(nodes));
    }

    /** The node with this id; every edge of a validated definition names one. */
    public JourneyNode node(String id) {
        JourneyNode node = nodes.get(id);
        if (node == null) {
            throw new IllegalArgumentException("no node " + id);
        }
        return node;
    }
}
