package casebook.j1;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Case J1 (virtual-thread-pinning): a catalogue service on virtual threads
 * (JDK 22 or later) that orders each page's items with a native sort (libc's
 * qsort through the foreign function API, as a native library with a Java
 * comparator would). In the bad variant the comparator asks a pricing
 * service (25 ms a call, on loopback) for the prices it compares: the
 * virtual thread blocks inside a callback from native code, where it cannot
 * unmount even on JDK 24 and later (JEP 491 lifted only synchronized), so it
 * holds one of the CPUs' carriers for the whole call and the other requests
 * queue. The fixed variant fetches the prices first and sorts values.
 *
 * Usage: Catalog bad|fixed. Prints "app=URL" once it listens on 127.0.0.1.
 * Needs --enable-native-access=ALL-UNNAMED to call qsort without a warning.
 */
public final class Catalog {
    static final int PRICING_MILLIS = 25;
    static HttpClient client;
    static URI pricing;
    static MethodHandle qsort;
    static MemorySegment byPrice, byValue;

    /** price asks the pricing service for an item's price in cents. */
    static int price(int item) throws IOException, InterruptedException {
        String body = client.send(HttpRequest.newBuilder(URI.create(pricing + "?item=" + item)).build(),
                HttpResponse.BodyHandlers.ofString()).body().trim();
        return Integer.parseInt(body) + item;
    }

    /**
     * compareByPrice is the bad comparator: a remote call per comparison.
     * An exception must not leave a callback from native code (the JVM
     * exits), so a failed call compares equal.
     */
    static int compareByPrice(MemorySegment a, MemorySegment b) {
        try {
            return Integer.compare(price(a.get(ValueLayout.JAVA_INT, 0)), price(b.get(ValueLayout.JAVA_INT, 0)));
        } catch (Exception e) {
            return 0;
        }
    }

    static int compareValues(MemorySegment a, MemorySegment b) {
        return Integer.compare(a.get(ValueLayout.JAVA_INT, 0), b.get(ValueLayout.JAVA_INT, 0));
    }

    /** page orders two items by price with the native sort. */
    static String page(boolean bad, int first) throws Throwable {
        int[] items = {first + 1, first};
        try (Arena arena = Arena.ofConfined()) {
            if (bad) {
                MemorySegment arr = arena.allocateFrom(ValueLayout.JAVA_INT, items);
                qsort.invokeExact(arr, (long) items.length, 4L, byPrice);
                items = arr.toArray(ValueLayout.JAVA_INT);
            } else {
                int[] prices = {price(items[0]), price(items[1])}; // before the native call
                MemorySegment arr = arena.allocateFrom(ValueLayout.JAVA_INT, prices);
                qsort.invokeExact(arr, (long) prices.length, 4L, byValue);
                if (arr.getAtIndex(ValueLayout.JAVA_INT, 0) != prices[0]) items = new int[] {items[1], items[0]};
            }
        }
        return "{\"items\":[" + items[0] + "," + items[1] + "]}\n";
    }

    static void reply(HttpExchange ex, int status, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }

    public static void main(String[] args) throws Throwable {
        if (args.length != 1 || !(args[0].equals("bad") || args[0].equals("fixed"))) {
            System.err.println("usage: Catalog bad|fixed");
            System.exit(2);
        }
        boolean bad = args[0].equals("bad");
        Linker linker = Linker.nativeLinker();
        qsort = linker.downcallHandle(linker.defaultLookup().find("qsort").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        var intPtr = ValueLayout.ADDRESS.withTargetLayout(ValueLayout.JAVA_INT);
        var cmp = FunctionDescriptor.of(ValueLayout.JAVA_INT, intPtr, intPtr);
        var type = MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class);
        byPrice = linker.upcallStub(MethodHandles.lookup().findStatic(Catalog.class, "compareByPrice", type), cmp, Arena.global());
        byValue = linker.upcallStub(MethodHandles.lookup().findStatic(Catalog.class, "compareValues", type), cmp, Arena.global());

        // The pricing service: its own server and platform threads, 25 ms a call.
        HttpServer backend = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        backend.createContext("/price", ex -> {
            try {
                Thread.sleep(PRICING_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            reply(ex, 200, "1999\n");
        });
        AtomicInteger n = new AtomicInteger();
        backend.setExecutor(Executors.newFixedThreadPool(64, r -> new Thread(r, "pricing-" + n.incrementAndGet())));
        backend.start();
        pricing = URI.create("http://127.0.0.1:" + backend.getAddress().getPort() + "/price");
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

        AtomicInteger next = new AtomicInteger();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/page", ex -> {
            try {
                reply(ex, 200, page(bad, next.getAndIncrement() % 1000));
            } catch (Throwable e) {
                reply(ex, 500, e + "\n");
            }
        });
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor()); // a virtual thread per request
        server.start();
        System.out.println("app=http://127.0.0.1:" + server.getAddress().getPort() + "/page");
        System.out.flush();
    }
}
