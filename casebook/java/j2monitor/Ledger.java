package casebook.j2;

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
 * Case J2 (jvm-lock-contention): a ledger service that books each payment
 * against an account balance and records it with an audit service (5 ms a
 * call, on loopback). The bad variant makes the audit call inside the
 * synchronized block that guards the balances, so every request waits for
 * the audit calls of all the requests ahead of it; the fixed variant books
 * under the monitor and makes the call after leaving it.
 *
 * Usage: Ledger bad|fixed. Prints "app=URL" once it listens on 127.0.0.1.
 */
public final class Ledger {
    static final int AUDIT_MILLIS = 5;

    final long[] balances = new long[64];
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    final URI audit;
    final boolean bad;
    long entries;

    Ledger(URI audit, boolean bad) {
        this.audit = audit;
        this.bad = bad;
    }

    void record(String entry) throws IOException, InterruptedException {
        client.send(HttpRequest.newBuilder(audit).POST(HttpRequest.BodyPublishers.ofString(entry)).build(),
                HttpResponse.BodyHandlers.discarding());
    }

    /** book applies a payment and has it audited. */
    String book(int account, long cents) throws IOException, InterruptedException {
        String entry;
        long balance;
        synchronized (this) {
            balances[account] += cents;
            balance = balances[account];
            entry = (++entries) + " " + account + " " + cents;
            if (bad) record(entry); // the audit call while every other payment waits
        }
        if (!bad) record(entry);
        return "{\"account\":" + account + ",\"balance\":" + balance + "}\n";
    }

    static ExecutorService named(int threads, String prefix) {
        AtomicInteger n = new AtomicInteger();
        return Executors.newFixedThreadPool(threads, r -> new Thread(r, prefix + n.incrementAndGet()));
    }

    static void reply(HttpExchange ex, int status, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1 || !(args[0].equals("bad") || args[0].equals("fixed"))) {
            System.err.println("usage: Ledger bad|fixed");
            System.exit(2);
        }
        // The audit service: its own server and threads, 5 ms a call.
        HttpServer auditor = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        auditor.createContext("/audit", ex -> {
            ex.getRequestBody().readAllBytes();
            try {
                Thread.sleep(AUDIT_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            reply(ex, 200, "ok\n");
        });
        auditor.setExecutor(named(64, "audit-"));
        auditor.start();

        Ledger ledger = new Ledger(URI.create("http://127.0.0.1:" + auditor.getAddress().getPort() + "/audit"), args[0].equals("bad"));
        AtomicInteger next = new AtomicInteger();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/pay", ex -> {
            try {
                reply(ex, 200, ledger.book(Math.floorMod(next.getAndIncrement(), 64), 125));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                reply(ex, 503, "interrupted\n");
            }
        });
        server.setExecutor(named(16, "ledger-worker-"));
        server.start();
        System.out.println("app=http://127.0.0.1:" + server.getAddress().getPort() + "/pay");
        System.out.flush();
    }
}
