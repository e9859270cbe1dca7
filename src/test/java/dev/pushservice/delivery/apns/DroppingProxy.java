package dev.pushservice.delivery.apns;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP relay on loopback whose connections the test can cut at any moment: the way to drop an
 * HTTP/2 connection while a request is in flight, as a network or a restarting server would. It
 * can also go {@linkplain #down() down} (connections cut, new ones refused, as a peer killed with -9)
 * and {@linkplain #up() up} again on the same port.
 */
public final class DroppingProxy implements AutoCloseable {

    private volatile ServerSocket listener;
    private final int port;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();

    public DroppingProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.port = listener.getLocalPort();
        ServerSocket l = listener;
        Thread.ofVirtual().start(() -> acceptLoop(l));
    }

    public int port() {
        return port;
    }

    /** Cuts every connection and refuses new ones (the port is closed) until {@link #up()}. */
    public synchronized void down() throws IOException {
        listener.close();
        dropAll();
    }

    /** Accepts connections again, on the same port. */
    public synchronized void up() throws IOException {
        if (!listener.isClosed()) return;
        ServerSocket l = new ServerSocket();
        l.setReuseAddress(true);
        l.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 50);
        listener = l;
        Thread.ofVirtual().start(() -> acceptLoop(l));
    }

    /** Closes every relayed connection (both sides) without an HTTP/2 GOAWAY. */
    public void dropAll() {
        for (Socket socket : sockets) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // already closed
            }
        }
        sockets.clear();
    }

    private void acceptLoop(ServerSocket listener) {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 5000);
                sockets.add(client);
                sockets.add(upstream);
                Thread.ofVirtual().start(() -> pump(client, upstream));
                Thread.ofVirtual().start(() -> pump(upstream, client));
            } catch (IOException e) {
                return;
            }
        }
    }

    private static void pump(Socket from, Socket to) {
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            in.transferTo(out);
        } catch (IOException e) {
            // the other side closed or the test dropped the connection
        } finally {
            try {
                from.close();
                to.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        dropAll();
    }
}
