import java.util.Random;
import java.util.zip.Deflater;

// CPUTime keeps three threads busy for the given milliseconds: one throws
// and catches exceptions (the stack walk runs in the VM), one compresses
// with java.util.zip.Deflater (zlib, native code), one spins in Java. JDK
// 25's CPU-time sampler (jdk.CPUTimeSample) sees all three; the execution
// sampler (jdk.ExecutionSample) sees Java code only.
public class CPUTime {
    static volatile long sink;

    static int parse(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static void exceptions(long end) {
        int i = 0;
        while (System.currentTimeMillis() < end) sink += parse("n" + i++);
    }

    static void compress(long end) {
        byte[] in = new byte[1 << 16];
        new Random(1).nextBytes(in);
        for (int i = 0; i < in.length; i += 4) in[i] = 'a'; // compressible, not trivially
        byte[] out = new byte[1 << 17];
        Deflater d = new Deflater(9);
        while (System.currentTimeMillis() < end) {
            d.reset();
            d.setInput(in);
            d.finish();
            while (!d.finished()) sink += d.deflate(out);
        }
    }

    static void spin(long end) {
        long h = 1125899906842597L;
        while (System.currentTimeMillis() < end) {
            for (int i = 0; i < 100_000; i++) h = 31 * h + (i ^ (h >>> 7));
            sink += h;
        }
    }

    public static void main(String[] args) throws Exception {
        long end = System.currentTimeMillis() + Long.parseLong(args[0]);
        Thread[] ts = {
            new Thread(() -> exceptions(end), "thrower"),
            new Thread(() -> compress(end), "compressor"),
            new Thread(() -> spin(end), "spinner"),
        };
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        System.out.println(sink);
    }
}
