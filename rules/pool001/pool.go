// Package pool001 detects requests queueing for a bounded resource while
// the CPUs idle (finding class pool-queueing): a connection pool, an HTTP
// client's per-host limit, a semaphore, a thread pool of any
// implementation.
package pool001

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// Rule is POOL001.
var Rule = &rules.Rule{
	ID:    "POOL001",
	Class: "pool-queueing",
	Doc: rules.Doc{
		Title: "Requests queue for a bounded pool while the CPUs idle",
		Text: `A request that needs a slot of a bounded resource (a database connection, a
connection to a backend host, a worker thread, a semaphore's permit) waits
for one when all are taken. When the pool is smaller than the requests in
flight, the service serves at most pool size / service time requests per
second whatever its CPUs could do: latency is the queue, the CPUs idle, and
no profile of the code shows why. Throughput then grows with the pool's size
until the next bound: the CPUs, the backend's own capacity, or the next
pool behind this one. A library's own goroutines per call (database/sql's
per-query goroutine) and the calls' waits are consequences of the calls;
more calls in parallel only queue more on the same slots.`,
		Evidence: `Where a request waits, three ways. Go: the execution trace's request paths,
the share of their time spent waiting for a library pool's slot
(database/sql's (*DB).conn, net/http's (*Transport).getConn, pgxpool,
go-redis, x/sync's semaphore and errgroup limit) or in a channel send of the
service's own code (a channel used as a semaphore); else the goroutine
profiles, the request goroutines waiting there against those in flight
(Little's law), and the goroutines holding a slot. Any runtime: the load's
own figures by Little's law, requests in flight N = throughput × mean
latency and served at once E = throughput × the fastest request's latency
(the service time without a wait for a turn); the wait share is 1 − fastest
/ mean. Where the process tree holds a listener with connections waiting in
its accept queue at the window's end, those are the queue itself, and the
requests in flight less them are served at once: workers that accept their
own connections (PHP-FPM's children) serve them strictly first come, first
served, every request waits its turn and the fastest request carries one
too (PHP-FPM with 2 children behind nginx: the load read 29 served at once,
the listener held 30 of the 31.7 in flight). Where the load measured no
latency (a command load) and a pooler queues its clients in its own memory
(PgBouncer accepts every client at once; its accept queue is empty), its
sockets show the funnel: the clients established on the listener it holds
are the requests in flight and its established connections to one upstream
serve them at once, when the clients are shown active (a closed-loop load's
concurrency, or a command load running through the window's end whose
clients came with it: the listener held no more than the upstream's
connections at the window's start), the upstream's connections are kept (no
more closed in the last 5 s than held: a pool, not a connection per
request) and the process is far from CPU-bound (under half its cores), with no group
of its workers fewer than those connections (Tomcat's 2 threads in front of
HikariCP's 10: the connections are not all busy).
PgBouncer with default_pool_size 1: 16 pgbench clients (0 at the window's
start) over 1 connection to PostgreSQL, none closed in 5 s, 176 lookups/s,
5.7 ms a lookup on the connection against the query's 5.5 ms, 0.029 of
2 cores: 94% waiting (its SHOW POOLS: cl_waiting 15, sv_active 1). A
pooler's configuration file, where the bundle holds it (the ini PgBouncer's
command line names: facts.Configuration), names the line that sets the
size seen (default_pool_size = 1, with its file, section and line); a line
whose value the sockets contradict (a [databases] entry's pool_size, a
reload since) is shown beside the reading, not as its cause. Where
the load's latencies read too, the two agree: with them taken away, HikariCP's
1 connection under 32 clients reads 97% (the load: 97%), the Tomcat and
Jetty fixes' 10 connections 69% (the load: 70-71%). Caddy
proxying with keep-alive off held 16 clients over 2 established
connections, 345 closed in 5 s: not a pool. Either reading fires only when
a bound of the service's shows the same size: a group of threads named alike (any executor: Tomcat's, Jetty's,
Netty's, Executors', a hand-made one) using at least 10% of the process's
CPU, the threads in one process of a native server known to hold a worker
per request, or its processes alike (Apache's MPM workers, PHP-FPM's
children; not event-loop servers such as nginx, whose two workers on two
cores served 2.2 requests at once in the corpus's healthy recording), the
connections the
process and its descendants hold to one peer, or a pool-sizing
setting on its command line (name=value or a flag and its value), of size k
with E / k between 0.5 and 1.15 (a saturated bound's slots are all busy;
the fastest request is a lower bound on the mean hold), and when the holds
are mostly off the CPU (the process's cores / E at most 0.5: the slots wait
on something, they do not compute). Fires from a wait share of 20% with
the process under 80% of its cores. Measured on the corpus: Tomcat with
2 threads (server.tomcat.threads.max=2) 94% of latency waiting, E 1.77 for
2 threads (0.89), cores / E 0.22, 0.40 of 2 cores; HikariCP with one
connection 97%, E 0.94 for 1 connection (0.94), 0.22, 0.21 cores; the
Tomcat fix's side (200 threads) queues next on Hikari's 10 connections,
72%, E 8.9 for 10 (0.89), 0.14; Jetty with 8 threads
(server.jetty.threads.max=8, an acceptor and a selector among them) 85%,
E 4.9 for 8 (0.62), 0.17, 0.86 cores. A JVM pool read here is left
out of JVM011, which reads the same pool from its threads' waits without the
load's figures. On services written for the rule (32
clients, a 20 ms dependency): database/sql with SetMaxOpenConns(1) 92% in
the trace (96% by the load), E 1.14 for 1 connection, cores / E 0.03, the
requests 97% blocked past the wait; net/http's MaxConnsPerHost 2 and a
channel of 2 used as a semaphore 94%, E 2.07 and 2.19 for 2, 98% blocked;
a JVM's hand-made pool of 2 connections 93%, E 2.19 for its 2 sockets to
the backend, cores / E 0.11. Their right-sized sides wait 9-13% by the
load and nothing in the trace. The healthy servers (Jetty static files, a
Tomcat JSP, ZooKeeper reads) and the CPU-bound problems read cores / E
0.42-14.7 (a Jetty compressing at level 9 on an oversubscribed host is the
0.42; a Pushgateway gathering per write reads 0.20 and shows no bound of
its size) and have no bound of the size served at once. Severity from the
throughput the fix gives at the least: high from 2x, medium from 1.25x.
The least is the next bound's size (or the requests in flight, or the
pool library's default where that lies between today's size and them:
HikariCP's 10, the size its operators go back to) over the slots that
serve requests today: Jetty's QueuedThreadPool runs its
connectors' acceptors and selectors on threads of its own, which hold no
request, so they are counted out of its size (the acceptors by their
threads' names, else Jetty's default; the selectors by a setting, else
Jetty's default, max(1, min(CPUs / 2, maxThreads / 16))). Jetty with 8
threads on 2 CPUs served with 6, and its fix to HikariCP's 10 connections
measured 1.74x [1.66, 1.81]: 10 / 6 = 1.67, where 10 / 8 read 1.25.`,
		Fix: `Size the pool to the requests in flight and to what the backend allows
(Little's law: slots = requests per second × the time each holds one), or
bound the requests in flight to the pool instead (a smaller server thread
pool, load shedding) when the backend allows no more. A database's
max_connections and the other clients sharing it bound a connection pool;
the CPUs bound a pool whose holders compute.`,
		Before: `db.SetMaxOpenConns(1)          // 32 requests in flight, each query holds the connection 21 ms`,
		After:  `db.SetMaxOpenConns(32)         // the requests in flight, within the database's max_connections`,
		Caveats: `The gain assumes the backend keeps its service time with more requests at
once; a backend at its own capacity does not, and then the pool is the
right place for the queue. The load's figures cover its whole run, the
profiles their window. Read from the load alone, the service time is the
fastest request's: a strictly first-come-first-served queue in front of a
saturated pool (a hand-made pool reading one queue) gives every request the
same wait, the fastest request then carries a whole turn, and the load
cannot tell the pool from a slow backend; Apache's mpm_event and the
executors named above let some requests through at once, and a listener
the process holds shows its accept queue (one reading, at the window's
end). A pooler's sockets are one reading at the window's end too, and show
its clients only when they run on its host (loopback, a sidecar); the
reading takes the upstream's connections as all busy, which the process's
idle CPU and its clients' being the load's support but do not measure.`,
		Since: "0.4",
		Refs: []string{
			"https://pkg.go.dev/database/sql#DB.SetMaxOpenConns",
			"https://pkg.go.dev/net/http#Transport",
			"https://github.com/brettwooldridge/HikariCP/wiki/About-Pool-Sizing",
			"https://tomcat.apache.org/tomcat-11.0-doc/config/executor.html",
		},
	},
	// Where requests wait (Go), or what bounds them: a JVM's threads, the
	// process's sockets and command line.
	NeedsOneOf: []rules.Input{rules.Trace, rules.Goroutine, rules.System, rules.JVM},
	Facts:      []facts.Key{facts.WorkDone, facts.LoadQueue, facts.CPUStacks, facts.Configuration},
	Check:      check,
}

