package dev.pushservice.apps.cli;

import dev.pushservice.apps.Tenants;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * What the commands print. Human output is plain text and tables on stdout; {@code --json} output
 * is one JSON document on stdout with the API's snake_case field names and ISO-8601 instants.
 * Neither ever contains a raw key except the one a command has just issued.
 */
final class CliOutput {

    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

    static final String RAW_KEY_WARNING =
            "Store this key now: it cannot be shown again (only its hash is kept).";

    private CliOutput() {
    }

    static void json(PrintWriter out, Object value) {
        out.println(JSON.writeValueAsString(value));
    }

    static String time(Instant instant) {
        return instant == null ? "-" : instant.truncatedTo(ChronoUnit.SECONDS).toString();
    }

    private static String jsonTime(Instant instant) {
        return instant == null ? null : instant.toString();
    }

    static Map<String, Object> organisation(Tenants.Organisation org) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", org.id().toString());
        m.put("name", org.name());
        m.put("created_at", jsonTime(org.createdAt()));
        return m;
    }

    static Map<String, Object> app(Tenants.App app) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", app.id().toString());
        m.put("org_id", app.orgId().toString());
        m.put("name", app.name());
        m.put("timezone", app.timezone());
        m.put("created_at", jsonTime(app.createdAt()));
        return m;
    }

    static Map<String, Object> key(Tenants.Key key, Instant now) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", key.id().toString());
        m.put("app_id", key.appId().toString());
        m.put("kind", key.kind());
        m.put("name", key.name());
        m.put("hint", key.hint());
        m.put("scopes", key.scopes());
        m.put("state", key.state(now));
        m.put("created_at", jsonTime(key.createdAt()));
        m.put("expires_at", jsonTime(key.expiresAt()));
        m.put("revoked_at", jsonTime(key.revokedAt()));
        m.put("last_used_at", jsonTime(key.lastUsedAt()));
        return m;
    }

    /** Left-aligned columns, two spaces apart; the last column is not padded. */
    static void table(PrintWriter out, List<String> headers, List<List<String>> rows) {
        List<List<String>> all = new ArrayList<>();
        all.add(headers);
        all.addAll(rows);
        int[] widths = new int[headers.size()];
        for (List<String> row : all) {
            for (int i = 0; i < row.size(); i++) widths[i] = Math.max(widths[i], row.get(i).length());
        }
        for (List<String> row : all) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.size(); i++) {
                if (i == row.size() - 1) {
                    line.append(row.get(i));
                } else {
                    line.append(String.format("%-" + widths[i] + "s  ", row.get(i)));
                }
            }
            out.println(line.toString().stripTrailing());
        }
    }
}
