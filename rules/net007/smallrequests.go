// Package net007 detects units of work sent one per request when the
// request's fixed cost outweighs the work on the item it carries (finding
// class small-requests).
package net007

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is NET007.
var Rule = &rules.Rule{
	ID:    "NET007",
	Class: "small-requests",
	Doc: rules.Doc{
		Title: "Requests too small: the per-request cost outweighs the work per item",
		Text: `Every request pays a fixed price whatever it carries: reading and parsing it
(headers, the protocol's framing), dispatching it through the server
framework, writing the response, the read and write system calls and the
kernel's TCP work under them, the wake-ups of the threads or goroutines that
serve it, and with a connection per request a handshake and a teardown. When
each request carries one item (one point to a time-series database, one key
to a cache, one message to a broker) and the work on the item is small, that
fixed price is most of the CPU per item. Sending many items per request
divides it by the batch size: with a fixed share f of the CPU per request and
B items per request the throughput grows 1/((1 − f) + f/B) times.`,
		Evidence: `Needs the load's results (what a unit is, how many were served) and a CPU
profile; reads the process's I/O counters and TCP opens (facts.WorkDone). Each
CPU sample is the handler's own work when it is in the program's code (not the
server framework's) and not in the I/O that code calls; it is fixed
per-request work when it is in the server framework (net/http's connection
loop, header parsing and response writing; gRPC's and fasthttp's transports;
Tomcat, Jetty, Netty, Undertow and java.nio; a native server's event loop and
protocol I/O: redis's readQueryFromClient and writeToClient, memcached's state
machine, nginx's request parsing), in read, write and poll system calls, in
the kernel's network work (perf and async-profiler stacks) or in the runtime's
per-request wake-ups (netpoll, the scheduler). The handler's own per-request
code (its set-up, a flush per call) counts as work on the item, so the fixed
share is a floor; the top of the range counts the handler's code and the
collector's work as fixed too, or all CPU per unit beyond 50 ns per byte of
the item (batched, the items cost 9 ns per byte in the Go ingest service below
and 18 in VictoriaMetrics). The recorded pairs put the truth near the top: a
fixed cost per request and a cost per item fitted to each pair leave the
items' own work 0.7% of the CPU one per request in the Go ingest service (0.39
µs of 58), 1.8% in VictoriaMetrics (1.6 µs of 88) and 6.6% in redis (0.93 µs
of 14, MGET of ten keys). The handler's code (8%, 32% and 13% of the CPU) is
mostly per-request set-up: a buffer zeroed per call, goroutine stack growth,
a connection wrapper's reads, metrics, a client's bookkeeping. A profile of
one item per request cannot tell it from the work on the item: every function
under the handler runs once per request and once per item alike.
Reports when the fixed share is at least 50% and the load shows an answer
per unit (0.5 write system calls per unit or more, where the process's I/O
counters were read and see the replies: they count write() to a socket, not
send(), so a server the profile shows sending through send() more than
writing through write() is not judged by them). Measured on this machine (2 cores), fixed share of CPU:
a Go ingest service (net/http, in testdata) taking one 47-byte sample per
POST 0.86 (58 µs CPU, 2.0 reads and 1.0 writes per request), the same samples
1000 per POST 0.26; VictoriaMetrics 1.150 (testdata) taking one InfluxDB line
(92 B) per POST 0.66 (88 µs CPU and 1.1 writes per request), the same lines
1000 per POST 0.06; redis 7.0 answering one GET per round trip (perf;
testdata and the corpus) 0.78-0.82 (16-17 µs CPU, 1.0-1.1 reads and writes
per key), the same server with 16 commands pipelined per round trip
0.36-0.40 at 0.065 writes per command; Tomcat closing every connection (1.0
new connections per request, the corpus) 0.53. A process whose threads wait
longer in storage syncs than they run (perf's off-CPU stacks: redis with
appendfsync always, 0.81 fixed at 0.29 cores) is bounded by its disk, not by
this CPU: left to sync-disk-write.
Healthy servers answering reads have high fixed shares too (Jetty serving a
3 KB file 0.49, Tomcat rendering a JSP 0.64, ZooKeeper getData 0.54-0.62: a
read is little work besides its request), which is why the protocol decides
what can be batched: HTTP POST, PUT or PATCH with a body of at most 4 KiB (an
ingest of tiny posts); any HTTP method when at least 0.5 TCP connections are
opened per request and the process is seen accepting them (1% of its CPU
or more in accept, above what it spends dialling: Tomcat 7.5%; a proxy
dialling its backend per request is connection churn, NET001; healthy
servers open 0.0002-0.01 per request); redis, memcached and Kafka loads (MGET
and pipelining; multi-get; producer batching). GET and other reads answered
one per request, and protocols perfdoctor does not know to batch, stay
quiet. Severity follows the CPU the fix returns at 100 items per request.`,
		Fix: `Send many items per request: the API's batch form (a write or import
endpoint takes thousands of lines or samples per POST; Prometheus remote
write, InfluxDB line protocol, Elasticsearch _bulk), redis MGET/MSET or a
pipeline, memcached's multi-key get, a producer's batching (linger and batch
size). Where connections are opened per request, keep them alive. Buffer on
the client for a bounded time (10-100 ms) or size (100-1000 items) so latency
stays bounded.`,
		Before: `for _, p := range points { http.Post(url, "text/plain", strings.NewReader(p)) }   // one point per request`,
		After:  `http.Post(url, "text/plain", strings.NewReader(strings.Join(points, "\n")))       // 1000 per request`,
		Caveats: `The gain assumes the clients can wait to fill a batch; a batch that waits adds
its wait to each item's latency. The estimate is a floor: the handler's own
per-request code is counted as work on the item, and the clients' per-request
cost, which falls too, is not counted.`,
		Since: "0.2",
		Refs: []string{
			"https://redis.io/docs/latest/develop/use/pipelining/",
			"https://docs.victoriametrics.com/#how-to-import-time-series-data",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.System, rules.Perf},
	Facts: []facts.Key{facts.CPUStacks, facts.WorkDone, facts.KernelFrames, facts.SystemFrames},
	Check: check,
}

// syncWaitFrames are a storage sync as the kernel and libc name it.
var syncWaitFrames = evidence.Any(frames.KernelStorage, exactName("fsync", "fdatasync", "__libc_fsync", "__libc_fdatasync", "sync_file_range"))

// waitsOnSyncs reports whether the process's threads spent more time off
// the CPU waiting in storage syncs than on it (perf's scheduler events):
// then each request waits for its disk (sync-disk-write, DISK001), and its
// fixed CPU is not what bounds the throughput. Redis with appendfsync
// always: 81% of its CPU per-request work, at 0.29 cores, while every SET
// waits for its own fdatasync.
func waitsOnSyncs(ev *evidence.Evidence, cores float64) bool {
	p := ev.Profiles[evidence.OffCPU]
	if p == nil || p.DurationNanos <= 0 || len(p.SampleType) == 0 {
		return false
	}
	st := evidence.NewStacks(p, "offcpu") // nanoseconds off the CPU
	waited := st.ShareWhere(st.Has(syncWaitFrames)) * float64(st.Total) / float64(p.DurationNanos)
	return waited > 0 && waited >= cores
}

const (
	// minFixed is the fixed share from which one item per request is the
	// problem (Doc.Evidence: the bad services measured 0.53-0.86, batched
	// 0.06-0.26, pipelined 0.36-0.40).
	minFixed = 0.50
	// minWritesPerUnit: a unit answered by its own write.
	minWritesPerUnit = 0.5
	// maxItemBody is the largest request body taken as one small item.
	maxItemBody = 4096
	// minConnsPerUnit is a connection opened per request (keep-alive off),
	// and minAcceptShare the CPU the process must be seen accepting them
	// with: the TCP counters are the host's, and another process's
	// connections must not pass for the target's (Tomcat accepting one per
	// request spent 7.5% in accept; a Go service on keep-alive connections,
	// with the host opening 1.1 per request elsewhere, 0).
	minConnsPerUnit = 0.5
	minAcceptShare  = 0.01
	// maxItemNsPerByte bounds the work on one item by its size, for the top
	// of the stated range: what the rest of the CPU per unit is when the
	// item costs at most this per byte (Doc.Evidence).
	maxItemNsPerByte = 50
	// The batch sizes the gain is stated for: Impact at typical, the range
	// from few to many items per request.
	batchLow, batchTypical, batchHigh = 10, 100, 1000
)

// Families of fixed per-request work.
var (
	// goServer is the Go HTTP and RPC servers' own per-request machinery
	// and the network I/O under it.
	goServer = evidence.FuncPrefix(
		"net/http.(*conn).", "net/http.(*connReader).", "net/http.(*response).", "net/http.(*chunkWriter).",
		"net/http.readRequest", "net/http.(*Request).", "net/http.Header.", "net/http.(*body).", "net/http.(*expectContinueReader)",
		"net/http.checkConnErrorWriter", "net/http.(*Server).Serve", "net/http.(*http2", "net/http.http2",
		"net/http.serverHandler.ServeHTTP", "net/http.(*ServeMux).", "net/http.newBufioReader", "net/http.newBufioWriterSize",
		"net/http.putBufio", "net/http.(*Server).", "net/http.(*onceCloseListener)",
		"net/textproto.", "golang.org/x/net/http2.", "github.com/valyala/fasthttp.", "google.golang.org/grpc/internal/transport.",
		"net.(*conn).Read", "net.(*conn).Write", "net.(*netFD).", "net.(*TCPListener).", "net.(*TCPConn).",
		"internal/poll.", "syscall.", "golang.org/x/sys/unix.",
	)
	// goWakeups is the runtime's work of parking and waking the goroutines
	// that serve each request: the network poller and the scheduler.
	goWakeups = evidence.Any(frames.SchedulerFrames, evidence.FuncPrefix(
		"runtime.netpoll", "runtime.park_m", "runtime.goready", "runtime.ready", "runtime.notewakeup", "runtime.futexwakeup",
		"runtime.mPark", "runtime.stopm", "runtime.futexsleep", "runtime.notesleep", "runtime.notetsleep", "runtime.gopark",
		"runtime.mcall", "runtime.goschedImpl", "runtime.resetspinning", "runtime.injectglist", "runtime.netpollready",
		"runtime.execute", "runtime.casgstatus", "runtime.selectgo",
	))
	// jvmServer is the JVM servers' per-request machinery: connectors,
	// parsers, response writers, socket I/O.
	jvmServer = evidence.FuncPrefix(
		"org.apache.coyote.", "org.apache.tomcat.util.net.", "org.apache.tomcat.util.http.", "org.apache.tomcat.util.buf.",
		"org.apache.catalina.connector.", "org.eclipse.jetty.server.HttpChannel", "org.eclipse.jetty.server.HttpConnection",
		"org.eclipse.jetty.server.HttpOutput", "org.eclipse.jetty.server.HttpInput", "org.eclipse.jetty.server.Response",
		"org.eclipse.jetty.server.Request", "org.eclipse.jetty.http.", "org.eclipse.jetty.io.", "org.eclipse.jetty.util.thread.",
		"org.eclipse.jetty.server.AbstractConnector", "io.netty.", "io.undertow.server.", "org.xnio.", "reactor.netty.",
		"sun.nio.ch.", "java.net.Socket", "sun.net.", "java.nio.channels.",
	)
	// nativeServer is native servers' event loops and protocol I/O (not the
	// commands they run): redis, memcached, nginx.
	nativeServer = evidence.FuncPrefix(
		"readQueryFromClient", "processInputBuffer", "processMultibulkBuffer", "processInlineBuffer", "writeToClient",
		"_writeToClient", "handleClientsWithPendingWrites", "connSocketRead", "connSocketWrite", "connSocketEventHandler",
		"aeProcessEvents", "aeApiPoll", "beforeSleep", "resetClient", "freeClientArgv", "createClient", "freeClient",
		"acceptTcpHandler", "acceptCommonHandler",
		"drive_machine", "event_handler", "try_read_command", "transmit", "conn_set_state", "try_read_network",
		"ngx_http_wait_request_handler", "ngx_http_process_request_line", "ngx_http_process_request_headers",
		"ngx_http_parse_", "ngx_http_finalize_request", "ngx_http_close_request", "ngx_http_free_request",
		"ngx_http_set_keepalive", "ngx_epoll_process_events", "ngx_event_accept", "ngx_http_init_connection",
		"ngx_linux_sendfile_chain", "ngx_http_write_filter", "ngx_http_log_handler", "ngx_unix_recv",
	)
	// libcIO is libc's system call wrappers for socket I/O and polling.
	libcIO = evidence.Any(frames.SocketIO, evidence.FuncPrefix("__libc_read", "__libc_write", "__GI___libc_read",
		"__GI___libc_write", "__libc_writev", "__writev", "__GI___writev"), exactName("read", "write", "writev", "readv", "close",
		"__close", "__libc_close", "syscall"))
	fixedFrames = evidence.Any(goServer, goWakeups, jvmServer, nativeServer, libcIO)

	// dialling and accepting tell whose connections are opened per
	// request: the clients' (keep-alive off, this rule) or the service's
	// own to a backend (connection-churn, NET001).
	dialling = evidence.FuncPrefix("net.(*Dialer).", "net.(*sysDialer).", "net.Dial", "tcp_v4_connect", "tcp_v6_connect",
		"__sys_connect", "__x64_sys_connect", "__arm64_sys_connect", "inet_stream_connect", "java.net.Socket.connect",
		"sun.nio.ch.Net.connect", "sun.nio.ch.SocketChannelImpl.connect", "sun.nio.ch.NioSocketImpl.connect")
	accepting = evidence.FuncPrefix("net.(*TCPListener).Accept", "net.(*TCPListener).accept", "net.(*netFD).accept",
		"inet_csk_accept", "__sys_accept", "__x64_sys_accept", "__arm64_sys_accept", "do_accept", "sun.nio.ch.ServerSocketChannelImpl.accept",
		"sun.nio.ch.Net.accept", "org.apache.tomcat.util.net.Acceptor", "ngx_event_accept", "acceptTcpHandler")
)

func exactName(names ...string) evidence.Matcher {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(fn string) bool { return set[fn] }
}

// split is one profile's CPU divided by who pays for it (shares).
type split struct{ fixed, item, gc float64 }

// share is the fixed share, low (the fixed samples alone) and high (with
// the collector's work in proportion, or what is left of the CPU per unit
// once the item is given its size's worth of work, whichever is more).
func (s split) share(w facts.Work, bodyBytes int) (low, high float64) {
	low = s.fixed
	if rest := s.fixed + s.item; rest > 0 {
		high = low + s.gc*s.fixed/rest
	}
	// The item is the request's body where the load says (HTTP), else what
	// a unit reads and writes (a command and its reply).
	moved := float64(bodyBytes)
	if moved <= 0 {
		moved = w.BytesInPerUnit + w.BytesOutPerUnit
	}
	if w.CPUPerUnit > 0 && moved > 0 {
		high = max(high, min(1-moved*maxItemNsPerByte/float64(w.CPUPerUnit.Nanoseconds()), 0.999))
	}
	// The handler's own code is counted as work on the item, but much of
	// it may run once per request: at most all of it is fixed (redis's
	// command dispatch and reply set-up around a GET's lookup: 13% of the
	// CPU as the handler's, where MGET of ten keys measured 7.3x, an item
	// share near 4%). The collector's work then goes with it, in proportion
	// to the fixed work as above, now all of it: the garbage of a request
	// carrying one item is the request's (the Go ingest service's GC was
	// 3.1 µs per request one sample per POST, 17 ns per sample a thousand
	// per POST; VictoriaMetrics' 1.3 µs and 9 ns).
	high = max(high, min(s.fixed+s.item+s.gc, 0.999))
	return low, max(low, high)
}

// kind is who pays for a CPU sample.
type kind int

const (
	other     kind = iota
	fixed          // per-request machinery, I/O, kernel network work, wake-ups
	item           // the handler's own work
	collector      // the collector's work
)

// classifier sorts the CPU profile's samples: the handler's own work is a
// sample in the program's code (not the server framework's) whose frames
// leafward of it are not I/O or the kernel's; fixed work is one in I/O or
// the kernel under the program, or else anywhere in the fixed families.
func classifier(pass *rules.Pass) func(evidence.Sample) kind {
	st := facts.Get(pass.Facts, facts.CPUStacks)
	kernel := st.FrameHits(facts.Get(pass.Facts, facts.KernelFrames))
	system := st.FrameHits(facts.Get(pass.Facts, facts.SystemFrames))
	fixedHit := st.FrameHits(fixedFrames)
	storage := st.FrameHits(frames.KernelStorage)
	gcHit := st.FrameHits(frames.GCFrames)
	appHit := st.FrameHits(func(fn string) bool {
		return rules.IsApplication(fn) && !fixedFrames(fn) && !strings.HasPrefix(fn, "[unknown]")
	})
	return func(s evidence.Sample) kind {
		for _, id := range s.Frames {
			switch {
			case storage[id]:
				return other // disk, not network
			case appHit[id] && !system[id] && !kernel[id]:
				return item
			case fixedHit[id] || kernel[id]:
				return fixed
			}
		}
		switch {
		case hasAny(s, gcHit):
			return collector
		case hasAny(s, fixedHit):
			return fixed
		}
		return other
	}
}

func measure(pass *rules.Pass, classify func(evidence.Sample) kind) split {
	st := facts.Get(pass.Facts, facts.CPUStacks)
	var sp split
	if st == nil || st.Total == 0 {
		return sp
	}
	for _, s := range st.Samples {
		v := float64(s.Value) / float64(st.Total)
		switch classify(s) {
		case fixed:
			sp.fixed += v
		case item:
			sp.item += v
		case collector:
			sp.gc += v
		}
	}
	return sp
}

func hasAny(s evidence.Sample, hit []bool) bool {
	for _, id := range s.Frames {
		if hit[id] {
			return true
		}
	}
	return false
}

// protocol is what the load says a request is and how its protocol
// batches, or ok false when it is not one this rule prescribes for.
type protocol struct {
	name, fix, example string
	keepAlive          bool
}

func detect(ev *evidence.Evidence, w facts.Work, comm string, accepts bool) (protocol, bool) {
	l := ev.Load
	if l == nil {
		return protocol{}, false
	}
	if l.Command == "" && (strings.HasPrefix(l.URL, "http://") || strings.HasPrefix(l.URL, "https://")) {
		method := strings.ToUpper(l.Method)
		if method == "" {
			method = "GET"
		}
		if w.HasConns && w.NewConnsPerUnit >= minConnsPerUnit && accepts {
			return protocol{name: "HTTP " + method + " with a connection per request", keepAlive: true,
				fix: fmt.Sprintf("Keep connections alive: %.2f TCP connections are opened per request, so each pays a handshake, an accept and a teardown. "+
					"Turn keep-alive back on in the server (Tomcat maxKeepAliveRequests 100 or -1, nginx keepalive_requests, "+
					"Go's Server.SetKeepAlivesEnabled(true)) and in the clients (reuse one HTTP client; no Connection: close).", w.NewConnsPerUnit),
				example: `<Connector port="8080" maxKeepAliveRequests="100" .../>   <!-- not 1 -->`}, true
		}
		if (method == "POST" || method == "PUT" || method == "PATCH") && l.BodyBytes > 0 && l.BodyBytes <= maxItemBody {
			p := protocol{name: fmt.Sprintf("HTTP %s of %s", method, human.Bytes(uint64(l.BodyBytes))),
				fix: "Send many items per request: batch on the client (100-1000 items, or what arrives in 10-100 ms) and POST them together " +
					"to the API's batch form; if the service has none, add one that takes a list.",
				example: `http.Post(url, "text/plain", strings.NewReader(strings.Join(items, "\n")))   // 1000 items per request`}
			if api := ingestAPI(l.URL); api != "" {
				p.fix = "Send many items per request: " + api + " Batch on the client (100-1000 items, or what arrives in 10-100 ms)."
			}
			return p, true
		}
		return protocol{}, false // reads one per request, or the service's own dialling
	}
	cmd := strings.ToLower(l.Command)
	switch {
	case strings.Contains(cmd, "redis-benchmark") || strings.Contains(cmd, "redis-cli") || comm == "redis-server" || comm == "valkey-server":
		return protocol{name: "redis, one command per round trip",
			fix: "Fetch many keys per round trip: MGET (MSET for writes) of the keys a page or a job needs, or pipeline the commands " +
				"(the client sends them all, then reads all the replies): one read, one dispatch and one write per batch instead of per key.",
			example: "MGET key:1 key:2 key:3 ... key:10   # instead of ten GETs"}, true
	case strings.Contains(cmd, "memtier") || strings.Contains(cmd, "memaslap") || comm == "memcached":
		return protocol{name: "memcached, one key per request",
			fix:     "Fetch many keys per request: memcached's multi-key get (get k1 k2 k3 ...; getMulti in most clients) or a pipelined client.",
			example: "get key:1 key:2 key:3 ... key:10"}, true
	case strings.Contains(cmd, "kafka-producer-perf-test") || strings.Contains(cmd, "kafka-console-producer"):
		return protocol{name: "Kafka, one record per produce request",
			fix:     "Let the producer batch: linger.ms 5-50 and batch.size 64-256 KiB (and compression), so one produce request carries many records.",
			example: "linger.ms=20\nbatch.size=131072"}, true
	}
	return protocol{}, false
}

// ingestAPI names the batch form of a known ingest endpoint.
func ingestAPI(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	switch p := u.Path; {
	case p == "/write" || p == "/api/v2/write" || strings.HasSuffix(p, "/influx/write"):
		return "InfluxDB line protocol takes any number of lines per POST (VictoriaMetrics and InfluxDB alike): send 1000-10000 points per request."
	case strings.HasSuffix(p, "/api/v1/import") || strings.Contains(p, "/api/v1/import/"):
		return "VictoriaMetrics' import API takes any number of lines per POST: send thousands of samples per request."
	case strings.HasSuffix(p, "/api/v1/write") || strings.HasSuffix(p, "/api/v1/push") || strings.HasSuffix(p, "/receive"):
		return "remote write (Prometheus, VictoriaMetrics, Mimir, Loki's push) carries many series and samples per request: queue on the client and send them together (max_samples_per_send 2000 and more)."
	case strings.HasSuffix(p, "/_bulk") || strings.HasSuffix(p, "/_doc") || strings.Contains(p, "/_doc/"):
		return "Elasticsearch and OpenSearch take documents in bulk: POST them to _bulk, 1000-5000 per request."
	}
	return ""
}

// removed is the share of CPU that B items per request remove when f of
// it is fixed per request: 1/(1 − removed) is 1/((1 − f) + f/B).
func removed(f float64, b float64) float64 { return f * (1 - 1/b) }

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	if pass.Evidence.Load == nil || pass.Evidence.Load.Throughput <= 0 {
		pass.Skip("no load results: the unit of work and how many were served are unknown (perfdoctor run)")
		return nil
	}
	w := facts.Get(pass.Facts, facts.WorkDone)
	var comm string
	if d, ok := pass.Evidence.SystemDelta(); ok && d.End.Process != nil {
		comm = d.End.Process.Comm
	}
	st := facts.Get(pass.Facts, facts.CPUStacks)
	// The TCP opens are the host's: the process must be seen accepting
	// them, more than dialling its own.
	accept := st.Share(accepting)
	proto, ok := detect(pass.Evidence, w, comm, accept >= minAcceptShare && accept > st.Share(dialling))
	if !ok || waitsOnSyncs(pass.Evidence, w.Cores) {
		return nil
	}
	// Pipelined or batched already: far fewer answers than units (a lower
	// bound, some of the tree's counters unread, cannot say so; nor can a
	// server seen answering through send() more than through write(), which
	// the counters do not see).
	blind := st.Share(frames.SocketSend) > st.Share(frames.SocketWriteCall)
	if w.WritesPerUnit > 0 && w.WritesPerUnit < minWritesPerUnit && !w.IOLowerBound && !blind {
		return nil
	}
	classify := classifier(pass)
	sp := measure(pass, classify)
	low, high := sp.share(w, pass.Evidence.Load.BodyBytes)
	if low < minFixed {
		return nil
	}
	impact := removed(low, batchTypical)
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		ImpactRange: &[2]float64{removed(low, batchLow), removed(high, batchHigh)},
		// The collector's share is in the top of the range already.
		OverheadCounted: true,
		Resource:        "cpu",
		ImpactBasis: fmt.Sprintf("fixed per-request share f of CPU amortised over B items per request: f(1 − 1/B), the throughput 1/((1 − f) + f/B) times; f %s from the profile (at most %s: with the collector's share, or the CPU per unit beyond %d ns per byte of the item), B %d (range %d-%d)",
			human.Percent(low), human.Percent(high), maxItemNsPerByte, batchTypical, batchLow, batchHigh),
		Summary: fmt.Sprintf("Requests too small (%s): %s of CPU is the fixed cost of each request, %s the work on its item", proto.name,
			human.Percent(low), human.Percent(sp.item)),
		Evidence: []rules.Fact{
			rules.Share("fixed per-request share of CPU", low),
			rules.Share("the handler's own work", sp.item),
			rules.Text("protocol", proto.name),
		},
		Fix:     proto.fix,
		Example: proto.example,
		Caveats: []string{pass.Rule.Doc.Caveats},
		Frames:  st.Matched(fixedFrames, 12),
	}
	if sp.gc > 0 {
		f.Evidence = append(f.Evidence, rules.Share("garbage collection", sp.gc))
	}
	if s := w.Summary(); s != "" {
		f.Evidence = append(f.Evidence, rules.Text("work per unit", s))
		f.Summary += "; " + s
	}
	if w.WritesPerUnit > 0 {
		name := "write system calls per " + w.Unit
		if blind {
			name += " (the replies go through send(), which /proc/PID/io does not count)"
		}
		f.Evidence = append(f.Evidence, rules.Count(name, w.WritesPerUnit, ""))
	}
	if b := pass.Evidence.Load.BodyBytes; b > 0 {
		f.Evidence = append(f.Evidence, rules.Bytes("request body", uint64(b)))
	}
	times := 1 / (1 - impact)
	f.Fix += fmt.Sprintf(" At %d items per request the fixed part is paid once per %d: about %.1fx the items per core (%.1fx-%.1fx for %d-%d).",
		batchTypical, batchTypical, times, 1/(1-removed(low, batchLow)), 1/(1-removed(high, batchHigh)), batchLow, batchHigh)
	if proto.keepAlive {
		f.Summary = fmt.Sprintf("A connection per request (%s): %s of CPU is the fixed cost of each request and its connection, %s the work on it",
			proto.name, human.Percent(low), human.Percent(sp.item))
		// Keep-alive removes what each connection drags besides its frames
		// (rules.WithConnectionDrag: six measured interventions).
		rules.WithConnectionDrag(&f, f.ImpactRange[0], impact, f.ImpactRange[1])
		f.ImpactBasis += "; with what each connection drags outside the profile's frames (the handshake's soft interrupts, event-loop registration): 1.5x, 1.0-1.75x, as measured on six interventions"
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: func(s evidence.Sample) bool { return classify(s) == fixed }, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}
