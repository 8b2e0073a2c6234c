import java.io.FileOutputStream;
import java.util.regex.Pattern;
import java.util.zip.Deflater;

// Work spends a few seconds in Java code (regex compiles, exceptions),
// native code (zlib's deflate) and the kernel (small writes), so the
// collapsed output holds each frame kind async-profiler annotates.
public class Work {
    static int sink;

    static void compile(int i) {
        sink += Pattern.compile("a(b|c)*d" + (i % 7)).matcher("abcbcd1").matches() ? 1 : 0;
    }

    static void fail(int i) {
        try {
            throw new IllegalStateException("n" + i);
        } catch (IllegalStateException e) {
            sink += e.getStackTrace().length;
        }
    }

    static void deflate(byte[] in, byte[] out) {
        Deflater d = new Deflater(9);
        d.setInput(in);
        d.finish();
        while (!d.finished()) {
            sink += d.deflate(out);
        }
        d.end();
    }

    public static void main(String[] args) throws Exception {
        byte[] in = new byte[64 << 10];
        for (int i = 0; i < in.length; i++) {
            in[i] = (byte) ((i * 31) % 61);
        }
        byte[] out = new byte[in.length];
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        try (FileOutputStream devnull = new FileOutputStream("/dev/null")) {
            for (int i = 0; System.nanoTime() < end; i++) {
                compile(i);
                fail(i);
                deflate(in, out);
                devnull.write(in, 0, 16);
            }
        }
        System.out.println(sink);
    }
}
