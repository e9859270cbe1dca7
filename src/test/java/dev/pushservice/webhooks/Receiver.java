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
 * A real HTTP or HTTPS ({@link #https}) endpoint on 127.0.0.1 for webhook tests: records every request (headers with
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
    private final String scheme;
    private final Map<String, BlockingQueue<Request>> received = new ConcurrentHashMap<>();
    private final Map<String, ConcurrentLinkedQueue<Reply>> script = new ConcurrentHashMap<>();

    /** Plain HTTP (webhooks reach it with {@code PUSH_WEBHOOKS_ALLOW_INSECURE}). */
    Receiver() {
        this(null);
    }

    /** HTTPS with {@code key} and its certificate {@code chain} (the certificate, then its CA). */
    static Receiver https(java.security.PrivateKey key, java.security.cert.X509Certificate... chain) {
        try {
            java.security.KeyStore store = java.security.KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry("server", key, new char[0], chain);
            javax.net.ssl.KeyManagerFactory keys = javax.net.ssl.KeyManagerFactory.getInstance(
                    javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
            keys.init(store, new char[0]);
            javax.net.ssl.SSLContext tls = javax.net.ssl.SSLContext.getInstance("TLS");
            tls.init(keys.getKeyManagers(), null, null);
            return new Receiver(tls);
        } catch (java.security.GeneralSecurityException | IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private Receiver(javax.net.ssl.SSLContext tls) {
        try {
            InetSocketAddress loopback = new InetSocketAddress("127.0.0.1", 0);
            if (tls == null) {
                server = HttpServer.create(loopback, 0);
                scheme = "http";
            } else {
                com.sun.net.httpserver.HttpsServer secure = com.sun.net.httpserver.HttpsServer.create(loopback, 0);
                secure.setHttpsConfigurator(new com.sun.net.httpserver.HttpsConfigurator(tls));
                server = secure;
                scheme = "https";
            }
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
        return scheme + "://127.0.0.1:" + server.getAddress().getPort() + path;
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
