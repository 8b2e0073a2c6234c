package casebook.j3;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Case J3 (jvm-thread-pool-size): a quote service whose every request asks a
 * pricing backend (20 ms a call, on loopback) for the price. The bad variant
 * serves requests on a pool of 2 threads, sized for the CPUs as if the work
 * were CPU-bound: both threads wait on the backend while requests queue and
 * the CPUs idle. The fixed variant sizes the pool by Little's law for the
 * concurrency it must carry (32 threads).
 *
 * Usage: Quotes bad|fixed. Prints "app=URL" once it listens on 127.0.0.1.
 */
public final class Quotes {
    static final int BACKEND_MILLIS = 20;

    static ExecutorService named(int threads, String prefix) {
        AtomicInteger n = new AtomicInteger();
        return Executors.newFixedThreadPool(threads, r -> new Thread(r, prefix + n.incrementAndGet()));
    }

    static void reply(HttpExchange ex, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(200, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1 || !(args[0].equals("bad") || args[0].equals("fixed"))) {
            System.err.println("usage: Quotes bad|fixed");
            System.exit(2);
        }
        boolean bad = args[0].equals("bad");

        // The pricing backend: its own server and threads, 20 ms a call.
        HttpServer backend = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        backend.createContext("/price", ex -> {
            try {
                Thread.sleep(BACKEND_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            reply(ex, "42.17\n");
        });
        backend.setExecutor(named(64, "pricing-"));
        backend.start();
        URI price = URI.create("http://127.0.0.1:" + backend.getAddress().getPort() + "/price");

        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/quote", ex -> {
            String p;
            try {
                p = client.send(HttpRequest.newBuilder(price).build(), HttpResponse.BodyHandlers.ofString()).body().trim();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                ex.sendResponseHeaders(503, -1);
                return;
            }
            reply(ex, "{\"symbol\":\"ACME\",\"price\":" + p + "}\n");
        });
        // The bad pool is sized for CPU-bound work; these requests mostly wait.
        server.setExecutor(named(bad ? 2 : 32, "quote-worker-"));
        server.start();
        System.out.println("app=http://127.0.0.1:" + server.getAddress().getPort() + "/quote");
        System.out.flush();
    }
}
