package dev.pushservice.platform.requestid;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class RequestIdsTests {

    @Test
    void mintedIdsAreDistinctVersion4Uuids() {
        Set<UUID> seen = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            UUID id = RequestIds.mint();
            assertThat(id.version()).isEqualTo(4);
            assertThat(id.variant()).isEqualTo(2);
            assertThat(UUID.fromString(id.toString())).isEqualTo(id);
            seen.add(id);
        }
        assertThat(seen).hasSize(10_000);
    }
}
