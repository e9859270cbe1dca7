package dev.pushservice.platform.json;

import dev.pushservice.platform.error.ErrorDetail;
import dev.pushservice.platform.error.JsonPaths;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.TokenStreamContext;
import tools.jackson.databind.json.JsonMapper;

/**
 * The one rule for text the service accepts: no U+0000 (NUL) and no unpaired surrogate, in any JSON
 * string of a request body (values and keys), any query parameter and any path value. PostgreSQL
 * cannot store U+0000 in {@code text} or {@code jsonb}, and an unpaired surrogate is not Unicode text
 * (it cannot be written as UTF-8); refused once, before any route sees the input, they can never
 * reach a column, a log line or a push payload. The same pass refuses a number too large for a
 * double ({@link #NOT_FINITE}), which would otherwise be stored as the string {@code "Infinity"}.
 * Stateless and thread-safe.
 */
public final class StorableText {

    /** The message of every detail this class reports about text. */
    public static final String MESSAGE = "must not contain U+0000 (NUL) or an unpaired surrogate";
    /**
     * The message for a number too large for a double ({@code 1e999}): the parser reads it as infinity,
     * which JSON cannot hold, so it used to be stored and sent as the string {@code "Infinity"}.
     */
    public static final String NOT_FINITE = "must be a finite number (at most about 1.8e308 in magnitude)";
    static final int MAX_DETAILS = 50;

    private StorableText() {
    }

    /** True when {@code s} has neither U+0000 nor an unpaired surrogate. */
    public static boolean isStorable(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == 0 || Character.isLowSurrogate(c)) return false;
            if (Character.isHighSurrogate(c)) {
                if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) return false;
                i++;
            }
        }
        return true;
    }

    /**
     * One detail per string or key of the JSON {@code body} that is not storable (at most
     * {@value #MAX_DETAILS}), each naming its path ({@code tags.plan}, {@code content.data.k[2]}). A
     * body that is not JSON gives none: the route refuses it as malformed, before it can use it.
     */
    public static List<ErrorDetail> check(JsonMapper json, byte[] body) {
        if (!mayHoldUnstorable(body) && !mayHoldHugeNumber(body)) return List.of();
        List<ErrorDetail> details = new ArrayList<>();
        try (JsonParser parser = json.createParser(body)) {
            JsonToken token;
            while ((token = parser.nextToken()) != null && details.size() < MAX_DETAILS) {
                if ((token == JsonToken.PROPERTY_NAME || token == JsonToken.VALUE_STRING) && !isStorable(parser.getString())) {
                    details.add(new ErrorDetail(path(parser.streamReadContext()), MESSAGE));
                } else if (token == JsonToken.VALUE_NUMBER_FLOAT && Double.isInfinite(parser.getDoubleValue())) {
                    details.add(new ErrorDetail(path(parser.streamReadContext()), NOT_FINITE));
                }
            }
        } catch (JacksonException e) {
            return List.of();
        }
        return details;
    }

    /**
     * A cheap first pass over the bytes: JSON text can hold U+0000 only as the escape <code>&#92;u0000</code>
     * (raw control characters are not JSON), and a surrogate only as a <code>&#92;u</code> escape or as the
     * three-byte form starting with 0xED. Bodies without either (most of them) are not parsed twice.
     */
    private static boolean mayHoldUnstorable(byte[] body) {
        for (int i = 0; i < body.length; i++) {
            byte b = body[i];
            if (b == (byte) 0xED) return true;
            if (b == '\\' && i + 1 < body.length && body[i + 1] == 'u') return true;
        }
        return false;
    }

    /**
     * A cheap first pass for numbers a double cannot hold: only an exponent of three or more digits
     * ({@code 1e309}) or a run of 300 or more digits can overflow one. Strings that merely look like
     * that cost one extra parse; nothing is missed.
     */
    private static boolean mayHoldHugeNumber(byte[] body) {
        int digits = 0;
        for (int i = 0; i < body.length; i++) {
            byte b = body[i];
            if (b >= '0' && b <= '9') {
                if (++digits >= 300) return true;
                continue;
            }
            if ((b == 'e' || b == 'E') && i > 0 && (digits > 0 || body[i - 1] == '.')) {
                int j = i + 1;
                if (j < body.length && (body[j] == '+' || body[j] == '-')) j++;
                int exponent = 0;
                while (j < body.length && body[j] >= '0' && body[j] <= '9') {
                    exponent++;
                    j++;
                }
                if (exponent >= 3) return true;
            }
            if (b != '.') digits = 0;
        }
        return false;
    }

    /** The path of the current token in the error-detail form: {@code a.b[2].c} ({@link JsonPaths#of}). */
    static String path(TokenStreamContext context) {
        return JsonPaths.of(context);
    }

    /** A name as it can be shown ({@link JsonPaths#printable}). */
    public static String printable(String s) {
        return JsonPaths.printable(s);
    }
}
