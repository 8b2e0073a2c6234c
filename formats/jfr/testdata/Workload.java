import java.util.ArrayList;
import java.util.List;

// Workload runs for the given milliseconds (and at least 3000 rounds): a CPU-bound loop, allocation,
// a contended monitor, some thrown and caught exceptions and one System.gc(),
// so a recording of it holds every event kind perfdoctor converts.
public class Workload {
    static final Object lock = new Object();
    static volatile long sink;

    static long spin(int n) {
        long h = 1125899906842597L;
        for (int i = 0; i < n; i++) h = 31 * h + (i ^ (h >>> 7));
        return h;
    }

    static int parse(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    public static void main(String[] args) throws Exception {
        long end = System.currentTimeMillis() + Long.parseLong(args[0]);
        Thread holder = new Thread(() -> {
            while (System.currentTimeMillis() < end) {
                synchronized (lock) {
                    try { Thread.sleep(20); } catch (InterruptedException e) { return; }
                }
                Thread.yield();
            }
        }, "lock-holder");
        holder.setDaemon(true);
        holder.start();
        List<long[]> keep = new ArrayList<>();
        int round = 0;
        // At least 3000 rounds, so that a loaded machine still yields samples.
        while (System.currentTimeMillis() < end || round < 3000) {
            sink += spin(200_000);
            keep.add(new long[256]);
            if (keep.size() > 2000) keep.clear();
            if (round++ % 50 == 0) sink += parse("x" + round);
            if (round % 200 == 0) synchronized (lock) { sink++; }
            if (round == 500) System.gc();
        }
        System.out.println(sink);
    }
}
