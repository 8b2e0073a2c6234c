package pool001

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules"
)

// funnel is a pooler's two sides at the window's end: the load's clients
// established on the listener the process holds, and the process's
// established connections to one upstream.
type funnel struct {
	listener string // the listener's address
	inbound  int    // clients established on it at the window's end
	atStart  int    // and at the window's start
	upstream string // the upstream's address
	outbound int    // the process's established connections to it
	recentTW int    // its connections closed in the last 5 s (TIME_WAIT)
	inFlight int    // the clients active: in flight
	active   string // how the clients are known to be active
}

// fromFunnel reads a pooler's queue from its sockets where the load measured
// no latency (a command load: pgbench through PgBouncer counts its lookups,
// not their times) and the kernel's accept queue is empty (a pooler
// accepts every client at once and queues them in its own memory):
// the clients established on the listener the process holds, active
// because they are the load's, are the requests in flight, and the few
// connections it holds to one upstream, kept (a pool's, not one per
// request), serve them at once. Little's law then gives the wait share,
// 1 − upstream / clients, with the upstream's slots all busy: the process
// is far from CPU-bound and each connection carries throughput / slots
// requests a second. Measured on the corpus: PgBouncer with
// default_pool_size 1 held 16 pgbench clients (none at the window's start,
// the load's clients connecting with it) over 1 connection to PostgreSQL
// (no TIME_WAIT to it in the last 5 s), 176 lookups/s, 5.7 ms per lookup
// on the one connection against the query's 5.5 ms, 0.029 of 2 cores:
// 94% waiting (SHOW POOLS: cl_waiting 15, sv_active 1). Caddy proxying with
// keep-alive off held 16 clients over 2 established connections to its
// upstream (11 sockets) with 345 closed in the last 5 s: a connection per
// request, not a pool. Where the load measured latencies (the JVM services'
// 32 clients over HikariCP's 10 connections) they are the reading; with them
// taken away (and the listener marked the process's), Tomcat's 2 threads and
// Jetty's 8 in front of HikariCP's 10 connections would read the
// connections, not the threads, as the pool: workers fewer than the
// upstream's connections keep the funnel silent.
func fromFunnel(ev *evidence.Evidence, q facts.Queue, work facts.Work, candidates []bound) *reading {
	if q.OK || !work.WaitBound() {
		return nil // the load's latencies are the reading where it measured them
	}
	f, ok := funnelOf(ev)
	if !ok {
		return nil
	}
	wait := 1 - float64(f.outbound)/float64(f.inFlight)
	if wait < minWait {
		return nil
	}
	// Workers fewer than the upstream's connections hold no more of them
	// at once: the requests queue for the workers, the connections are not
	// all busy, and the sockets cannot tell how many serve.
	for _, b := range candidates {
		if (b.kind == "threads" || b.kind == "processes") && b.size < f.outbound {
			return nil
		}
	}
	// The pool is the upstream's connections (a setting may size it).
	var pool []bound
	for _, b := range candidates {
		if b.kind == "setting" || b.kind == "connections" && b.addr == f.upstream {
			pool = append(pool, b)
		}
	}
	r := &reading{wait: wait, inFlight: float64(f.inFlight), inService: float64(f.outbound), funnel: &f,
		waitFrom: fmt.Sprintf("the process's sockets at the window's end: %d clients in flight on %s, %s to %s serving them (Little's law)",
			f.inFlight, f.listener, count(f.outbound, "connection"), f.upstream)}
	return matchBound(r, work, pool)
}

// funnelOf reads the funnel from the snapshots, when its clients are
// active: a closed-loop load's clients (its concurrency), or a command
// load's that ran through the window's end snapshot and whose clients came
// with it (the listener held no more than the upstream's connections at
// the window's start).
func funnelOf(ev *evidence.Evidence) (funnel, bool) {
	end, start := ev.SystemEnd, ev.SystemStart
	if end == nil || end.Net == nil || !end.Net.ProcessSockets || ev.Load == nil {
		return funnel{}, false
	}
	var f funnel
	var held []bundle.Listener
	for _, l := range end.Net.Listeners {
		if l.Process {
			held = append(held, l)
			if n := rules.LocalClients(end, l); n > f.inbound {
				f.listener, f.inbound = l.Addr, n
				f.atStart = rules.LocalClients(start, l)
			}
		}
	}
	for _, r := range end.Net.Remotes {
		n := min(r.Process, r.States["ESTABLISHED"])
		if n <= 0 || n <= f.outbound || slices.ContainsFunc(held, func(l bundle.Listener) bool { return rules.Listens(l, r.Addr) }) {
			continue
		}
		f.upstream, f.outbound, f.recentTW = r.Addr, n, r.RecentTimeWait
	}
	if f.inbound <= f.outbound || f.outbound == 0 {
		return funnel{}, false
	}
	// A pool keeps its connections; a proxy that dials one per request
	// leaves them in TIME_WAIT at its request rate.
	if !end.Net.TimeWaitAges || f.recentTW > f.outbound {
		return funnel{}, false
	}
	l := ev.Load
	switch {
	case l.Mode == "closed" && l.Concurrency > 1:
		f.inFlight = min(l.Concurrency, f.inbound)
		f.active = fmt.Sprintf("the load's %d clients, a closed loop", l.Concurrency)
	case l.Mode == "command" && start != nil && f.atStart <= f.outbound && ranThrough(l, end.Time):
		f.inFlight = f.inbound
		f.active = fmt.Sprintf("the load's: %d at the window's start, %d at its end, the load running", f.atStart, f.inbound)
	default:
		return funnel{}, false
	}
	return f, f.inFlight > f.outbound
}

// ranThrough reports whether the load was running at t.
func ranThrough(l *bundle.LoadResult, t time.Time) bool {
	if l.Started.IsZero() || t.IsZero() {
		return false
	}
	return l.Started.Add(time.Duration(l.DurationMS * float64(time.Millisecond))).After(t)
}

// poolers are the connection poolers and proxies known by their command,
// with the setting that sizes the connections they hold to an upstream
// (key, when it is one line of their configuration) and its default.
var poolers = []struct {
	comm         *regexp.Regexp
	what, resize string
	key          string
	def          int
}{
	{regexp.MustCompile(`^pgbouncer$`), "PgBouncer's server connection pool",
		"PgBouncer's default_pool_size (per database and user, default 20; max_db_connections and max_user_connections cap it, and pool_mode = transaction lends a server connection per transaction)",
		"default_pool_size", 20},
	{regexp.MustCompile(`^pgpool`), "pgpool-II's child processes and their cached connections",
		"pgpool-II's num_init_children (clients served at once, default 32; max_pool connections cached per child)",
		"num_init_children", 32},
	{regexp.MustCompile(`^proxysql$`), "ProxySQL's backend connection pool",
		"ProxySQL's max_connections of the backend server in mysql_servers (per hostgroup, default 1000)", "", 1000},
	{regexp.MustCompile(`^haproxy$`), "HAProxy's server queue",
		"HAProxy's maxconn on the backend's server line", "", 0},
}
