package pool001

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// jettyPool is what the rule calls Jetty's QueuedThreadPool (from the
// threads' names or a setting's).
const jettyPool = "Jetty's QueuedThreadPool"

// connectorThreads are the threads of a pool that hold no request: Jetty's
// QueuedThreadPool runs its connectors' acceptors and selectors on threads
// of its own pool, each holding one for good, so maxThreads counts them
// beside the threads that serve requests (Jetty's SelectorManager and
// AbstractConnector; its documentation asks maxThreads to cover acceptors
// + selectors + request threads). The acceptors are seen by their
// threads' names ("qtp…-18-acceptor-0@…"), else Jetty's default, 1 to 4 by
// the CPUs (cpus / 8); the selectors, which take turns on the pool's
// threads and carry no name, are a setting's or Jetty's default,
// max(1, min(cpus / 2, maxThreads / 16)). Measured on the corpus: Jetty
// with server.jetty.threads.max=8 on 2 CPUs, an acceptor and a selector,
// served as 6 threads (6 / 21 ms, the scenario's reading) and the fix to
// HikariCP's 10 connections gave 1.74x, 10 / 6 = 1.67 (10 / 8 = 1.25).
// Other pools (Tomcat's executor: its acceptor and poller are threads of
// their own) hold none.
func connectorThreads(s *jfr.Summary, args []string, r *reading) (n int, from string) {
	if s == nil || r.what != jettyPool || r.size <= 0 {
		return 0, ""
	}
	cpus := max(s.Cores, s.HWThreads, 1)
	acceptors, accFrom := 0, ""
	for _, t := range s.Threads {
		if strings.HasPrefix(t.Name, "qtp") && strings.Contains(t.Name, "-acceptor-") &&
			(r.name == "" || !strings.HasPrefix(r.name, "qtp") || strings.HasPrefix(t.Name, r.name+"-")) {
			acceptors++
		}
	}
	if acceptors > 0 {
		accFrom = count(acceptors, "acceptor") + ", seen by name"
	} else if v := setting(args, "jetty.threads.acceptors", "jetty.http.acceptors"); v >= 0 {
		acceptors, accFrom = v, count(v, "acceptor")+", set"
	} else {
		acceptors = max(1, min(4, cpus/8))
		accFrom = fmt.Sprintf("%s, Jetty's default for %d CPUs", count(acceptors, "acceptor"), cpus)
	}
	selectors, selFrom := setting(args, "jetty.threads.selectors", "jetty.http.selectors"), ""
	if selectors > 0 {
		selFrom = count(selectors, "selector") + ", set"
	} else {
		selectors = max(1, min(cpus/2, r.size/16))
		selFrom = fmt.Sprintf("%s, Jetty's default for %d CPUs and %d threads", count(selectors, "selector"), cpus, r.size)
	}
	n = acceptors + selectors
	if n >= r.size {
		return 0, ""
	}
	return n, accFrom + "; " + selFrom
}

// setting is the value of the first command-line setting whose name ends
// with one of names (name=value), -1 when none is set or it is not a whole
// number (Jetty's -1 is its default).
func setting(args []string, names ...string) int {
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok {
			continue
		}
		for _, n := range names {
			if strings.HasSuffix(name, n) {
				if v, err := strconv.Atoi(value); err == nil && v >= 0 {
					return v
				}
				return -1
			}
		}
	}
	return -1
}

// count is "1 acceptor", "2 acceptors".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
