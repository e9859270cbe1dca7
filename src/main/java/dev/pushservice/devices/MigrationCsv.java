package dev.pushservice.devices;

import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.TextRules;
import dev.pushservice.platform.rules.TimeZones;
import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVRecord;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Reads a migration CSV (spec "Device", migration rules) row by row with Apache Commons CSV
 * (RFC 4180: quoted fields with commas, quotes and line breaks; CRLF or LF), UTF-8 with or without a
 * byte-order mark. The header row picks the format: the spec's template columns or the legacy
 * export's headings (names compared without case or surrounding spaces; unknown columns ignored).
 *
 * <p>Each data row becomes a {@link Row} to stage or a {@link Skip} with its reason; a problem with the
 * file itself (no known header, a broken quote, not UTF-8, too many rows) is a {@link FileProblem}.
 * Reading keeps nothing per row: a file is read twice (validate, then stage) instead of held in memory.
 */
final class MigrationCsv {

    enum Format { TEMPLATE, LEGACY }

    /** A row to stage: never the raw token, only its identity hash (the one registration matches on). */
    record Row(long line, Platform platform, byte[] tokenHash, String sourceDeviceId, String externalUserId,
               String appVersion, String deviceModel, String osVersion, String locale, String timezone, String tagsJson) {
    }

    /** A row left out, with a reason code (counted) and a detail for people (never the token). */
    record Skip(long line, String reason, String detail) {
    }

    /** The file cannot be imported as a whole. */
    static final class FileProblem extends RuntimeException {
        FileProblem(String message) {
            super(message);
        }
    }

    static final List<String> TEMPLATE_REQUIRED = List.of("source_device_id", "push_token", "platform");
    static final List<String> LEGACY_REQUIRED = List.of("id", "identifier", "device_type");

    /** Longest source id kept (ours: the spec sets none; provider ids are UUIDs or short strings). */
    static final int SOURCE_ID = 190;
    private static final int TOKEN = 2048;

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final CSVFormat CSV = CSVFormat.RFC4180.builder().setIgnoreEmptyLines(true).get();

    private MigrationCsv() {
    }

