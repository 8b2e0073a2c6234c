// DeepStacks does its work 100 calls deep, as handlers do under a framework's
// filters, interceptors and proxies: JFR's default stack depth of 64 keeps
// the top 64 frames of each sample and drops the callers below them.
public class DeepStacks {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 8;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        Thread[] workers = new Thread[2];
        for (int w = 0; w < workers.length; w++) {
            workers[w] = new Thread(() -> {
                while (System.nanoTime() < end) sink += filter(100, 20_000);
            }, "worker-" + w);
            workers[w].start();
        }
        for (Thread t : workers) t.join();
    }

    static long filter(int depth, int work) {
        if (depth == 0) return handle(work);
        return filter(depth - 1, work) + 1;
    }

    static long handle(int n) {
        long h = 0;
        for (int i = 0; i < n; i++) h = h * 31 + Integer.toString(i).hashCode();
        return h;
    }
}