const (
	// minWait is the share of request time waiting for a turn from which
	// a pool is worth sizing: the corpus's pool-bound services read
	// 71-97%.
	minWait = 0.20
	// maxOnCPU is the process's cores over the requests served at once
	// above which the slots compute rather than wait: the pool-bound
	// services read 0.13-0.22, CPU-bound ones 0.42 and up.
	maxOnCPU = 0.5
	// minOffCPU is the share of a request's time past the wait for a slot
	// that the trace must see it blocked (in a call to a backend) for the
	// slots to be held off the CPU: the complement of maxOnCPU.
	minOffCPU = 1 - maxOnCPU
	// maxBusy is the share of its cores the process may use for more
	// slots to pay: past it the CPUs are the next bound (1.25x at most).
	maxBusy = 0.8
	// Severity by the least throughput the fix gives.
	mediumGain = 1.25
	highGain   = 2.0
)

// reading is one pool the evidence shows requests waiting for.
type reading struct {
	name string // the pool: a thread group, a peer, a library's pool
	what string // what it is
	unit string // what its slots are: threads, connections, slots
	// resize is how its size is set; setting is the setting seen, if any.
	resize, setting string
	size            int
	sizeFrom        []string
	wait            float64 // share of request time waiting for it
	waitFrom        string
	inFlight        float64 // requests in flight
	inService       float64 // served at once, 0 unknown
	next            *bound  // the next bound behind it
	goWait          *goWait // Go: where the requests waited
	// accept is the listener whose accept queue showed the wait, when it did.
	accept *bundle.Listener
	// def is the pool's library default size, when known (HikariCP's 10).
	def int
	// notServing are the pool's threads that hold no request (a Jetty
	// connector's acceptors and selectors), notServingFrom how they are
	// known.
	notServing     int
	notServingFrom string
	// funnel is the pooler's sockets that showed the wait, when they did;
	// key the configuration line that sizes the pool, when known.
	funnel *funnel
	key    string
	// conf is the configuration file's line that sizes the pool, when
	// the bundle holds the file (facts.Configuration) and its value is
	// the size seen; confOther one whose value is not.
	conf, confOther *facts.Setting
}

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	work := facts.Get(pass.Facts, facts.WorkDone)
	q := facts.Get(pass.Facts, facts.LoadQueue)
	args := commandLine(ev)
	var candidates []bound
	candidates = append(candidates, settings(args)...)
	candidates = append(candidates, threadGroups(ev.JVM, work.Cores)...)
	candidates = append(candidates, connections(ev, args)...)
	candidates = append(candidates, nativeWorkers(ev)...)

	var r *reading
	if ev.Platform() == evidence.PlatformGo {
		r = fromGo(ev, q, work, candidates)
	}
	if r == nil {
		r = fromLoad(q, work, candidates)
	}
	if r == nil {
		r = fromAcceptQueue(ev, q, work, candidates)
	}
	if r == nil {
		r = fromFunnel(ev, q, work, candidates)
	}
	if r == nil || r.wait < minWait {
		return nil
	}
	r.notServing, r.notServingFrom = connectorThreads(ev.JVM, args, r)
	r.fromFile(facts.Get(pass.Facts, facts.Configuration))
	if work.Available > 0 && work.Busy() > maxBusy {
		return nil // the CPUs are the bound
	}
	pass.Report(finding(pass, r, q, work))
	return nil
}

