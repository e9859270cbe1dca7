package dev.pushservice.platform.json;

/**
 * Whether a request body is UTF-8, as RFC 8259 requires of JSON exchanged between systems. The JSON
 * parser is lenient: it decoded overlong forms ({@code C0 AF} as {@code /}), code points above
 * U+10FFFF and (with a {@code charset} parameter) other encodings, so a body that is not UTF-8 could
 * be stored as something the client never sent. Checked once per body, before any route reads it.
 *
 * <p>Encoded surrogates ({@code ED A0..BF ..}) are let through here: they are not UTF-8 either, but
 * {@link StorableText} already refuses them with a 422 naming the field, which tells the client more.
 * Stateless and thread-safe.
 */
public final class Utf8 {

    private Utf8() {
    }

    /** True when {@code bytes} is well-formed UTF-8 (RFC 3629, table 3-7 of Unicode), surrogates aside. */
    public static boolean isValid(byte[] bytes) {
        int i = 0;
        int n = bytes.length;
        while (i < n) {
            int b = bytes[i] & 0xFF;
            if (b < 0x80) {
                i++;
                continue;
            }
            int more;
            int lo = 0x80;
            int hi = 0xBF;
            if (b >= 0xC2 && b <= 0xDF) {
                more = 1;
            } else if (b == 0xE0) {
                more = 2;
                lo = 0xA0;
            } else if (b >= 0xE1 && b <= 0xEF) {
                more = 2; // 0xED (surrogates) included: StorableText reports those
            } else if (b == 0xF0) {
                more = 3;
                lo = 0x90;
            } else if (b >= 0xF1 && b <= 0xF3) {
                more = 3;
            } else if (b == 0xF4) {
                more = 3;
                hi = 0x8F;
            } else {
                return false; // a continuation byte first, C0/C1 (overlong) or F5..FF
            }
            if (i + more >= n) return false; // cut off at the end
            int second = bytes[i + 1] & 0xFF;
            if (second < lo || second > hi) return false;
            for (int k = 2; k <= more; k++) {
                int c = bytes[i + k] & 0xFF;
                if (c < 0x80 || c > 0xBF) return false;
            }
            i += more + 1;
        }
        return true;
    }
}
