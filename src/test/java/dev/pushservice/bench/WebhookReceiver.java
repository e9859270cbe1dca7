package dev.pushservice.bench;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The receiving end of {@code bench/webhooks.sh}: answers 204 to every request on 127.0.0.1:PORT,
 * and once EXPECTED requests have arrived prints how many came and at what rate from the first to
 * the last. Exits after TIMEOUT seconds at most (printing what arrived).
 * Usage: {@code WebhookReceiver PORT EXPECTED [TIMEOUT=300]}
 */
public final class WebhookReceiver {

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int expected = Integer.parseInt(args[1]);
        long timeout = args.length > 2 ? Long.parseLong(args[2]) : 300;
        AtomicInteger count = new AtomicInteger();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 1024);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(204, -1);
            exchange.close();
            long now = System.nanoTime();
            first.compareAndSet(0, now);
            last.set(now);
            if (count.incrementAndGet() == expected) done.countDown();
        });
        server.start();
        System.out.println("receiver listening on 127.0.0.1:" + port);
        boolean all = done.await(timeout, java.util.concurrent.TimeUnit.SECONDS);
        server.stop(0);
        double seconds = Duration.ofNanos(last.get() - first.get()).toNanos() / 1e9;
        System.out.printf("deliveries received: %d of %d%s%n", count.get(), expected, all ? "" : " (timed out)");
        if (seconds > 0) System.out.printf("delivery rate: %.0f deliveries/s over %.2f s (first to last)%n", count.get() / seconds, seconds);
        System.exit(all ? 0 : 1);
    }
}
