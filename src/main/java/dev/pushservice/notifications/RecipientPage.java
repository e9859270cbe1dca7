package dev.pushservice.notifications;

import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.List;
import java.util.UUID;

/**
 * One page of a notification's recipient list ({@code GET /v1/notifications/{id}/recipients}): the
 * spec's {@code page} and {@code limit}, plus {@code next_cursor}, an opaque position after the
 * page's last recipient (null on the last page). Given back as {@code cursor}, it reads the next page
 * through the recipients' primary key (by device id), at the same cost however deep, and sees each
 * recipient once while their states change. {@code page} reads by offset, and only up to
 * {@value #MAX_OFFSET_ROWS} rows deep (docs/api-decisions.md).
 */
record RecipientPage(List<NotificationView.RecipientView> data, Pagination pagination) {

    /** Offset paging reads up to this many rows ({@code page × limit}); deeper pages are read by cursor. */
    static final int MAX_OFFSET_ROWS = 10_000;

    record Pagination(int page, int limit, boolean has_more, String next_cursor) {
    }

    private static final byte VERSION = 1;
    private static final int ENCODED_LENGTH = 23; // 17 bytes, base64url without padding

    /** The cursor after {@code deviceId}: not meant to be read by clients (its form may change). */
    static String cursor(UUID deviceId) {
        ByteBuffer b = ByteBuffer.allocate(17).put(VERSION)
                .putLong(deviceId.getMostSignificantBits()).putLong(deviceId.getLeastSignificantBits());
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b.array());
    }

    /** The device id a cursor is after, or null when {@code cursor} is not one this service made. */
    static UUID after(String cursor) {
        if (cursor.length() != ENCODED_LENGTH) return null;
        byte[] bytes;
        try {
            bytes = Base64.getUrlDecoder().decode(cursor);
        } catch (IllegalArgumentException e) {
            return null;
        }
        if (bytes.length != 17 || bytes[0] != VERSION) return null;
        ByteBuffer b = ByteBuffer.wrap(bytes, 1, 16);
        return new UUID(b.getLong(), b.getLong());
    }
}