// fromFile finds the configuration file's line that sets the pool's
// size (a pooler's key: PgBouncer's default_pool_size), when the bundle
// holds the file its command line names.
func (r *reading) fromFile(cfg facts.Config) {
	if r.key == "" {
		return
	}
	set, ok := cfg.Last(facts.SettingKey(r.key))
	if !ok || set.Source != facts.SourceFile {
		return
	}
	if n, err := strconv.Atoi(strings.TrimSpace(set.Value)); err == nil && n == r.size {
		r.conf = &set
		r.sizeFrom = append(r.sizeFrom, set.Written()+" ("+set.Where()+")")
		return
	}
	r.confOther = &set
}

// fromGo reads a Go service's waits for a library pool or a semaphore
// channel: from the trace, else the goroutine profiles.
func fromGo(ev *evidence.Evidence, q facts.Queue, work facts.Work, candidates []bound) *reading {
	w, ok := fromTrace(ev)
	if g, gok := fromGoroutines(ev); gok {
		if !ok {
			w, ok = g, true
		} else if g.pool == w.pool {
			w.queued, w.holders, w.maxHolders, w.inFlight = g.queued, g.holders, g.maxHolders, g.inFlight
		}
	}
	if !ok {
		return nil
	}
	// The slots must be held off the CPU (across a call to a backend):
	// slots held by computing goroutines are the CPUs' bound, however
	// they are counted out. The trace shows it per request, the load by
	// the process's cores over the requests served at once; a library's
	// pool wraps calls to a backend, a channel of the service's may not,
	// so it needs one of them.
	switch {
	case w.offCPU >= 0 && w.offCPU < minOffCPU:
		return nil
	case q.OK && q.InService > 0 && work.Cores > 0 && work.Cores/q.InService > maxOnCPU:
		return nil
	case w.pool == nil && w.offCPU < 0 && !(q.OK && q.InService > 0 && work.Cores > 0):
		return nil
	}
	// net/http's Transport waits in getConn for a dial as well as for a
	// connection of its per-host limit: with a new connection per request
	// the wait is the dialling (connection churn), not a pool.
	if w.pool != nil && w.pool.Acquire("net/http.(*Transport).getConn") && work.HasConns && work.NewConnsPerUnit >= dialsPerRequest {
		return nil
	}
	r := &reading{name: w.name(), wait: w.share, waitFrom: w.from, goWait: w, inFlight: w.inFlight, unit: "slots"}
	if w.pool != nil {
		r.what, r.resize = w.pool.Name, w.pool.Size
		if strings.Contains(w.pool.Name, "connection") {
			r.unit = "connections"
		}
	} else {
		r.what, r.resize = "a buffered channel whose sends wait for a free slot", "the channel's capacity"
	}
	if q.OK {
		r.inFlight, r.inService = q.InFlight, q.InService
	}
	// Its size: a setting or the connections of the size served at once
	// (or held by as many goroutines as were seen holding a slot).
	var matched []bound
	for _, b := range candidates {
		if b.kind != "threads" && (r.inService > 0 && b.matches(r.inService) || r.inService == 0 && w.maxHolders > 0 && b.size == w.maxHolders) {
			matched = append(matched, b)
		}
	}
	r.sized(matched)
	if r.size == 0 && w.maxHolders > 0 {
		r.size = w.maxHolders
		r.sizeFrom = append(r.sizeFrom, fmt.Sprintf("%d request goroutines seen holding a slot (goroutine profile)", w.maxHolders))
	}
	r.next = nextBound(candidates, r)
	return r
}

