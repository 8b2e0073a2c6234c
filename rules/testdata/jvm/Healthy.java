import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

// Healthy is a small service at moderate load: two workers parse a request,
// look it up, and render a response, pausing between batches as a service
// waits for its clients. Its recordings are what a healthy JVM measures.
public class Healthy {
    static final Map<String, Integer> catalog = new HashMap<>();
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 8;
        for (int i = 0; i < 10_000; i++) catalog.put("item-" + i, i);
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            Thread t = new Thread(() -> serve(end), "worker-" + w);
            t.start();
            workers.add(t);
        }
        for (Thread t : workers) t.join();
    }

    static void serve(long end) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1500; i++) sink += handle("GET /items/item-" + rnd.nextInt(10_000) + " HTTP/1.1");
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    static int handle(String request) {
        String path = request.split(" ")[1];
        String key = path.substring(path.lastIndexOf('/') + 1);
        Integer v = catalog.get(key);
        StringBuilder body = new StringBuilder(64);
        body.append("{\"key\":\"").append(key).append("\",\"value\":").append(v).append('}');
        return body.toString().hashCode();
    }
}
