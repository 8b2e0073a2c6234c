package corpus.load;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * JDBC load: "users" creates the users table with --rows rows (id, email,
 * name, created) and no index but the primary key; "lookup" finds one user
 * by email per unit, each client its own connection.
 *
 * java corpus.load.Jdbc users --url jdbc:h2:tcp://127.0.0.1:9092/users --rows 100000
 * java corpus.load.Jdbc lookup --url ... --rows 100000 --units 20000 --clients 8
 */
public final class Jdbc {
	public static void main(String[] args) throws Exception {
		if (args.length == 0) {
			throw new IllegalArgumentException("usage: Jdbc users|lookup --url JDBC-URL ...");
		}
		Map<String, String> f = Units.flags(java.util.Arrays.copyOfRange(args, 1, args.length));
		String url = Units.str(f, "url", null);
		String user = Units.str(f, "user", "sa");
		String password = Units.str(f, "password", "");
		int rows = (int) Units.num(f, "rows", 100000);
		switch (args[0]) {
		case "users" -> users(DriverManager.getConnection(url, user, password), rows);
		case "lookup" -> Units.run("jdbc lookup by email", Units.num(f, "units", 10000), (int) Units.num(f, "clients", 8),
				lookupJob(f).factory());
		default -> throw new IllegalArgumentException("unknown mode " + args[0]);
		}
	}

	/** One user found by email per unit, each client its own connection. */
	static Units.Job lookupJob(Map<String, String> f) {
		String url = Units.str(f, "url", null);
		String user = Units.str(f, "user", "sa");
		String password = Units.str(f, "password", "");
		int rows = (int) Units.num(f, "rows", 100000);
		return new Units.Job("jdbc lookup by email", (int) Units.num(f, "clients", 8), i -> {
			Connection c = DriverManager.getConnection(url, user, password);
			PreparedStatement q = c.prepareStatement("select id, name, created from users where email = ?");
			return new Units.Client() {
				public void unit(long n) throws Exception {
					q.setString(1, email(ThreadLocalRandom.current().nextInt(rows)));
					try (ResultSet r = q.executeQuery()) {
						if (!r.next()) {
							throw new IllegalStateException("no user for " + n);
						}
					}
				}

				public void close() throws Exception {
					c.close();
				}
			};
		});
	}

	static String email(int i) {
		return "user" + i + "@example.com";
	}

	static void users(Connection c, int rows) throws Exception {
		try (c; Statement s = c.createStatement()) {
			s.execute("drop table if exists users");
			s.execute("create table users (id bigint primary key, email varchar(200) not null, "
					+ "name varchar(200) not null, created timestamp not null)");
			c.setAutoCommit(false);
			try (PreparedStatement p = c.prepareStatement("insert into users values (?, ?, ?, current_timestamp)")) {
				for (int i = 0; i < rows; i++) {
					p.setLong(1, i);
					p.setString(2, email(i));
					p.setString(3, "User Number " + i);
					p.addBatch();
					if (i % 1000 == 999) {
						p.executeBatch();
					}
				}
				p.executeBatch();
			}
			c.commit();
		}
		System.out.printf("jdbc: users table with %d rows%n", rows);
	}
}