// dialsPerRequest is the new TCP connections per request from which a
// wait in net/http's getConn is read as dialling.
const dialsPerRequest = 0.5

// fromLoad reads the load's queueing, when a bound of the service's is as
// large as what it served at once and the holds are off the CPU.
func fromLoad(q facts.Queue, work facts.Work, candidates []bound) *reading {
	if !q.OK || q.WaitShare < minWait || q.InService <= 0 {
		return nil
	}
	return matchBound(&reading{wait: q.WaitShare, waitFrom: "the load's latencies (Little's law)", inFlight: q.InFlight, inService: q.InService}, work, candidates)
}

// fromAcceptQueue reads the queue the kernel keeps in front of workers
// that accept their own connections: the connections waiting in the
// accept queue of a listener the process tree holds, at the window's end
// (the snapshot taken under load), against the requests in flight
// (Little's law); those not queued are served at once. A pool of processes
// accepting from one socket (PHP-FPM's children) serves it strictly first
// come, first served, so every request waits its turn, the fastest one
// too, and the load's reading (served at once = throughput × the fastest
// request) counts the turns as service: PHP-FPM's 2 children behind nginx
// read 29 served at once by the load, while its listener held 30 of the 31.7
// requests in flight.
func fromAcceptQueue(ev *evidence.Evidence, q facts.Queue, work facts.Work, candidates []bound) *reading {
	l, ok := acceptQueue(ev)
	if !ok || !q.OK || q.InFlight <= 0 {
		return nil
	}
	queued := float64(l.Queue)
	inService := q.InFlight - queued
	if inService <= 0 || queued/q.InFlight < minWait {
		return nil // more queued than the load has in flight: not (only) its requests
	}
	r := &reading{wait: queued / q.InFlight, inFlight: q.InFlight, inService: inService, accept: &l,
		waitFrom: fmt.Sprintf("the accept queue of %s, %d connections waiting for a worker at the window's end, of the requests in flight (Little's law)", l.Addr, l.Queue)}
	return matchBound(r, work, candidates)
}

