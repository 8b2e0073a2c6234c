package corpus.load;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A load driver that stays up: GET /MODE?units=N&amp;flag=value... runs N units
 * of that mode (zk-get, zk-set, jdbc-lookup, with the drivers' flags) and answers
 * with the summary line when they are done. Clients are opened on the first
 * run with the same flags and kept, so a run costs only its units: a load
 * command (curl) then measures the server, not a client JVM's start-up.
 *
 * java corpus.load.Agent --port 7070
 * curl -fsS 'http://127.0.0.1:7070/zk-get?server=127.0.0.1:2181&amp;znodes=2000&amp;clients=32&amp;units=50000'
 */
public final class Agent {
	private final Map<String, Units.Client[]> open = new HashMap<>();
	private final Map<String, Units.Job> jobs = new HashMap<>();

	public static void main(String[] args) throws Exception {
		Map<String, String> f = Units.flags(args);
		Agent a = new Agent();
		HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", (int) Units.num(f, "port", 7070)), 64);
		s.createContext("/", a::handle);
		s.setExecutor(Executors.newSingleThreadExecutor());
		s.start();
		System.out.println("load agent on 127.0.0.1:" + s.getAddress().getPort());
	}

	private void handle(HttpExchange ex) throws IOException {
		int status = 200;
		String body;
		try {
			Map<String, String> q = query(ex.getRequestURI().getRawQuery());
			long units = Long.parseLong(q.remove("units"));
			String mode = ex.getRequestURI().getPath().substring(1);
			String key = mode + "?" + new TreeMap<>(q);
			Units.Client[] cs = open.get(key);
			if (cs == null) {
				Units.Job job = switch (mode) {
				case "zk-get" -> Zk.getJob(q);
				case "zk-set" -> Zk.setJob(q);
				case "jdbc-lookup" -> Jdbc.lookupJob(q);
				default -> throw new IllegalArgumentException("unknown mode " + mode);
				};
				cs = job.open();
				open.put(key, cs);
				jobs.put(key, job);
			}
			body = Units.runOn(jobs.get(key), units, cs) + "\n";
		} catch (Exception e) {
			status = 500;
			body = e + "\n";
		}
		byte[] b = body.getBytes(StandardCharsets.UTF_8);
		ex.sendResponseHeaders(status, b.length);
		try (OutputStream o = ex.getResponseBody()) {
			o.write(b);
		}
	}

	private static Map<String, String> query(String raw) {
		Map<String, String> m = new HashMap<>();
		if (raw == null) {
			throw new IllegalArgumentException("no query: units=N and the mode's flags");
		}
		for (String kv : raw.split("&")) {
			int eq = kv.indexOf('=');
			if (eq < 0) {
				throw new IllegalArgumentException("query item without a value: " + kv);
			}
			m.put(URLDecoder.decode(kv.substring(0, eq), StandardCharsets.UTF_8),
					URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8));
		}
		if (!m.containsKey("units")) {
			throw new IllegalArgumentException("units=N is required");
		}
		return m;
	}
}
