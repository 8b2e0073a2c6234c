import java.util.concurrent.ThreadLocalRandom;

// GCHeavy keeps a large, churning live set in a small heap: every request
// replaces a cached entry, so young collections copy many survivors and old
// collections run often. The collector's threads take much of the CPU.
public class GCHeavy {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 8;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        Object[] cache = new Object[400_000];
        Thread[] workers = new Thread[2];
        for (int w = 0; w < workers.length; w++) {
            workers[w] = new Thread(() -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                while (System.nanoTime() < end) {
                    cache[rnd.nextInt(cache.length)] = entry(rnd.nextInt(1000));
                }
            }, "worker-" + w);
            workers[w].start();
        }
        for (Thread t : workers) t.join();
    }

    static Object entry(int n) {
        long[] fields = new long[8 + (n & 15)];
        fields[0] = n;
        sink += fields.length;
        return new Object[] {fields, Integer.toString(n)};
    }
}