// acceptQueue is the listener with the longest accept queue among those
// the process tree holds, at the window's end.
func acceptQueue(ev *evidence.Evidence) (bundle.Listener, bool) {
	var best bundle.Listener
	if s := ev.SystemEnd; s != nil && s.Net != nil {
		for _, l := range s.Net.Listeners {
			if l.Process && l.Queue > best.Queue {
				best = l
			}
		}
	}
	return best, best.Queue > 0
}

// matchBound completes a reading of the requests served at once with the
// bound of the service's of that size, when its holds are off the CPU.
func matchBound(r *reading, work facts.Work, candidates []bound) *reading {
	if work.Cores > 0 && work.Cores/r.inService > maxOnCPU {
		return nil
	}
	var matched []bound
	for _, b := range candidates {
		if b.matches(r.inService) {
			matched = append(matched, b)
		}
	}
	if len(matched) == 0 {
		return nil
	}
	// A thread group or the connections say which pool it is, a
	// setting what sizes it.
	for _, kind := range []string{"threads", "processes", "connections", "setting"} {
		if i := slices.IndexFunc(matched, func(b bound) bool { return b.kind == kind }); i >= 0 {
			b := matched[i]
			r.name, r.what, r.resize, r.key = b.name, b.what, b.resize, b.key
			r.unit = map[string]string{"threads": "threads", "processes": "processes", "connections": "connections", "setting": "slots"}[kind]
			if b.unit != "" {
				r.unit = b.unit
			}
			if kind == "setting" {
				r.name = "the pool " + b.name + " sizes"
			}
			break
		}
	}
	r.sized(matched)
	r.next = nextBound(candidates, r)
	return r
}

// sized records the bounds that show the pool's size: the first sets it,
// a setting names what to change, and a setting's library (HikariCP,
// Tomcat) says what a connection pool is.
func (r *reading) sized(matched []bound) {
	for _, b := range matched {
		if r.size == 0 {
			r.size = b.size
		}
		if r.def == 0 {
			r.def = b.def
		}
		switch b.kind {
		case "setting":
			r.sizeFrom = append(r.sizeFrom, b.name+" on the command line")
			if r.setting == "" {
				// A Go library's call (db.SetMaxOpenConns(n)) stays named
				// beside the service's own setting that feeds it.
				resize := b.resize
				if r.resize != "" && r.goWait != nil {
					resize += ", which sets " + r.resize
				}
				r.setting, r.resize = b.name, resize
				if b.what != "" && (r.what == "" || strings.HasPrefix(r.what, "a ")) {
					r.what = b.what
				}
			}
		case "threads":
			r.sizeFrom = append(r.sizeFrom, fmt.Sprintf("%d threads in %s (%s)", b.size, b.name, b.what))
		case "connections":
			r.sizeFrom = append(r.sizeFrom, count(b.size, "connection")+" held to "+b.name)
		case "processes":
			r.sizeFrom = append(r.sizeFrom, fmt.Sprintf("%d %s (%s)", b.size, b.name, b.what))
		}
	}
	if r.what == "" {
		r.what = "a bounded pool"
	}
}

// nextBound is the smallest other bound larger than the pool and smaller
// than the requests in flight: where the requests queue next once the pool
// is larger (a thread pool's requests then wait for the connections).
func nextBound(candidates []bound, r *reading) *bound {
	var best *bound
	for i, b := range candidates {
		if b.kind == "setting" || b.size <= r.size || float64(b.size) >= r.inFlight {
			continue
		}
		// A bound of the size served at once, and within the matching
		// window of the pool's own size, is the same pool seen another way:
		// Apache's 18 threads are its 16 workers (each holding one of the
		// 16 proxied connections), a listener and a main thread. A larger
		// one is the next bound even where it matches what is served at
		// once: Jetty's 8 threads (6 serving) served 5.1 at once, 0.51 of
		// HikariCP's 10 connections, which its fix then queued on.
		if r.inService > 0 && b.matches(r.inService) && float64(b.size) <= maxMatch*float64(r.size) {
			continue
		}
		if best == nil || b.size < best.size {
			best = &candidates[i]
		}
	}
	return best
}

