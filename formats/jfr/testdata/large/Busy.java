import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.Deflater;

// Busy keeps eight threads at varied work for the given milliseconds, so a
// profiler's recording of it holds many distinct stacks, deep and shallow,
// in Java, the VM, native code and the kernel: string building, maps,
// regular expressions, sorting, compression, exceptions, recursion, a
// contended lock, file-less I/O through pipes, and allocation throughout.
public class Busy {
    static volatile long sink;
    static final ReentrantLock lock = new ReentrantLock();
    static final Map<String, Integer> shared = new HashMap<>();

    static String render(Random r, int depth) {
        StringBuilder sb = new StringBuilder("{");
        for (int i = 0; i < 8; i++) {
            sb.append('"').append("k").append(r.nextInt(1000)).append("\":");
            if (depth > 0 && r.nextInt(4) == 0) sb.append(render(r, depth - 1));
            else sb.append(r.nextDouble());
            sb.append(',');
        }
        return sb.append('}').toString();
    }

    static final Pattern NUM = Pattern.compile("\"(k\\d+)\":(-?\\d+\\.\\d+)");

    static void json(long end) {
        Random r = new Random(1);
        while (System.currentTimeMillis() < end) {
            Matcher m = NUM.matcher(render(r, 4));
            while (m.find()) sink += m.group(1).hashCode() + (long) Double.parseDouble(m.group(2));
        }
    }

    static void maps(long end) {
        Random r = new Random(2);
        while (System.currentTimeMillis() < end) {
            Map<Integer, List<String>> m = new HashMap<>();
            for (int i = 0; i < 20_000; i++) m.computeIfAbsent(r.nextInt(500), k -> new ArrayList<>()).add("v" + i);
            for (List<String> l : m.values()) sink += l.size();
        }
    }

    static void sort(long end) {
        Random r = new Random(3);
        while (System.currentTimeMillis() < end) {
            long[] a = new long[200_000];
            for (int i = 0; i < a.length; i++) a[i] = r.nextLong();
            Arrays.sort(a);
            sink += a[a.length / 2];
        }
    }

    static void compress(long end) {
        byte[] in = new byte[1 << 16];
        new Random(4).nextBytes(in);
        for (int i = 0; i < in.length; i += 3) in[i] = 'x';
        byte[] out = new byte[1 << 17];
        Deflater d = new Deflater(6);
        while (System.currentTimeMillis() < end) {
            d.reset();
            d.setInput(in);
            d.finish();
            while (!d.finished()) sink += d.deflate(out);
        }
    }

    static int parse(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

    static long walk(int depth, Random r) {
        if (depth == 0) return fib(18 + r.nextInt(4));
        switch (r.nextInt(3)) {
            case 0: return walkA(depth - 1, r);
            case 1: return walkB(depth - 1, r);
            default: return walk(depth - 1, r);
        }
    }
    static long walkA(int depth, Random r) { return walk(depth, r) + 1; }
    static long walkB(int depth, Random r) { return walk(depth, r) + parse(depth % 7 == 0 ? "x" + depth : "" + depth); }

    static void deep(long end) {
        Random r = new Random(5);
        while (System.currentTimeMillis() < end) sink += walk(40 + r.nextInt(30), r);
    }

    static void contend(long end, int id) {
        Random r = new Random(6 + id);
        while (System.currentTimeMillis() < end) {
            lock.lock();
            try {
                for (int i = 0; i < 200; i++) shared.merge("k" + r.nextInt(1000), 1, Integer::sum);
            } finally {
                lock.unlock();
            }
            sink += fib(15);
        }
    }

    public static void main(String[] args) throws Exception {
        long end = System.currentTimeMillis() + Long.parseLong(args[0]);
        List<Thread> ts = new ArrayList<>();
        ts.add(new Thread(() -> json(end), "json"));
        ts.add(new Thread(() -> maps(end), "maps"));
        ts.add(new Thread(() -> sort(end), "sort"));
        ts.add(new Thread(() -> compress(end), "compress"));
        ts.add(new Thread(() -> deep(end), "deep"));
        for (int i = 0; i < 3; i++) {
            int id = i;
            ts.add(new Thread(() -> contend(end, id), "contend-" + i));
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        System.out.println(sink);
    }
}
