package corpus.load;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * ZooKeeper load: "populate" creates --znodes znodes of --size bytes under
 * /corpus (asynchronously, a window of creates in flight); "get" reads
 * random ones of them, one getData per unit, each client its own session;
 * "set" replaces the data of random ones with --size bytes, one setData per
 * unit (any version), each client its own session.
 *
 * java corpus.load.Zk populate --server 127.0.0.1:2181 --znodes 100000 --size 1024
 * java corpus.load.Zk get --server 127.0.0.1:2181 --znodes 100000 --units 200000 --clients 32
 * java corpus.load.Zk set --server 127.0.0.1:2181 --znodes 100000 --size 1024 --units 200000 --clients 32
 */
public final class Zk {
	public static void main(String[] args) throws Exception {
		if (args.length == 0) {
			throw new IllegalArgumentException("usage: Zk populate|get|set --server HOST:PORT ...");
		}
		Map<String, String> f = Units.flags(java.util.Arrays.copyOfRange(args, 1, args.length));
		String server = Units.str(f, "server", null);
		int znodes = (int) Units.num(f, "znodes", 10000);
		switch (args[0]) {
		case "populate" -> populate(server, znodes, (int) Units.num(f, "size", 1024));
		case "get" -> Units.run("zookeeper getData", Units.num(f, "units", 100000), (int) Units.num(f, "clients", 32),
				getJob(f).factory());
		case "set" -> Units.run("zookeeper setData", Units.num(f, "units", 100000), (int) Units.num(f, "clients", 32),
				setJob(f).factory());
		default -> throw new IllegalArgumentException("unknown mode " + args[0]);
		}
	}

	/** getData of random znodes among --znodes, each client its own session. */
	static Units.Job getJob(Map<String, String> f) {
		String server = Units.str(f, "server", null);
		int znodes = (int) Units.num(f, "znodes", 10000);
		return new Units.Job("zookeeper getData", (int) Units.num(f, "clients", 32), i -> {
			ZooKeeper zk = connect(server);
			return new Units.Client() {
				public void unit(long n) throws Exception {
					zk.getData(path(ThreadLocalRandom.current().nextInt(znodes)), false, null);
				}

				public void close() throws Exception {
					zk.close();
				}
			};
		});
	}

	/**
	 * setData of random znodes among --znodes with --size bytes (default
	 * 1024), any version, each client its own session; a client sends the
	 * same bytes every time, which the server reads into a new array for
	 * each request and keeps in place of the znode's old one.
	 */
	static Units.Job setJob(Map<String, String> f) {
		String server = Units.str(f, "server", null);
		int znodes = (int) Units.num(f, "znodes", 10000);
		int size = (int) Units.num(f, "size", 1024);
		return new Units.Job("zookeeper setData", (int) Units.num(f, "clients", 32), i -> {
			ZooKeeper zk = connect(server);
			byte[] data = new byte[size];
			for (int k = 0; k < size; k++) {
				data[k] = (byte) ('a' + (i + k) % 26);
			}
			return new Units.Client() {
				public void unit(long n) throws Exception {
					zk.setData(path(ThreadLocalRandom.current().nextInt(znodes)), data, -1);
				}

				public void close() throws Exception {
					zk.close();
				}
			};
		});
	}

	static String path(int i) {
		return "/corpus/n" + i;
	}

	static ZooKeeper connect(String server) throws Exception {
		CountDownLatch up = new CountDownLatch(1);
		ZooKeeper zk = new ZooKeeper(server, 30000, e -> {
			if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
				up.countDown();
			}
		});
		if (!up.await(30, TimeUnit.SECONDS)) {
			throw new IllegalStateException("no session with " + server + " within 30 s");
		}
		return zk;
	}

	static void populate(String server, int znodes, int size) throws Exception {
		ZooKeeper zk = connect(server);
		try {
			zk.create("/corpus", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
		} catch (KeeperException.NodeExistsException e) {
			// populated before: creates below skip what exists
		}
		byte[] data = new byte[size];
		for (int i = 0; i < size; i++) {
			data[i] = (byte) ('a' + i % 26);
		}
		Semaphore window = new Semaphore(1000);
		AtomicReference<String> failure = new AtomicReference<>();
		long start = System.nanoTime();
		for (int i = 0; i < znodes && failure.get() == null; i++) {
			window.acquire();
			zk.create(path(i), data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT, (rc, p, ctx, name) -> {
				if (rc != KeeperException.Code.OK.intValue() && rc != KeeperException.Code.NODEEXISTS.intValue()) {
					failure.compareAndSet(null, p + ": " + KeeperException.Code.get(rc));
				}
				window.release();
			}, null);
		}
		window.acquire(1000);
		zk.close();
		if (failure.get() != null) {
			throw new IllegalStateException("create failed: " + failure.get());
		}
		System.out.printf("zookeeper: %d znodes of %d bytes in %.1f s%n", znodes, size, (System.nanoTime() - start) / 1e9);
	}
}
