package corpus.load;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs a fixed number of units over a number of client threads and prints
 * the count and the rate. Every driver is a main that builds its clients
 * and hands one unit of work per call to run().
 */
final class Units {
	/** One client's unit of work; a client is used by one thread only. */
	interface Client extends AutoCloseable {
		void unit(long n) throws Exception;
	}

	interface Factory {
		Client open(int index) throws Exception;
	}

	private Units() {
	}

	/** Flags as --name value pairs. */
	static Map<String, String> flags(String[] args) {
		Map<String, String> m = new HashMap<>();
		for (int i = 0; i + 1 < args.length; i += 2) {
			if (!args[i].startsWith("--")) {
				throw new IllegalArgumentException("expected --flag value, got " + args[i]);
			}
			m.put(args[i].substring(2), args[i + 1]);
		}
		if (args.length % 2 != 0) {
			throw new IllegalArgumentException("flag " + args[args.length - 1] + " has no value");
		}
		return m;
	}

	static long num(Map<String, String> f, String name, long dflt) {
		String v = f.get(name);
		return v == null ? dflt : Long.parseLong(v);
	}

	static String str(Map<String, String> f, String name, String dflt) {
		String v = f.get(name);
		if (v == null && dflt == null) {
			throw new IllegalArgumentException("--" + name + " is required");
		}
		return v == null ? dflt : v;
	}

	/** A kind of work: what it is called and how to open its clients. */
	record Job(String what, int clients, Factory factory) {
		Client[] open() throws Exception {
			Client[] cs = new Client[clients];
			for (int i = 0; i < clients; i++) {
				cs[i] = factory.open(i);
			}
			return cs;
		}
	}

	/** Runs units units over clients threads; exits non-zero on a failure. */
	static void run(String what, long units, int clients, Factory factory) throws Exception {
		Job job = new Job(what, clients, factory);
		Client[] cs = job.open();
		try {
			System.out.println(runOn(job, units, cs));
		} catch (IllegalStateException e) {
			System.err.println(e.getMessage());
			System.exit(1);
		} finally {
			for (Client c : cs) {
				c.close();
			}
		}
	}

	/**
	 * Runs units units over the clients, one thread each, and returns the
	 * summary line; throws IllegalStateException when a unit failed.
	 */
	static String runOn(Job job, long units, Client[] cs) throws InterruptedException {
		AtomicLong next = new AtomicLong();
		AtomicLong failed = new AtomicLong();
		Thread[] ts = new Thread[cs.length];
		long start = System.nanoTime();
		for (int i = 0; i < cs.length; i++) {
			Client c = cs[i];
			ts[i] = new Thread(() -> {
				for (long n; (n = next.getAndIncrement()) < units;) {
					try {
						c.unit(n);
					} catch (Exception e) {
						if (failed.getAndIncrement() == 0) {
							e.printStackTrace();
						}
					}
				}
			}, "load-" + i);
			ts[i].start();
		}
		for (Thread t : ts) {
			t.join();
		}
		double secs = (System.nanoTime() - start) / 1e9;
		String line = String.format("%s: %d units, %d clients, %.3f s, %.1f units/s, %d failed", job.what(), units,
				cs.length, secs, units / secs, failed.get());
		if (failed.get() > 0) {
			throw new IllegalStateException(line);
		}
		return line;
	}
}
