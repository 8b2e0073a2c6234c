package corpus.items;

import java.io.IOException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

/**
 * The access log many services write through their application logger: one
 * INFO line per request with its method, path, status and time taken. Added
 * to this scenario's copy of boot-items only.
 */
@Component
class AccessLog extends OncePerRequestFilter {
	private static final Logger log = LoggerFactory.getLogger(AccessLog.class);

	@Override
	protected void doFilterInternal(HttpServletRequest req, HttpServletResponse res, FilterChain chain)
			throws ServletException, IOException {
		long start = System.nanoTime();
		try {
			chain.doFilter(req, res);
		} finally {
			log.info("{} {} {} {} us", req.getMethod(), req.getRequestURI(), res.getStatus(),
					(System.nanoTime() - start) / 1000);
		}
	}
}