// gains is the throughput the fix gives: at least with the service time
// the pool's holds take now (size / throughput), capped by the CPUs at the
// CPU each request costs now; at most with the fastest request's.
func gains(r *reading, work facts.Work) (low, high float64, target float64, capped bool) {
	target = r.inFlight
	if r.next != nil {
		target = float64(r.next.size)
	}
	// All the wait gone: latency × (1 − wait share), the same clients'
	// throughput 1 / (1 − wait share), within the next bound.
	high = 1 / (1 - math.Min(r.wait, 0.999))
	if r.inFlight > 0 && target < r.inFlight {
		high *= target / r.inFlight
	}
	if r.inService > 0 {
		high = math.Min(high, target/r.inService)
	}
	low = high
	if r.size > 0 {
		low = math.Min(low, target/float64(r.size-r.notServing))
		// Back to the library's default, where that is more than today
		// and less than the target: the fix most operators make first.
		if r.def > r.size && float64(r.def) < target {
			low = math.Min(low, float64(r.def)/float64(r.size-r.notServing))
		}
	}
	if work.Cores > 0 && work.Available > 0 {
		if cpu := work.Available / work.Cores; cpu < low {
			low, capped = cpu, true
		}
	}
	low = math.Max(low, 1)
	high = math.Max(high, low)
	return low, high, target, capped
}

func finding(pass *rules.Pass, r *reading, q facts.Queue, work facts.Work) rules.Finding {
	low, high, target, capped := gains(r, work)
	sev := rules.Low
	switch {
	case low >= highGain:
		sev = rules.High
	case low >= mediumGain:
		sev = rules.Medium
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      1 - 1/low,
		ImpactRange: &[2]float64{1 - 1/low, 1 - 1/high},
		Resource:    "latency",
		ImpactBasis: "throughput of the same clients with the pool sized to the requests in flight (or to the next bound): at least new size / old size " +
			"with today's holds (the new size at least the library's default, where it is smaller), capped by the CPUs at today's CPU per request; at most with every wait for a turn gone (1 / (1 − wait share)) " +
			"or the holds as short as the fastest request",
		Summary:  summary(r, work),
		Evidence: evidence_(r, q, work, low, high),
		Fix:      fixText(r, work, low, high, target, capped),
		Caveats:  []string{pass.Rule.Doc.Caveats},
	}
	f.Example = example(pass, r, target)
	if w := r.goWait; w != nil && w.at.Func != "" {
		f.Locations = []rules.Location{{Function: w.at.Func, File: w.at.File, Line: w.at.Line, Share: r.wait, Role: "where requests wait for the pool"}}
	}
	if sites, total := threadWaits(pass.Evidence, r); len(sites) > 0 {
		// A JVM's pool: where its threads wait inside the work (JFR).
		f.Locations = jvmthreads.Locations(sites, total, 3, func(jfr.WaitSite) string { return "where the pool's threads wait" })
		f.Summary += "; its threads wait in " + jvmthreads.SiteName(sites[0].Stack)
	}
	if w := r.goWait; w != nil && w.pool != nil {
		f.Claim = poolClaim(pass, w.pool)
	}
	return f
}

// summary: "Requests wait 95% of their time for Tomcat's connector
// executor: 2 threads (http-nio-8080-exec), set by --server.tomcat.threads.max=2;
// 31 in flight, 1.7 served at once, the process on 0.37 of 2 cores".
func summary(r *reading, work facts.Work) string {
	s := fmt.Sprintf("Requests wait %s of their time for %s", human.Percent(r.wait), r.what)
	var parts []string
	if r.size > 0 {
		unit := r.unit
		if r.size == 1 {
			unit = strings.TrimSuffix(unit, "s")
		}
		parts = append(parts, fmt.Sprintf("%d %s", r.size, unit))
	}
	if r.name != "" && r.name != r.what {
		parts = append(parts, "("+r.name+")")
	}
	switch {
	case r.setting != "":
		parts = append(parts, "set by "+r.setting)
	case r.conf != nil:
		parts = append(parts, "set by "+r.conf.Written()+" in "+r.conf.File)
	}
	if len(parts) > 0 {
		s += ": " + strings.Replace(strings.Join(parts, " "), ") set by", "), set by", 1)
	}
	var ctx []string
	if r.inFlight > 0 {
		ctx = append(ctx, human.Number(round1(r.inFlight))+" in flight")
	}
	if r.inService > 0 {
		ctx = append(ctx, human.Number(round1(r.inService))+" served at once")
	}
	if work.Cores > 0 && work.Available > 0 {
		ctx = append(ctx, fmt.Sprintf("the process on %.2f of %s cores", work.Cores, human.Number(work.Available)))
	}
	if len(ctx) > 0 {
		s += "; " + strings.Join(ctx, ", ")
	}
	if w := r.goWait; w != nil && w.at.Func != "" {
		s += "; called from " + rules.ShortFunc(w.at.Func)
	}
	return s
}

