package dev.pushservice.delivery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.support.ApiTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Background threads run at the nice value {@code PUSH_BACKGROUND_NICE} (10 by default) and the threads that serve
 * requests at the normal priority. This JVM's own threads are read from {@code /proc}, where Linux keeps the first
 * 15 characters of a thread's name ({@code delivery-bulk-recorder} is {@code delivery-bulk-r}).
 */
class BackgroundPriorityTests extends ApiTest {

    @Test
    void bulkDeliveryRunsBelowRequestsAndTransactionalDoesNot() throws Exception {
        TestApp app = newApp();
        // each lane thread lowers itself as it starts: wait until the last has
        await().atMost(Duration.ofSeconds(20)).until(() -> niceByThreadName().getOrDefault("delivery-bulk-c", List.of()).contains(10));
        // a request, so the virtual threads' carriers exist
        assertThat(api.get("/v1/app/settings", app.serverKey()).status()).isEqualTo(200);

        Map<String, List<Integer>> byName = niceByThreadName();
        for (String background : List.of("delivery-bulk-r", "delivery-bulk-c", "delivery-normal", "delivery-high-r",
                "delivery-high-c")) {
            assertThat(byName.get(background)).as(background + " " + byName).isNotEmpty().containsOnly(10);
        }
        // transactional sends are what a user waits for: the lane's threads keep the normal priority
        assertThat(byName.get("delivery-transa")).as("delivery-transactional-* " + byName).isNotEmpty().containsOnly(0);
        // requests run on virtual threads over the ForkJoinPool's carriers, never lowered
        List<Integer> carriers = byName.entrySet().stream().filter(e -> e.getKey().startsWith("ForkJoinPool-"))
                .flatMap(e -> e.getValue().stream()).toList();
        assertThat(carriers).as("carriers " + byName).isNotEmpty().containsOnly(0);
    }

    /** The nice value (field 19 of {@code /proc/self/task/<tid>/stat}) of each of this JVM's threads, by name. */
    private static Map<String, List<Integer>> niceByThreadName() throws IOException {
        Map<String, List<Integer>> byName = new HashMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    String name = Files.readString(task.resolve("comm")).strip();
                    String stat = Files.readString(task.resolve("stat"));
                    // after the name in parentheses: state is field 3, so nice (19) is the 17th from there
                    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    byName.computeIfAbsent(name, k -> new ArrayList<>()).add(Integer.parseInt(fields[16]));
                } catch (IOException ended) {
                    // the thread ended while listed
                }
            }
        }
        return byName;
    }
}
