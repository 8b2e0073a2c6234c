package perfdoctor.fixtures;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * Small HTTP servers whose requests each wait about 20 ms on a downstream
 * service (another process: "backend"), on the executors the JVM pool rules
 * must recognise by behaviour: Jetty's QueuedThreadPool, Netty's event
 * loops, a ThreadPoolExecutor behind the JDK's HttpServer, a hand-made pool
 * of threads reading a LinkedBlockingQueue. Each runs with too few threads
 * for the requests in flight and with enough; "cpu" is a pool of two
 * threads that compute instead of waiting.
 *
 * Usage: Servers MODE PORT [BACKEND_PORT]
 */
public final class Servers {
    static final byte[] BODY = "ok\n".getBytes(StandardCharsets.US_ASCII);
    static volatile String backend;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int port = Integer.parseInt(args[1]);
        if (args.length > 2) {
            backend = "http://127.0.0.1:" + args[2] + "/reply";
        }
        switch (mode) {
            case "backend" -> backend(port);
            case "jetty-small" -> jetty(port, 6);
            case "jetty-right" -> jetty(port, 200);
            case "netty-block" -> netty(port, false);
            case "netty-offload" -> netty(port, true);
            case "tpe-small" -> httpServer(port, Executors.newFixedThreadPool(2), false);
            case "tpe-right" -> httpServer(port, Executors.newFixedThreadPool(64), false);
            case "handmade-small" -> httpServer(port, new WorkerPool(2), false);
            case "handmade-right" -> httpServer(port, new WorkerPool(64), false);
            case "cpu" -> httpServer(port, Executors.newFixedThreadPool(2), true);
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    /** The downstream: answers after 20 ms, with threads enough for all. */
    static void backend(int port) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
        s.setExecutor(Executors.newFixedThreadPool(128));
        s.createContext("/reply", x -> {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            reply(x, BODY);
        });
        s.start();
    }

    /** One blocking call to the downstream: a socket read for its reply. */
    static void callBackend() throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create(backend).toURL().openConnection();
        try (InputStream in = c.getInputStream()) {
            in.readAllBytes();
        }
    }

    static final HttpClient CLIENT = HttpClient.newHttpClient();

    /** The same call through java.net.http: the thread parks for the reply. */
    static void callBackendParked() throws IOException, InterruptedException {
        CLIENT.send(HttpRequest.newBuilder(URI.create(backend)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static void reply(HttpExchange x, byte[] body) throws IOException {
        x.getRequestBody().readAllBytes();
        x.sendResponseHeaders(200, body.length);
        try (OutputStream out = x.getResponseBody()) {
            out.write(body);
        }
    }

    /** Work on the CPU of about 5 ms: hashing. */
    static byte[] compute() {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] b = new byte[4096];
            for (int i = 0; i < 400; i++) {
                b[0] = (byte) i;
                md.update(b);
            }
            return md.digest();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static void httpServer(int port, java.util.concurrent.Executor pool, boolean cpu) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
        s.setExecutor(pool);
        boolean parked = pool instanceof WorkerPool;
        s.createContext("/", x -> {
            try {
                if (cpu) {
                    compute();
                } else if (parked) {
                    callBackendParked();
                } else {
                    callBackend();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            reply(x, BODY);
        });
        s.start();
    }

    /** A hand-made pool: threads taking requests from a queue. */
    static final class WorkerPool implements java.util.concurrent.Executor {
        final BlockingQueue<Runnable> queue = new LinkedBlockingQueue<>();

        WorkerPool(int threads) {
            for (int i = 1; i <= threads; i++) {
                Thread t = new Thread(this::work, "worker-" + i);
                t.setDaemon(true);
                t.start();
            }
        }

        void work() {
            while (true) {
                Runnable r;
                try {
                    r = queue.take();
                } catch (InterruptedException e) {
                    return;
                }
                try {
                    r.run();
                } catch (RuntimeException e) {
                    e.printStackTrace();
                }
            }
        }

        @Override
        public void execute(Runnable r) {
            queue.add(r);
        }
    }

    static void jetty(int port, int maxThreads) throws Exception {
        QueuedThreadPool pool = new QueuedThreadPool(maxThreads, Math.min(maxThreads, 8));
        pool.setReservedThreads(0);
        Server server = new Server(pool);
        ServerConnector c = new ServerConnector(server, 1, 1);
        c.setHost("127.0.0.1");
        c.setPort(port);
        server.addConnector(c);
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) throws Exception {
                callBackend();
                response.setStatus(200);
                response.write(true, java.nio.ByteBuffer.wrap(BODY), callback);
                return true;
            }
        });
        server.start();
    }

    static final byte[] NETTY_REPLY = ("HTTP/1.1 200 OK\r\nContent-Length: " + BODY.length + "\r\n\r\n" + "ok\n")
            .getBytes(StandardCharsets.US_ASCII);

    /**
     * Netty with two event loop threads answering HTTP/1.1 requests: the
     * downstream call made on the event loop (blocking it), or handed to a
     * pool of its own with the reply written from there.
     */
    static void netty(int port, boolean offload) throws InterruptedException {
        NioEventLoopGroup boss = new NioEventLoopGroup(1);
        NioEventLoopGroup loops = new NioEventLoopGroup(2);
        ExecutorService blocking = offload ? Executors.newFixedThreadPool(64) : null;
        new ServerBootstrap().group(boss, loops).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            int matched; // of "\r\n\r\n", across reads

                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ByteBuf in = (ByteBuf) msg;
                                int requests = 0;
                                while (in.isReadable()) {
                                    byte b = in.readByte();
                                    matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
                                    if (matched == 4) {
                                        requests++;
                                        matched = 0;
                                    }
                                }
                                in.release();
                                for (int i = 0; i < requests; i++) {
                                    if (blocking == null) {
                                        answer(ctx);
                                    } else {
                                        blocking.execute(() -> answer(ctx));
                                    }
                                }
                            }
                        });
                    }
                }).bind("127.0.0.1", port).sync();
    }

    static void answer(ChannelHandlerContext ctx) {
        try {
            callBackend();
        } catch (IOException e) {
            ctx.close();
            return;
        }
        ctx.writeAndFlush(Unpooled.wrappedBuffer(NETTY_REPLY));
    }
}
