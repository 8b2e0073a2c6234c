package corpus.items;

import java.util.Map;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * The smallest useful service: one item read from the database per request
 * (find_item is a database function the scenario defines) and a greeting
 * that touches nothing.
 */
@SpringBootApplication
@RestController
public class ItemsApplication {
	private final JdbcTemplate jdbc;

	ItemsApplication(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	@GetMapping("/items/{id}")
	Map<String, Object> item(@PathVariable long id) {
		return jdbc.queryForMap("select id, name, price from find_item(?)", id);
	}

	@GetMapping("/hello")
	Map<String, Object> hello() {
		return Map.of("message", "hello", "service", "items");
	}

	public static void main(String[] args) {
		SpringApplication.run(ItemsApplication.class, args);
	}
}
