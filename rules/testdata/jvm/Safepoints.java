import java.util.ArrayList;
import java.util.List;

// Safepoints holds the JVM's safepoints up: a worker runs long counted
// loops (int-indexed, so with SerialGC or ParallelGC the JIT leaves no
// safepoint poll inside them) while a "watchdog" asks for every thread's
// stack 20 times a second, and a second worker allocates so young
// collections need safepoints too. Each safepoint waits for the loop.
public class Safepoints {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 8;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        int[] data = new int[1 << 20];
        for (int i = 0; i < data.length; i++) data[i] = i * 7;
        Thread loop = new Thread(() -> {
            while (System.nanoTime() < end) sink += checksum(data, 150_000_000);
        }, "checksum");
        Thread alloc = new Thread(() -> {
            List<byte[]> window = new ArrayList<>();
            while (System.nanoTime() < end) {
                window.add(new byte[4096]);
                if (window.size() > 2000) window.clear();
            }
        }, "allocator");
        Thread watchdog = new Thread(() -> {
            while (System.nanoTime() < end) {
                sink += Thread.getAllStackTraces().size();
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "watchdog");
        loop.start();
        alloc.start();
        watchdog.start();
        loop.join();
        alloc.join();
        watchdog.join();
    }

    // checksum is a counted loop: an int index up to a bound.
    static int checksum(int[] a, int n) {
        int h = 1;
        int mask = a.length - 1;
        for (int i = 0; i < n; i++) {
            h = h * 31 + a[i & mask];
        }
        return h;
    }
}