func evidence_(r *reading, q facts.Queue, work facts.Work, low, high float64) []rules.Fact {
	ev := []rules.Fact{
		rules.Share("request time waiting for the pool", r.wait),
		rules.Text("wait read from", r.waitFrom),
	}
	if r.size > 0 {
		ev = append(ev, rules.Count("the pool's size", float64(r.size), ""))
		for _, s := range r.sizeFrom {
			ev = append(ev, rules.Text("size shown by", s))
		}
		if r.notServing > 0 {
			ev = append(ev, rules.Count("of them serving requests", float64(r.size-r.notServing), ""),
				rules.Text("the connectors' threads (no request)", r.notServingFrom))
		}
	}
	if a := r.accept; a != nil {
		ev = append(ev,
			rules.Count(fmt.Sprintf("connections waiting in %s's accept queue at the window's end (/proc/net/tcp)", a.Addr), float64(a.Queue), ""),
			rules.Count("served at once (in flight less the accept queue)", round2(r.inService), ""))
	}
	if f := r.funnel; f != nil {
		ev = append(ev,
			rules.Count(fmt.Sprintf("clients established on %s at the window's end (/proc/net/tcp)", f.listener), float64(f.inbound), ""),
			rules.Text("the clients are active", f.active),
			rules.Count("requests in flight", float64(f.inFlight), ""),
			rules.Count(fmt.Sprintf("established connections the process holds to %s (served at once)", f.upstream), float64(f.outbound), ""),
			rules.Count("of them closed in the last 5 s (TIME_WAIT)", float64(f.recentTW), ""))
		if work.PerSecond > 0 {
			per := time.Duration(float64(f.outbound) / work.PerSecond * float64(time.Second))
			ev = append(ev, rules.Duration(fmt.Sprintf("time per %s on each upstream connection (connections / throughput)", work.Unit), per))
		}
	}
	if q.OK {
		ev = append(ev,
			rules.Count("requests in flight (throughput × mean latency)", round1(q.InFlight), ""),
			rules.Count("served at once (throughput × fastest request)", round2(q.InService), ""),
			rules.Duration("fastest request (the service time without a wait)", q.Fastest),
			rules.Duration("mean latency", q.Mean),
			rules.Count("throughput", round1(q.Throughput), "/s"))
	}
	if w := r.goWait; w != nil {
		if w.inFlight > 0 {
			ev = append(ev, rules.Count("request goroutines waiting for a slot, on average (goroutine profiles)", round1(w.queued), ""),
				rules.Count("request goroutines in flight, on average (goroutine profiles)", round1(w.inFlight), ""))
		}
		if w.waited > 0 {
			ev = append(ev, rules.Duration("mean wait for a slot (trace)", w.waited))
		}
	}
	if work.Cores > 0 {
		ev = append(ev, rules.Count("cores the process used", round2(work.Cores), ""))
	}
	if work.Available > 0 {
		ev = append(ev, rules.Count("cores available", work.Available, ""))
	}
	if c := r.confOther; c != nil {
		ev = append(ev, rules.Text(fmt.Sprintf("%s in the configuration file (not the size seen)", c.Name), c.Value+" ("+c.Where()+")"))
	}
	if r.next != nil {
		ev = append(ev, rules.Text("the next bound", fmt.Sprintf("%d %s (%s)", r.next.size, r.next.kind, r.next.name)))
	}
	return append(ev, rules.Text("throughput the fix gives", fmt.Sprintf("%.1fx to %.1fx", low, high)))
}

