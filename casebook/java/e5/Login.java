package casebook.e5;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;

/**
 * Case E5 (exception-overhead): a login service whose request parsing reads
 * sixteen optional numeric parameters. The bad variant parses each with
 * Integer.parseInt and swallows the NumberFormatException when it is absent,
 * as the real service did with harmless, frequent exceptions; the fixed
 * variant checks before parsing. The handler runs under a filter chain as
 * deep as a servlet container's, which is what makes each stack walk costly.
 *
 * Usage: Login bad|fixed. Prints "app=URL" once it listens on 127.0.0.1.
 */
public final class Login {
    static final int FIELDS = 16;
    static final int FILTERS = 40;
    static boolean bad;

    static int parseOr(String s, int def) {
        if (bad) {
            try {
                return Integer.parseInt(s);
            } catch (NumberFormatException e) {
                return def; // harmless, and thrown for every absent field
            }
        }
        if (s == null || s.isEmpty() || s.length() > 9) return def;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') return def;
        }
        return Integer.parseInt(s);
    }

    static Map<String, String> query(URI uri) {
        Map<String, String> out = new HashMap<>();
        String q = uri.getRawQuery();
        if (q == null) return out;
        for (String kv : q.split("&")) {
            int i = kv.indexOf('=');
            if (i > 0) out.put(kv.substring(0, i), kv.substring(i + 1));
        }
        return out;
    }

    /** login is the handler proper: options, a token derived from the user. */
    static String login(Map<String, String> q) {
        long h = 1125899906842597L;
        for (int i = 0; i < FIELDS; i++) h = 31 * h + parseOr(q.get("opt" + i), i);
        String user = q.getOrDefault("user", "anonymous");
        for (int round = 0; round < 200; round++) {
            for (int i = 0; i < user.length(); i++) h = 31 * h + user.charAt(i) + round;
        }
        return "{\"user\":\"" + user + "\",\"token\":\"" + Long.toHexString(h) + "\"}\n";
    }

    /** filter stands for a container's filter chain: depth frames above the handler. */
    static String filter(int depth, Map<String, String> q) {
        if (depth == 0) return login(q);
        return filter(depth - 1, q);
    }

    static void handle(HttpExchange ex) throws IOException {
        byte[] body = filter(FILTERS, query(ex.getRequestURI())).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1 || !(args[0].equals("bad") || args[0].equals("fixed"))) {
            System.err.println("usage: Login bad|fixed");
            System.exit(2);
        }
        bad = args[0].equals("bad");
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/login", Login::handle);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.start();
        System.out.println("app=http://127.0.0.1:" + server.getAddress().getPort() + "/login?user=alice");
        System.out.flush();
    }
}
