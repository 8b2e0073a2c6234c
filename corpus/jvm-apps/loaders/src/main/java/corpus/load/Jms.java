package corpus.load;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.DeliveryMode;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;

import org.apache.activemq.ActiveMQConnectionFactory;

/**
 * JMS load on ActiveMQ: --clients producers each send persistent messages of
 * --size bytes to one queue (one unit a message, the client's default
 * send mode), while --consumers consumers receive them; the run ends when
 * every message sent has been received.
 *
 * java corpus.load.Jms --url tcp://127.0.0.1:61616 --units 20000 --clients 8 --consumers 2
 */
public final class Jms {
	public static void main(String[] args) throws Exception {
		Map<String, String> f = Units.flags(args);
		String url = Units.str(f, "url", null);
		long units = Units.num(f, "units", 10000);
		int size = (int) Units.num(f, "size", 1024);
		String queue = Units.str(f, "queue", "corpus.orders");
		boolean persistent = Boolean.parseBoolean(Units.str(f, "persistent", "true"));
		ActiveMQConnectionFactory cf = new ActiveMQConnectionFactory(url);
		AtomicLong received = new AtomicLong();
		List<Connection> consumers = new ArrayList<>();
		for (int i = 0; i < Units.num(f, "consumers", 2); i++) {
			Connection c = cf.createConnection();
			Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
			MessageConsumer mc = s.createConsumer(s.createQueue(queue));
			mc.setMessageListener(m -> received.incrementAndGet());
			c.start();
			consumers.add(c);
		}
		byte[] body = new byte[size];
		for (int i = 0; i < size; i++) {
			body[i] = (byte) ('a' + i % 26);
		}
		Units.run("jms send", units, (int) Units.num(f, "clients", 8), i -> {
			Connection c = cf.createConnection();
			c.start();
			Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
			MessageProducer p = s.createProducer(s.createQueue(queue));
			p.setDeliveryMode(persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT);
			return new Units.Client() {
				public void unit(long n) throws Exception {
					BytesMessage m = s.createBytesMessage();
					m.writeBytes(body);
					m.setLongProperty("n", n);
					p.send(m);
				}

				public void close() throws Exception {
					c.close();
				}
			};
		});
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
		while (received.get() < units && System.nanoTime() < deadline) {
			Thread.sleep(10);
		}
		for (Connection c : consumers) {
			c.close();
		}
		if (received.get() < units) {
			System.err.printf("only %d of %d messages received within 60 s%n", received.get(), units);
			System.exit(1);
		}
	}
}