    /**
     * Reads {@code file}, giving each data row to {@code rows} or {@code skips} in file order;
     * returns the format. Throws {@link FileProblem} for the file as a whole (the callers then change nothing).
     */
    static Format read(Path file, long maxRows, Consumer<Row> rows, Consumer<Skip> skips) {
        try (InputStream in = withoutBom(new BufferedInputStream(Files.newInputStream(file), 1 << 16));
             BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8.newDecoder()
                     .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)), 1 << 16);
             CSVParser parser = CSV.parse(reader)) {
            Iterator<CSVRecord> records = parser.iterator();
            if (!next(records, parser)) throw new FileProblem("The file is empty: it needs a header row and at least one device row.");
            CSVRecord header = records.next();
            Columns columns = Columns.of(header);
            long count = 0;
            while (next(records, parser)) {
                CSVRecord record = records.next();
                if (++count > maxRows) {
                    throw new FileProblem(String.format(Locale.ROOT, "The file has more than %,d device rows, the most one upload takes: "
                            + "split it into several files.", maxRows));
                }
                long line = parser.getCurrentLineNumber();
                if (record.size() == 1 && record.get(0).isBlank()) continue;
                Object result = row(columns, record, line);
                if (result instanceof Row r) rows.accept(r);
                else skips.accept((Skip) result);
            }
            if (count == 0) throw new FileProblem("The file has a header row but no device rows.");
            return columns.format;
        } catch (CharacterCodingException e) {
            throw new FileProblem("The file is not UTF-8 text: save it as CSV UTF-8 and upload it again.");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Whether there is another record; a broken quote is the file's problem, with the line it was found on. */
    private static boolean next(Iterator<CSVRecord> records, CSVParser parser) {
        try {
            return records.hasNext();
        } catch (UncheckedIOException e) {
            if (e.getCause() instanceof CharacterCodingException) {
                throw new FileProblem("The file is not UTF-8 text: save it as CSV UTF-8 and upload it again.");
            }
            throw new FileProblem("The file is not valid CSV near line " + (parser.getCurrentLineNumber() + 1)
                    + " (a quoted field is not closed, or text follows a closing quote).");
        } catch (IllegalStateException e) {
            throw new FileProblem("The file is not valid CSV near line " + (parser.getCurrentLineNumber() + 1) + ".");
        }
    }

    private static InputStream withoutBom(BufferedInputStream in) throws IOException {
        in.mark(3);
        byte[] bom = in.readNBytes(3);
        if (!(bom.length == 3 && (bom[0] & 0xff) == 0xEF && (bom[1] & 0xff) == 0xBB && (bom[2] & 0xff) == 0xBF)) in.reset();
        return in;
    }

    /** Where each known column is (-1: absent). */
    private record Columns(Format format, Map<String, Integer> index) {

        static Columns of(CSVRecord header) {
            Map<String, Integer> index = new HashMap<>();
            for (int i = 0; i < header.size(); i++) {
                String name = header.get(i).strip().toLowerCase(Locale.ROOT);
                if (name.isEmpty()) continue;
                if (index.putIfAbsent(name, i) != null) {
                    throw new FileProblem("The header row names the column \"" + name + "\" twice.");
                }
            }
            if (index.keySet().containsAll(TEMPLATE_REQUIRED)) return new Columns(Format.TEMPLATE, index);
            if (index.keySet().containsAll(LEGACY_REQUIRED)) return new Columns(Format.LEGACY, index);
            throw new FileProblem("The header row must name the template columns (" + String.join(", ", TEMPLATE_REQUIRED)
                    + ", and optionally external_user_id, subscribed, app_version, device_model, os_version, locale, timezone, tags_json)"
                    + " or the legacy export's headings (" + String.join(", ", LEGACY_REQUIRED)
                    + ", and optionally external_user_id, invalid_identifier, notification_types, game_version, device_os, tags).");
        }

        /** The value of {@code column} in {@code record}: null when the column or the value is absent or blank. */
        String get(CSVRecord record, String column) {
            Integer i = index.get(column);
            if (i == null || i >= record.size()) return null;
            String v = record.get(i).strip();
            return v.isEmpty() ? null : v;
        }
    }

    /** One data row as a {@link Row} or a {@link Skip}. */
    private static Object row(Columns c, CSVRecord r, long line) {
        boolean template = c.format == Format.TEMPLATE;
        // unsubscribed and invalid rows first: they are skipped whatever else they hold
        if (template) {
            String subscribed = c.get(r, "subscribed");
            if (subscribed != null) {
                Boolean value = bool(subscribed);
                if (value == null) return new Skip(line, "invalid_subscribed", "subscribed must be true or false");
                if (!value) return new Skip(line, "unsubscribed", "subscribed is false");
            }
        } else {
            String invalid = c.get(r, "invalid_identifier");
            if (invalid != null && Boolean.TRUE.equals(bool(invalid))) {
                return new Skip(line, "invalid_identifier", "invalid_identifier is true");
            }
            String types = c.get(r, "notification_types");
            if (types != null) {
                Long t = integer(types);
                if (t == null) return new Skip(line, "invalid_subscribed", "notification_types must be an integer");
                if (t < 0) return new Skip(line, "unsubscribed", "notification_types is " + t);
            }
        }
        String source = c.get(r, template ? "source_device_id" : "id");
        if (source == null) return new Skip(line, "missing_source_id", (template ? "source_device_id" : "id") + " is empty");
        if (TextRules.length(source) > SOURCE_ID || TextRules.hasControl(source)) {
            return new Skip(line, "invalid_source_id", "the source id must be at most " + SOURCE_ID + " characters without control characters");
        }
        Platform platform;
        if (template) {
            String p = c.get(r, "platform");
            if (p == null) return new Skip(line, "invalid_platform", "platform is empty");
            switch (p.toLowerCase(Locale.ROOT)) {
                case "ios" -> platform = Platform.IOS;
                case "android" -> platform = Platform.ANDROID;
                case "web" -> {
                    return new Skip(line, "unsupported_platform", "web subscriptions are not migrated (ios or android only)");
                }
                default -> {
                    return new Skip(line, "invalid_platform", "platform must be ios or android");
                }
            }
        } else {
            String type = c.get(r, "device_type");
            Long t = type == null ? null : integer(type);
            if (t == null) return new Skip(line, "invalid_platform", "device_type must be 0 (iOS) or 1 (Android)");
            if (t == 0) platform = Platform.IOS;
            else if (t == 1) platform = Platform.ANDROID;
            else return new Skip(line, "unsupported_platform", "device_type " + t + " is not iOS (0) or Android (1)");
        }
        String token = c.get(r, template ? "push_token" : "identifier");
        if (token == null) return new Skip(line, "missing_push_token", (template ? "push_token" : "identifier") + " is empty");
        byte[] hash;
        try {
            if (token.length() > TOKEN) throw new IllegalArgumentException("must be at most " + TOKEN + " characters");
            hash = PushTokens.check(platform, token, false).identityHash();
        } catch (IllegalArgumentException e) {
            return new Skip(line, "invalid_push_token", "the " + platform.value() + " push token " + e.getMessage());
        }
        String user = c.get(r, "external_user_id");
        String problem = text("external_user_id", user, Limits.EXTERNAL_USER_ID);
        String appVersion = c.get(r, template ? "app_version" : "game_version");
        if (problem == null) problem = text(template ? "app_version" : "game_version", appVersion, Limits.APP_VERSION);
        String model = template ? c.get(r, "device_model") : null;
        if (problem == null) problem = text("device_model", model, Limits.DEVICE_MODEL);
        String os = c.get(r, template ? "os_version" : "device_os");
        if (problem == null) problem = text(template ? "os_version" : "device_os", os, Limits.OS_VERSION);
        String locale = template ? c.get(r, "locale") : null;
        if (problem == null) problem = text("locale", locale, Limits.LOCALE);
        if (problem != null) return new Skip(line, "invalid_field", problem);
        // an invalid or numeric-offset time zone is ignored, not a reason to skip the device
        String zone = template ? c.get(r, "timezone") : null;
        if (!TimeZones.isValid(zone)) zone = null;
        String tagsColumn = template ? "tags_json" : "tags";
        String tags = c.get(r, tagsColumn);
        String tagsJson = null;
        if (tags != null) {
            tagsJson = tags(tagsColumn, tags);
            if (tagsJson.startsWith("!")) return new Skip(line, "invalid_tags", tagsJson.substring(1));
        }
        return new Row(line, platform, hash, source, user, appVersion, model, os, locale, zone, tagsJson);
    }

    /** The tags as normalised JSON, or {@code "!"} and the problem. The registration's tag rules ({@link Tags}) apply. */
    private static String tags(String column, String raw) {
        JsonNode node;
        try {
            node = JSON.readTree(raw);
        } catch (JacksonException e) {
            return "!" + column + " is not JSON";
        }
        ObjectNode wrapper = JSON.createObjectNode();
        wrapper.set(column, node);
        JsonInput in = JsonInput.object(wrapper);
        Map<String, String> tags = Tags.read(in, column);
        if (in.hasErrors() || tags == null) {
            try {
                in.check();
            } catch (dev.pushservice.platform.domain.InvalidInput e) {
                if (!e.violations().isEmpty()) return "!" + e.violations().getFirst().field() + " " + e.violations().getFirst().message();
            }
            return "!" + column + " must be a JSON object of tags";
        }
        return tags.isEmpty() ? null : JSON.writeValueAsString(tags);
    }

    private static String text(String column, String value, int max) {
        if (value == null) return null;
        if (TextRules.length(value) > max) return column + " must be at most " + max + " characters";
        if (TextRules.hasControl(value)) return column + " " + TextRules.NO_CONTROL;
        return null;
    }

    private static Boolean bool(String s) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "true", "t", "1", "yes" -> true;
            case "false", "f", "0", "no" -> false;
            default -> null;
        };
    }

    private static Long integer(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Collects the first {@code limit} skips and counts every skip by reason. */
    static final class Skips implements Consumer<Skip> {
        final Map<String, Long> byReason = new java.util.TreeMap<>();
        final List<Skip> first = new ArrayList<>();
        private final int limit;

        Skips(int limit) {
            this.limit = limit;
        }

        @Override
        public void accept(Skip s) {
            byReason.merge(s.reason(), 1L, Long::sum);
            if (first.size() < limit) first.add(s);
        }
    }
}
