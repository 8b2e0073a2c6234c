// Deadlock takes two monitors in opposite orders on two threads, so both
// block for ever, then keeps the JVM alive for the given milliseconds.
public class Deadlock {
    static final Object a = new Object(), b = new Object();

    static void both(Object first, Object second) {
        synchronized (first) {
            try { Thread.sleep(200); } catch (InterruptedException e) { return; }
            synchronized (second) { System.out.println("unreachable"); }
        }
    }

    public static void main(String[] args) throws Exception {
        Thread t1 = new Thread(() -> both(a, b), "worker-ab");
        Thread t2 = new Thread(() -> both(b, a), "worker-ba");
        t1.setDaemon(true);
        t2.setDaemon(true);
        t1.start();
        t2.start();
        Thread.sleep(Long.parseLong(args[0]));
    }
}
