package perfdoctor.redone;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import javax.crypto.Mac;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

// Login is a small service whose requests carry the same basic-auth
// credentials every time, checked against a PBKDF2 hash (100,000
// iterations). "bad" hashes the presented password for every request;
// "fixed" remembers verified credentials, keyed by an HMAC of them, and
// hashes only the first time. Two workers serve requests, pausing between
// batches as a service waits for its clients.
//
// Usage: java perfdoctor.redone.Login bad|fixed SECONDS
public class Login {
    static final byte[] SALT = "perfdoctor-salt!".getBytes(StandardCharsets.UTF_8);
    static final int ITERATIONS = 100_000;
    static byte[] stored;
    static boolean remember;
    static final ConcurrentHashMap<String, Boolean> verified = new ConcurrentHashMap<>();
    static final byte[] cacheKey = new byte[32];
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        remember = args[0].equals("fixed");
        long seconds = Long.parseLong(args[1]);
        new java.security.SecureRandom().nextBytes(cacheKey);
        stored = hash("correct horse");
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            Thread t = new Thread(() -> serve(end), "worker-" + w);
            t.start();
            workers.add(t);
        }
        for (Thread t : workers) t.join();
    }

    static void serve(long end) {
        String header = "Basic " + Base64.getEncoder().encodeToString("ada:correct horse".getBytes(StandardCharsets.UTF_8));
        while (System.nanoTime() < end) {
            for (int i = 0; i < 200; i++) sink += handle("GET /account HTTP/1.1", header);
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    static int handle(String request, String authorization) {
        String[] cred = new String(Base64.getDecoder().decode(authorization.substring(6)), StandardCharsets.UTF_8).split(":", 2);
        if (!check(cred[0], cred[1])) return 401;
        StringBuilder body = new StringBuilder(64);
        body.append("{\"user\":\"").append(cred[0]).append("\",\"path\":\"").append(request.split(" ")[1]).append("\"}");
        return body.toString().hashCode();
    }

    static boolean check(String user, String password) {
        if (!remember) return verify(password);
        String key = mac(user + "\u0000" + password);
        if (verified.containsKey(key)) return true;
        if (!verify(password)) return false;
        verified.put(key, Boolean.TRUE);
        return true;
    }

    static boolean verify(String password) {
        return MessageDigest.isEqual(hash(password), stored);
    }

    static byte[] hash(String password) {
        try {
            SecretKeyFactory f = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
            return f.generateSecret(new PBEKeySpec(password.toCharArray(), SALT, ITERATIONS, 256)).getEncoded();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String mac(String s) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(cacheKey, "HmacSHA256"));
            return Base64.getEncoder().encodeToString(m.doFinal(s.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
