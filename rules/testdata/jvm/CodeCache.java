import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;

// CodeCache compiles Java source in process, over and over: javac is a large
// program, and the JIT compiles thousands of its methods. Under a code cache
// far too small for it, the cache fills and the JVM stops compiling.
public class CodeCache {
    static final String SOURCE = "import java.util.*;\n"
            + "public class Gen { public static void main(String[] a) { Map<String,List<Integer>> m = new TreeMap<>();\n"
            + "  for (int i = 0; i < 10; i++) m.computeIfAbsent(\"k\" + i, k -> new ArrayList<>()).add(i);\n"
            + "  System.out.println(m); } }\n";

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 8;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        while (System.nanoTime() < end) {
            var source = new SimpleJavaFileObject(URI.create("string:///Gen.java"), javax.tools.JavaFileObject.Kind.SOURCE) {
                @Override
                public CharSequence getCharContent(boolean ignore) {
                    return SOURCE;
                }
            };
            var files = new javax.tools.ForwardingJavaFileManager<>(javac.getStandardFileManager(null, null, null)) {
                @Override
                public javax.tools.JavaFileObject getJavaFileForOutput(Location l, String name, javax.tools.JavaFileObject.Kind k, javax.tools.FileObject s) {
                    return new SimpleJavaFileObject(URI.create("mem:///" + name + k.extension), k) {
                        @Override
                        public OutputStream openOutputStream() {
                            return OutputStream.nullOutputStream();
                        }
                    };
                }
            };
            if (!javac.getTask(null, files, null, null, null, List.of(source)).call()) throw new IOException("compile failed");
        }
    }
}
