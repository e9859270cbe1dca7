package dev.pushservice.webhooks;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * A real HTTP endpoint on 127.0.0.1 for webhook tests: records every request (headers with
 * lower-case names, body) per path and answers with the next scripted {@link Reply} of that path
 * (200 once the script is used up). Each request runs on its own virtual thread, so a reply that
 * hangs delays nothing else.
 */
final class Receiver implements AutoCloseable {

    record Request(String path, Map<String, List<String>> headers, String body, long receivedNanos) {
        String header(String name) {
            List<String> v = headers.get(name);
            return v == null ? null : v.getFirst();
        }
    }

    record Reply(int status, Map<String, String> headers, Duration delay) {
        static Reply status(int status) {
            return new Reply(status, Map.of(), Duration.ZERO);
        }
    }

    private final HttpServer server;
    private final Map<String, BlockingQueue<Request>> received = new ConcurrentHashMap<>();
    private final Map<String, ConcurrentLinkedQueue<Reply>> script = new ConcurrentHashMap<>();

    Receiver() {
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> {
            String path = exchange.getRequestURI().getPath();
            byte[] body = exchange.getRequestBody().readAllBytes();
            Map<String, List<String>> headers = exchange.getRequestHeaders().entrySet().stream()
                    .collect(Collectors.toMap(e -> e.getKey().toLowerCase(Locale.ROOT), Map.Entry::getValue));
            queue(path).add(new Request(path, headers, new String(body, StandardCharsets.UTF_8), System.nanoTime()));
            ConcurrentLinkedQueue<Reply> replies = script.get(path);
            Reply reply = replies == null ? null : replies.poll();
            if (reply == null) reply = Reply.status(200);
            try {
                Thread.sleep(reply.delay());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            reply.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
            exchange.sendResponseHeaders(reply.status(), -1);
            exchange.close();
        });
        server.start();
    }

    private BlockingQueue<Request> queue(String path) {
        return received.computeIfAbsent(path, p -> new LinkedBlockingQueue<>());
    }

    String url(String path) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + path;
    }

    void script(String path, Reply... replies) {
        script.computeIfAbsent(path, p -> new ConcurrentLinkedQueue<>()).addAll(List.of(replies));
    }

    /** The next request to {@code path}, waiting up to {@code timeout}; fails the test when none comes. */
    Request next(String path, Duration timeout) {
        try {
            Request r = queue(path).poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (r == null) throw new AssertionError("no request to " + path + " within " + timeout);
            return r;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Requests to {@code path} until one matches, within {@code timeout}. */
    Request nextMatching(String path, Function<Request, Boolean> match, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Request r = next(path, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            if (match.apply(r)) return r;
        }
    }

    int count(String path) {
        return queue(path).size();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
