package dev.pushservice.platform.storage;

import java.time.Instant;
import java.util.UUID;

/**
 * Time-ordered ids (RFC 9562 version 7): the Unix time in milliseconds in the first 48 bits, then
 * 74 random bits (from {@link UUID#randomUUID()}, a cryptographically strong source). A table range-
 * partitioned on such an id by time ({@code notification_recipients} by {@code notification_id},
 * docs/storage.md) finds the partition of a row from its id alone; devices and users get such ids so that
 * new rows go to the right edge of their primary keys (migration V56, whose SQL {@code storage_uuid7}
 * makes the same ids in the database).
 */
public final class Uuid7 {

    private Uuid7() {
    }

    /** A new random id whose time part is {@code at}. */
    public static UUID at(Instant at) {
        long millis = at.toEpochMilli();
        if (millis < 0 || millis >= 1L << 48) throw new IllegalArgumentException("outside UUIDv7's time range: " + at);
        UUID random = UUID.randomUUID();
        long high = millis << 16 | 0x7000L | random.getMostSignificantBits() & 0x0FFFL;
        long low = random.getLeastSignificantBits() & 0x3FFF_FFFF_FFFF_FFFFL | 0x8000_0000_0000_0000L;
        return new UUID(high, low);
    }

    /** The time part of a version 7 id. */
    public static Instant time(UUID id) {
        if (id.version() != 7) throw new IllegalArgumentException("not a version 7 id: " + id);
        return Instant.ofEpochMilli(id.getMostSignificantBits() >>> 16);
    }
}
