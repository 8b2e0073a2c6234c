package perfdoctor.fixtures;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The JVM service behind pool001's recorded cases: an order API whose every
 * request asks a pricing backend for a price over a pooled connection
 * (20 ms a call, spent sleeping in the backend's own JVM). Neither of its
 * pools is a java.util.concurrent executor, so nothing recognises them by
 * class:
 *
 *   Orders backend PORT                 the pricing backend: a line protocol,
 *                                       each request answered after 20 ms
 *   Orders workers N BACKEND_PORT       the HTTP server runs requests on a
 *                                       hand-made pool of N worker threads,
 *                                       with 64 backend connections
 *   Orders connections N BACKEND_PORT   the HTTP server runs requests on 64
 *                                       threads sharing a hand-made pool of N
 *                                       backend connections
 *
 * Prints "app=URL" (or "backend=PORT") once it listens on 127.0.0.1.
 */
public final class Orders {
    static final int BACKEND_MILLIS = 20;

    public static void main(String[] args) throws Exception {
        switch (args.length > 0 ? args[0] : "") {
            case "backend" -> backend(Integer.parseInt(args[1]));
            case "workers" -> api(new Workers(Integer.parseInt(args[1])), 64, Integer.parseInt(args[2]));
            case "connections" -> api(Executors.newFixedThreadPool(64, named("http-worker-")), Integer.parseInt(args[1]), Integer.parseInt(args[2]));
            default -> {
                System.err.println("usage: Orders backend PORT | workers N BACKEND_PORT | connections N BACKEND_PORT");
                System.exit(2);
            }
        }
    }

    /** The pricing backend: one thread per connection, 20 ms per request line. */
    static void backend(int port) throws IOException {
        ServerSocket ss = new ServerSocket();
        ss.bind(new InetSocketAddress("127.0.0.1", port), 256);
        System.out.println("backend=" + port);
        System.out.flush();
        AtomicInteger n = new AtomicInteger();
        while (true) {
            Socket s = ss.accept();
            s.setTcpNoDelay(true);
            Thread t = new Thread(() -> serveBackend(s), "pricing-" + n.incrementAndGet());
            t.setDaemon(true);
            t.start();
        }
    }

    static void serveBackend(Socket s) {
        try (s; BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                Thread.sleep(BACKEND_MILLIS);
                out.println("42.17 " + line);
            }
        } catch (IOException | InterruptedException e) {
            // the client went away
        }
    }

    /** A connection to the backend, borrowed from the pool for one call. */
    static final class Conn {
        final Socket socket;
        final BufferedReader in;
        final PrintWriter out;

        Conn(int port) throws IOException {
            socket = new Socket("127.0.0.1", port);
            socket.setTcpNoDelay(true);
            in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            out = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.UTF_8);
        }

        String price(String item) throws IOException {
            out.println(item);
            return in.readLine();
        }
    }

    /** A hand-made connection pool: a queue of open connections. */
    static final class ConnPool {
        final BlockingQueue<Conn> idle;

        ConnPool(int size, int port) throws IOException {
            idle = new ArrayBlockingQueue<>(size);
            for (int i = 0; i < size; i++) {
                idle.add(new Conn(port));
            }
        }

        String price(String item) throws IOException, InterruptedException {
            Conn c = idle.take();
            try {
                return c.price(item);
            } finally {
                idle.put(c);
            }
        }
    }

    /** A hand-made worker pool: N threads taking requests from one queue. */
    static final class Workers implements Executor {
        final BlockingQueue<Runnable> queue = new LinkedBlockingQueue<>();

        Workers(int size) {
            for (int i = 1; i <= size; i++) {
                Thread t = new Thread(this::work, "order-worker-" + i);
                t.setDaemon(true);
                t.start();
            }
        }

        void work() {
            while (true) {
                try {
                    queue.take().run();
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    e.printStackTrace();
                }
            }
        }

        @Override
        public void execute(Runnable r) {
            queue.add(r);
        }
    }

    static void api(Executor executor, int connections, int backendPort) throws IOException {
        ConnPool pool = new ConnPool(connections, backendPort);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/orders", ex -> {
            String item = ex.getRequestURI().getPath().substring("/orders".length());
            String price;
            try {
                price = pool.price(item);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                ex.sendResponseHeaders(503, -1);
                return;
            }
            reply(ex, "{\"item\":\"" + item + "\",\"price\":\"" + price + "\"}\n");
        });
        server.setExecutor(executor);
        server.start();
        System.out.println("app=http://127.0.0.1:" + server.getAddress().getPort() + "/orders/5");
        System.out.flush();
    }

    static java.util.concurrent.ThreadFactory named(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    static void reply(HttpExchange ex, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(200, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }
}
