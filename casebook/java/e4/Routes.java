package casebook.e4;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import org.springframework.util.AntPathMatcher;

/**
 * Case E4 (framework-routing-cost): an API gateway with sixty routes. The bad
 * variant matches every request against the route patterns one by one with
 * Spring's AntPathMatcher, as Spring MVC's path mapping did in the real
 * service; the fixed variant resolves the path in a segment trie built once
 * at start-up.
 *
 * Usage: Routes bad|fixed. Prints "app=URL" once it listens on 127.0.0.1.
 */
public final class Routes {
    record Route(String pattern, String name) {}

    static final List<Route> ROUTES = new ArrayList<>();

    static {
        String[] resources = {"users", "orders", "products", "carts", "payments", "invoices", "shipments", "reviews", "coupons", "stores"};
        for (String r : resources) {
            ROUTES.add(new Route("/api/v1/" + r, r + ".list"));
            ROUTES.add(new Route("/api/v1/" + r + "/{id}", r + ".get"));
            ROUTES.add(new Route("/api/v1/" + r + "/{id}/history", r + ".history"));
            ROUTES.add(new Route("/api/v1/" + r + "/{id}/items/{item}", r + ".item"));
            ROUTES.add(new Route("/api/v2/" + r + "/**", r + ".v2"));
            ROUTES.add(new Route("/static/" + r + "/**/*.css", r + ".css"));
        }
    }

    // --- bad: pattern matching per request ---
    static final AntPathMatcher MATCHER = new AntPathMatcher();

    static String routeByPattern(String path) {
        for (Route r : ROUTES) {
            if (MATCHER.match(r.pattern(), path)) {
                Map<String, String> vars = MATCHER.extractUriTemplateVariables(r.pattern(), path);
                return r.name() + " " + vars;
            }
        }
        return null;
    }

    // --- fixed: a segment trie built once ---
    static final class Node {
        final Map<String, Node> literal = new HashMap<>();
        Node variable;
        String varName;
        Route route;
        Route rest; // a trailing "**" route
    }

    static final Node ROOT = new Node();

    static {
        for (Route r : ROUTES) {
            Node n = ROOT;
            for (String seg : r.pattern().substring(1).split("/")) {
                if (seg.equals("**")) {
                    n.rest = r;
                    n = null;
                    break;
                }
                if (seg.contains("*")) { // a file pattern after "**": covered by rest
                    continue;
                }
                if (seg.startsWith("{")) {
                    if (n.variable == null) n.variable = new Node();
                    n.varName = seg.substring(1, seg.length() - 1);
                    n = n.variable;
                } else {
                    n = n.literal.computeIfAbsent(seg, k -> new Node());
                }
            }
            if (n != null) n.route = r;
        }
    }

    static String routeByTrie(String path) {
        Node n = ROOT;
        Route rest = null;
        Map<String, String> vars = new LinkedHashMap<>();
        int start = 1;
        while (n != null && start <= path.length()) {
            if (n.rest != null) rest = n.rest;
            int end = path.indexOf('/', start);
            if (end < 0) end = path.length();
            String seg = path.substring(start, end);
            Node next = n.literal.get(seg);
            if (next == null && n.variable != null) {
                vars.put(n.varName, seg);
                next = n.variable;
            }
            n = next;
            start = end + 1;
        }
        if (n != null && n.route != null) return n.route.name() + " " + vars;
        return rest == null ? null : rest.name() + " {}";
    }

    static boolean bad;

    static void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getPath();
        String route = bad ? routeByPattern(path) : routeByTrie(path);
        int status = route == null ? 404 : 200;
        byte[] body = ((route == null ? "no route" : route) + "\n").getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1 || !(args[0].equals("bad") || args[0].equals("fixed"))) {
            System.err.println("usage: Routes bad|fixed");
            System.exit(2);
        }
        bad = args[0].equals("bad");
        // Both variants must agree before serving.
        for (String p : new String[]{"/api/v1/stores/42/items/7", "/api/v1/users", "/api/v2/coupons/a/b", "/nope"}) {
            String a = routeByPattern(p), b = routeByTrie(p);
            if (a == null ? b != null : !a.equals(b)) throw new IllegalStateException(p + ": " + a + " != " + b);
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/", Routes::handle);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.start();
        // The last resource's routes come last: the worst case for the pattern scan, and a common one.
        System.out.println("app=http://127.0.0.1:" + server.getAddress().getPort() + "/api/v1/stores/42/items/7");
        System.out.flush();
    }
}