func fixText(r *reading, work facts.Work, low, high, target float64, capped bool) string {
	var b strings.Builder
	what := r.resize
	if what == "" {
		what = "the pool's size"
	}
	fmt.Fprintf(&b, "Raise %s", what)
	if r.size > 0 {
		fmt.Fprintf(&b, " from %d", r.size)
	}
	if r.conf != nil {
		fmt.Fprintf(&b, " (%s: %s)", r.conf.Where(), r.conf.Written())
	}
	fmt.Fprintf(&b, " to about %s", human.Number(math.Round(target)+float64(r.notServing)))
	switch {
	case r.next != nil:
		fmt.Fprintf(&b, ", the %d %s of %s behind it, where requests queue next", r.next.size, r.next.kind, r.next.name)
	case r.inFlight > 0:
		b.WriteString(", the requests in flight")
	}
	if r.notServing > 0 {
		fmt.Fprintf(&b, ", beside the %d threads its connectors hold (%s)", r.notServing, r.notServingFrom)
	}
	b.WriteString(", and no further than the backend allows (a database's max_connections, shared with its other clients). ")
	fmt.Fprintf(&b, "Expected: %.1fx the throughput at least", low)
	if capped {
		fmt.Fprintf(&b, " (the CPUs are then the bound: the process used %.2f of %s cores)", work.Cores, human.Number(work.Available))
	}
	fmt.Fprintf(&b, ", up to %.1fx with the wait gone (latency × %.2f).", high, 1-r.wait)
	if w := r.goWait; w != nil && w.pool != nil && strings.HasPrefix(w.pool.Name, "database/sql") {
		b.WriteString(" database/sql's per-query goroutines and the queries' waits come with the calls: they are not churn to bound, and making the calls in parallel only queues more on the same connections.")
	}
	return b.String()
}

// example is the change as written: the setting seen with its new value,
// or the library's call.
func example(pass *rules.Pass, r *reading, target float64) string {
	n := fmt.Sprint(math.Round(target) + float64(r.notServing))
	if r.setting != "" {
		name, _, ok := strings.Cut(r.setting, "=")
		if !ok {
			name, _, _ = strings.Cut(r.setting, " ")
			return r.setting + "\n->\n" + name + " " + n
		}
		return r.setting + "\n->\n" + name + "=" + n
	}
	if r.key != "" && r.size > 0 {
		return fmt.Sprintf("%s = %d\n->\n%s = %s", r.key, r.size, r.key, n)
	}
	if w := r.goWait; w != nil && w.pool != nil {
		switch {
		case strings.HasPrefix(w.pool.Name, "database/sql"):
			return pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After
		case strings.HasPrefix(w.pool.Name, "net/http"):
			return fmt.Sprintf("&http.Transport{MaxConnsPerHost: %d}\n->\n&http.Transport{MaxConnsPerHost: %s, MaxIdleConnsPerHost: %s}", r.size, n, n)
		}
	}
	return ""
}

// poolClaim is the CPU the pool's library spends on its own machinery
// around the calls: samples in its own code, and goroutines it starts and
// schedules per call (database/sql's per-query goroutine). They come with
// the calls whatever the pool's size, so they are not the fix's gain (the
// finding's resource is latency); claimed here, goroutine churn that is
// mostly the library's per-call goroutines is linked under the pool, not
// advised as churn to bound. The driver's own work under the calls is left
// to whatever names it.
// libraryFrames are a pool's library's own frames where the whole
// package serves the pool's calls.
var libraryFrames = map[string]evidence.Matcher{
	"database/sql's connection pool": evidence.FuncPrefix("database/sql."),
}

func poolClaim(pass *rules.Pass, p *frames.Pool) *rules.Claim {
	stacks := facts.Get(pass.Facts, facts.CPUStacks)
	if stacks == nil {
		return nil
	}
	lib := p.Acquire
	if p.Held != nil {
		lib = evidence.Any(p.Acquire, p.Held)
	}
	if own := libraryFrames[p.Name]; own != nil {
		lib = evidence.Any(lib, own)
	}
	machinery := evidence.Any(frames.ChurnFrames, frames.SchedulerFrames)
	return &rules.Claim{Level: rules.LevelConfig, CPU: func(s evidence.Sample) bool {
		if len(s.Frames) == 0 {
			return false
		}
		inLib, churn := false, false
		for _, id := range s.Frames {
			fn := stacks.Frames[id].Func
			inLib = inLib || lib(fn)
			churn = churn || machinery(fn)
		}
		return inLib && (churn || lib(stacks.Frames[s.Frames[0]].Func))
	}}
}

// threadWaits are a JVM thread pool's recorded waits inside its work (JFR:
// sleeps, parks, socket reads), when the pool read is a group of threads.
func threadWaits(ev *evidence.Evidence, r *reading) ([]jfr.WaitSite, time.Duration) {
	if ev.JVM == nil || r.unit != "threads" || r.name == "" {
		return nil, 0
	}
	var sites []jfr.WaitSite
	var total time.Duration
	for _, w := range ev.JVM.Threading.TaskWaits {
		if w.Class == r.name {
			sites = append(sites, w)
			total += w.Total
		}
	}
	return sites, total
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
func round2(v float64) float64 { return math.Round(v*100) / 100 }
