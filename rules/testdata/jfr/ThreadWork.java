package perfdoctor.fixtures;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The workloads behind the JVM thread rules' recorded fixtures (JVM009 to
 * JVM014), each a few seconds long, run under JDK 22 or later (the pinned
 * workload calls libc's qsort through the foreign function API):
 *
 * record.sh runs each mode under JFR's profile settings (thread CPU load and
 * context switches every second, as perfdoctor collect --jfr records them),
 * keeps only the events the rules read (jfr scrub) and gzips the result.
 *
 * Modes, each with its healthy counterpart:
 *   pinned / unpinned        virtual threads sleep 25 ms inside a native
 *                            callback (pinned on every JDK) / outside it
 *   locks / unlocked         8 threads sleep 5 ms holding one monitor and one
 *                            ReentrantLock / sleep outside them
 *   smallpool / rightpool    a 2-thread pool behind a queue of 25 ms blocking
 *                            tasks / a 24-thread pool for the same tasks
 *   largepool                400 threads share the CPUs for CPU-bound tasks
 *   sleepers                 64 threads serve 48 callers' 5 ms blocking tasks,
 *                            waits too short to be recorded (a large pool
 *                            that is right)
 *   unbalanced / balanced    one of 4 shard threads gets 90% of a parallel
 *                            job / each gets a quarter
 *   switches                 4 pairs of threads hand a token back and forth
 *   bursts                   all CPUs busy 1 s of 3, idle the rest
 */
public final class ThreadWork {
    static final long SECONDS = 4;
    static volatile long sink;

    public static void main(String[] args) throws Throwable {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(SECONDS);
        switch (args[0]) {
            case "pinned" -> pinned(end, true);
            case "unpinned" -> pinned(end, false);
            case "locks" -> locks(end, true);
            case "unlocked" -> locks(end, false);
            case "smallpool" -> pool(end, 2);
            case "rightpool" -> pool(end, 24);
            case "sleepers" -> sleepers(end);
            case "largepool" -> largePool(end);
            case "unbalanced" -> split(end, 0.9);
            case "balanced" -> split(end, 0.25);
            case "switches" -> switches(end);
            case "bursts" -> bursts(end);
            default -> throw new IllegalArgumentException(args[0]);
        }
        System.exit(0);
    }

