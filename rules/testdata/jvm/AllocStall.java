import java.util.concurrent.ThreadLocalRandom;

// AllocStall allocates faster than ZGC can collect a heap that is mostly
// live: each worker replaces entries of a cache that fills most of the
// heap, so ZGC runs out of free pages and stalls the allocating threads.
public class AllocStall {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 8;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        byte[][] cache = new byte[40_000][]; // about 40 MB live at 1 KB an entry
        for (int i = 0; i < cache.length; i++) cache[i] = new byte[1024];
        Thread[] workers = new Thread[2];
        for (int w = 0; w < workers.length; w++) {
            workers[w] = new Thread(() -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                while (System.nanoTime() < end) {
                    cache[rnd.nextInt(cache.length)] = render(rnd.nextInt(2048));
                }
            }, "worker-" + w);
            workers[w].start();
        }
        for (Thread t : workers) t.join();
    }

    static byte[] render(int n) {
        byte[] b = new byte[512 + n];
        b[n] = (byte) n;
        sink += b.length;
        return b;
    }
}
