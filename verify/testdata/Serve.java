import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.Executors;

// An HTTP server for verify's JVM test: every request sorts and formats a
// little data, code the JIT compiles in the first seconds under load.
// Arguments: the port on 127.0.0.1.
public class Serve {
    public static void main(String[] args) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 256);
        s.createContext("/", ex -> {
            long seed = System.nanoTime();
            int[] a = new int[256];
            for (int i = 0; i < a.length; i++) {
                seed = seed * 6364136223846793005L + 1442695040888963407L;
                a[i] = (int) (seed >>> 33);
            }
            Arrays.sort(a);
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < a.length; i += 16) {
                b.append(String.format("%08x ", a[i]));
            }
            byte[] body = b.toString().getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(body);
            }
        });
        s.setExecutor(Executors.newFixedThreadPool(4));
        s.start();
    }
}
