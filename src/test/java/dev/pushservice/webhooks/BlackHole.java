package dev.pushservice.webhooks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A receiver that never answers, on 127.0.0.1: it accepts every TCP connection and then neither
 * reads nor writes, so an HTTP request waits for an answer and a TLS handshake for the server's
 * hello until the client gives up. {@link #close} resets every connection it holds.
 */
final class BlackHole implements AutoCloseable {

    private final ServerSocket server;
    private final List<Socket> held = new CopyOnWriteArrayList<>();

    BlackHole() {
        try {
            server = new ServerSocket(0, 1000, InetAddress.getByName("127.0.0.1"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Thread.ofVirtual().name("black-hole").start(() -> {
            while (!server.isClosed()) {
                try {
                    held.add(server.accept());
                } catch (IOException e) {
                    return; // closed
                }
            }
        });
    }

    String url(String scheme, String path) {
        return scheme + "://127.0.0.1:" + server.getLocalPort() + path;
    }

    /** Connections accepted so far (each one an attempt that waits). */
    int accepted() {
        return held.size();
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Socket s : held) {
            try {
                s.setSoLinger(true, 0);
                s.close();
            } catch (IOException ignored) {
                // already gone
            }
        }
    }
}