    static void work(long nanos) {
        long stop = System.nanoTime() + nanos;
        long h = 1;
        while (System.nanoTime() < stop) {
            for (int i = 0; i < 1000; i++) h = h * 31 + i;
        }
        sink += h;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // --- pinned: a native sort whose comparator blocks.

    static int compareBlocking(MemorySegment a, MemorySegment b) {
        sleep(25); // a lookup the comparison needs, made inside the callback
        return Integer.compare(a.get(ValueLayout.JAVA_INT, 0), b.get(ValueLayout.JAVA_INT, 0));
    }

    static void pinned(long end, boolean inCallback) throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle qsort = linker.downcallHandle(linker.defaultLookup().find("qsort").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        MethodHandle cmp = MethodHandles.lookup().findStatic(ThreadWork.class, inCallback ? "compareBlocking" : "compareInts",
                MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class));
        var intPtr = ValueLayout.ADDRESS.withTargetLayout(ValueLayout.JAVA_INT);
        MemorySegment stub = linker.upcallStub(cmp, FunctionDescriptor.of(ValueLayout.JAVA_INT, intPtr, intPtr), Arena.global());
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int t = 0; t < 8; t++) {
                ex.submit(() -> {
                    while (System.nanoTime() < end) {
                        if (!inCallback) sleep(25);
                        try (Arena arena = Arena.ofConfined()) {
                            MemorySegment arr = arena.allocateFrom(ValueLayout.JAVA_INT, 2, 1);
                            qsort.invokeExact(arr, 2L, 4L, stub);
                        } catch (Throwable e) {
                            throw new RuntimeException(e);
                        }
                    }
                    return null;
                });
            }
        }
    }

    static int compareInts(MemorySegment a, MemorySegment b) {
        return Integer.compare(a.get(ValueLayout.JAVA_INT, 0), b.get(ValueLayout.JAVA_INT, 0));
    }

    // --- locks: I/O done while holding a lock.

    static final Object MONITOR = new Object();
    static final ReentrantLock LOCK = new ReentrantLock();

    static void updateUnderMonitor(boolean held) {
        if (!held) sleep(5);
        synchronized (MONITOR) {
            if (held) sleep(5);
            sink++;
        }
    }

    static void updateUnderLock(boolean held) {
        if (!held) sleep(5);
        LOCK.lock();
        try {
            if (held) sleep(5);
            sink++;
        } finally {
            LOCK.unlock();
        }
    }

    static void locks(long end, boolean held) throws InterruptedException {
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            boolean monitor = i % 2 == 0;
            ts.add(Thread.ofPlatform().name("worker-" + i).start(() -> {
                while (System.nanoTime() < end) {
                    if (monitor) updateUnderMonitor(held);
                    else updateUnderLock(held);
                }
            }));
        }
        for (Thread t : ts) t.join();
    }

    // --- pools: blocking tasks queued for a pool.

    static void pool(long end, int threads) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        // 16 callers, each waiting for its task: 16 tasks in flight.
        List<Thread> callers = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            callers.add(Thread.ofPlatform().name("caller-" + i).start(() -> {
                while (System.nanoTime() < end) {
                    try {
                        pool.submit(() -> {
                            sleep(25); // a downstream call
                            work(200_000);
                        }).get();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }
            }));
        }
        for (Thread t : callers) t.join();
        pool.shutdownNow();
    }

    static void sleepers(long end) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(64);
        List<Thread> callers = new ArrayList<>();
        for (int i = 0; i < 48; i++) {
            callers.add(Thread.ofPlatform().name("caller-" + i).start(() -> {
                while (System.nanoTime() < end) {
                    try {
                        pool.submit(() -> {
                            sleep(5); // a fast downstream call
                            work(50_000);
                        }).get();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }
            }));
        }
        for (Thread t : callers) t.join();
        pool.shutdownNow();
    }

    static void largePool(long end) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(400);
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            fs.add(pool.submit(() -> {
                while (System.nanoTime() < end) {
                    work(1_000_000);
                    Thread.yield();
                }
            }));
        }
        for (Future<?> f : fs) f.get();
        pool.shutdownNow();
    }

    // --- split: a parallel job partitioned by a key that one shard owns
    // most of: each shard has its own thread, as with a partitioned queue.

    static void split(long end, double firstShare) throws Exception {
        int shards = 4;
        java.util.concurrent.CyclicBarrier round = new java.util.concurrent.CyclicBarrier(shards);
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < shards; i++) {
            double share = i == 0 ? firstShare : (1 - firstShare) / (shards - 1);
            ts.add(Thread.ofPlatform().name("shard-" + i).start(() -> {
                try {
                    for (int r = 0; r < 20; r++) { // about 4 s on 2 CPUs
                        work((long) (200_000_000 * share)); // 200 ms of work a round
                        round.await();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }));
        }
        for (Thread t : ts) t.join();
    }

    // --- switches: threads that hand a token back and forth.

    static void switches(long end) throws InterruptedException {
        List<Thread> ts = new ArrayList<>();
        for (int p = 0; p < 4; p++) {
            SynchronousQueue<Integer> ping = new SynchronousQueue<>(), pong = new SynchronousQueue<>();
            ts.add(Thread.ofPlatform().name("ping-" + p).start(() -> {
                try {
                    while (System.nanoTime() < end) {
                        ping.put(1);
                        pong.take();
                    }
                    ping.put(0);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
            ts.add(Thread.ofPlatform().name("pong-" + p).start(() -> {
                try {
                    while (ping.take() != 0) pong.put(1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        for (Thread t : ts) t.join();
    }

    // --- bursts: all CPUs busy one second in three.

    static void bursts(long end) throws Exception {
        int cpus = Runtime.getRuntime().availableProcessors();
        ExecutorService pool = Executors.newFixedThreadPool(cpus);
        while (System.nanoTime() < end) {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < cpus; i++) fs.add(pool.submit(() -> work(1_000_000_000L)));
            for (Future<?> f : fs) f.get();
            sleep(2000);
        }
        pool.shutdownNow();
    }
}
