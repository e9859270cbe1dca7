package dev.pushservice.notifications;

import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.List;
import java.util.UUID;

/**
 * One page of a notification's recipient list ({@code GET /v1/notifications/{id}/recipients}): the
 * spec's {@code page} and {@code limit}, plus {@code next_cursor}, an opaque position after the
 * page's last recipient (null on the last page). Given back as {@code cursor}, it reads the next page
 * through the primary keys of the recipients and of their batches (by list key and device id), at the
 * same cost however deep; while the send runs, a recipient whose first attempt does not end accepted may
 * be seen twice (it moves forward), none is missed. {@code page} reads by offset, and only up to
 * {@value #MAX_OFFSET_ROWS} rows deep (docs/api-decisions.md).
 */
record RecipientPage(List<NotificationView.RecipientView> data, Pagination pagination) {

    /** Offset paging reads up to this many rows ({@code page × limit}); deeper pages are read by cursor. */
    static final int MAX_OFFSET_ROWS = 10_000;

    record Pagination(int page, int limit, boolean has_more, String next_cursor) {
    }

    /** Version 1 named a device (the list was in device order); version 2 a list key and a device. */
    private static final byte DEVICE_ONLY = 1;
    private static final byte VERSION = 2;
    private static final int DEVICE_ONLY_LENGTH = 23; // 17 bytes, base64url without padding
    private static final int ENCODED_LENGTH = 44; // 33 bytes

    /** The cursor after {@code last}: not meant to be read by clients (its form may change). */
    static String cursor(NotificationReadRepository.Recipient last) {
        ByteBuffer b = ByteBuffer.allocate(33).put(VERSION)
                .putLong(last.listKey().getMostSignificantBits()).putLong(last.listKey().getLeastSignificantBits())
                .putLong(last.deviceId().getMostSignificantBits()).putLong(last.deviceId().getLeastSignificantBits());
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b.array());
    }

    /**
     * The position a cursor is after, or null when {@code cursor} is not one this service made. A version 1
     * cursor (a device id, from before V58) reads as that device's row's place, which is where it was.
     */
    static NotificationReadRepository.ListPosition after(String cursor) {
        if (cursor.length() != ENCODED_LENGTH && cursor.length() != DEVICE_ONLY_LENGTH) return null;
        byte[] bytes;
        try {
            bytes = Base64.getUrlDecoder().decode(cursor);
        } catch (IllegalArgumentException e) {
            return null;
        }
        if (bytes.length == 17 && bytes[0] == DEVICE_ONLY) {
            ByteBuffer b = ByteBuffer.wrap(bytes, 1, 16);
            UUID device = new UUID(b.getLong(), b.getLong());
            return new NotificationReadRepository.ListPosition(device, device);
        }
        if (bytes.length != 33 || bytes[0] != VERSION) return null;
        ByteBuffer b = ByteBuffer.wrap(bytes, 1, 32);
        UUID listKey = new UUID(b.getLong(), b.getLong());
        UUID device = new UUID(b.getLong(), b.getLong());
        // a list key is the smallest device id of its group: a position before it was not made by this list
        if (compareAsPostgres(device, listKey) < 0) return null;
        return new NotificationReadRepository.ListPosition(listKey, device);
    }

    /** PostgreSQL's order of uuids (bytes, unsigned), which {@link UUID#compareTo} (signed halves) is not. */
    static int compareAsPostgres(UUID a, UUID b) {
        int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    }
}
