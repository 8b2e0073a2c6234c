package net007

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// A handler doing little per item under net/http's per-request machinery.
var ingestProfile = []testprof.Stack{
	{Value: 300, Funcs: []string{"syscall.Syscall", "internal/poll.(*FD).Write", "net.(*conn).Write", "net/http.checkConnErrorWriter.Write", "bufio.(*Writer).Flush", "net/http.(*response).finishRequest", "net/http.(*conn).serve"}},
	{Value: 200, Funcs: []string{"syscall.Syscall", "internal/poll.(*FD).Read", "net.(*conn).Read", "net/http.(*connReader).Read", "bufio.(*Reader).fill", "net/http.readRequest", "net/http.(*conn).readRequest", "net/http.(*conn).serve"}},
	{Value: 150, Funcs: []string{"net/textproto.(*Reader).ReadMIMEHeader", "net/http.readRequest", "net/http.(*conn).readRequest", "net/http.(*conn).serve"}},
	{Value: 100, Funcs: []string{"runtime.netpoll", "runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall"}},
	{Value: 50, Funcs: []string{"syscall.Syscall", "internal/poll.(*FD).Read", "net/http.(*body).Read", "bufio.(*Scanner).Scan", "main.(*store).ingest", "net/http.HandlerFunc.ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}},
	{Value: 150, Funcs: []string{"strconv.ParseFloat", "main.(*store).ingest", "net/http.HandlerFunc.ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}},
	{Value: 50, Funcs: []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}},
}

func runWith(load *bundle.LoadResult, stacks []testprof.Stack) rules.Result {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(stacks...)})
	ev.Load = load
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func TestIngestOfTinyPostsFires(t *testing.T) {
	res := runWith(&bundle.LoadResult{URL: "http://127.0.0.1:8428/write", Method: "POST", BodyBytes: 130, Throughput: 20000}, ingestProfile)
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding: %+v", res)
	}
	f := res.Findings[0]
	// 800 of 1000 samples fixed (the body read under the handler included),
	// 150 the handler's own; the collector's 50 adds 50*800/950 at most.
	if f.Evidence[0].Num < 0.79 || f.Evidence[0].Num > 0.81 || !strings.Contains(f.Fix, "line protocol") {
		t.Errorf("fixed %.3f, fix %q", f.Evidence[0].Num, f.Fix)
	}
	if want := 0.8 * (1 - 1.0/100); f.Impact < want-0.001 || f.Impact > want+0.001 || f.Severity != rules.High {
		t.Errorf("impact %.3f %s, want %.3f high", f.Impact, f.Severity, want)
	}
	// The top of the range holds at least the collector's share in
	// proportion (the size bound may raise it further).
	if hi := (0.8 + 0.05*0.8/0.95) * (1 - 1.0/1000); f.ImpactRange[1] < hi-0.001 || f.ImpactRange[0] > f.Impact {
		t.Errorf("range %v, want the collector's share in its top (%.3f) and the impact above its floor", f.ImpactRange, hi)
	}
}

// Reads answered one per request are what a server is for: a GET, or a
// POST carrying a large body, or a command load perfdoctor knows no batch
// form of.
func TestReadsAndLargeBodiesStayQuiet(t *testing.T) {
	for name, load := range map[string]*bundle.LoadResult{
		"GET":           {URL: "http://127.0.0.1:8080/style.css", Method: "GET", Throughput: 9000},
		"no method":     {URL: "http://127.0.0.1:8080/", Throughput: 9000},
		"large POST":    {URL: "http://127.0.0.1:8428/write", Method: "POST", BodyBytes: 130_000, Throughput: 90},
		"pgbench":       {URL: "tcp://127.0.0.1:5432", Command: "pgbench -S -c 8 -T 10", Unit: "transaction", Throughput: 9000},
		"zookeeper get": {URL: "tcp://127.0.0.1:2181", Command: "zk-get --clients 32", Unit: "getData", Throughput: 9000},
		"udp":           {URL: "udp://127.0.0.1:53", BodyBytes: 40, Throughput: 9000},
	} {
		if res := runWith(load, ingestProfile); len(res.Findings) != 0 {
			t.Errorf("%s: reported %s", name, res.Findings[0].Summary)
		}
	}
}

// Redis through perf: kernel and libc I/O under the event loop, the command
// itself small.
func TestRedisGetPerKeyFires(t *testing.T) {
	stacks := []testprof.Stack{
		{Value: 500, Funcs: []string{"tcp_sendmsg", "sock_write_iter", "vfs_write", "ksys_write", "__x64_sys_write", "do_syscall_64", "entry_SYSCALL_64_after_hwframe", "__libc_write", "connSocketWrite", "_writeToClient", "writeToClient", "handleClientsWithPendingWrites", "beforeSleep", "aeProcessEvents", "aeMain", "main"}},
		{Value: 200, Funcs: []string{"tcp_recvmsg", "sock_read_iter", "vfs_read", "ksys_read", "__libc_read", "connSocketRead", "readQueryFromClient", "aeProcessEvents", "aeMain", "main"}},
		{Value: 100, Funcs: []string{"ep_poll", "do_epoll_wait", "epoll_wait", "aeApiPoll", "aeProcessEvents", "aeMain", "main"}},
		{Value: 150, Funcs: []string{"dictFind", "lookupKey", "getGenericCommand", "call", "processCommand", "processInputBuffer", "readQueryFromClient", "aeProcessEvents", "aeMain", "main"}},
		{Value: 50, Funcs: []string{"_addReplyToBufferOrList", "addReplyBulk", "getGenericCommand", "call", "processCommand", "processInputBuffer", "readQueryFromClient", "aeProcessEvents", "aeMain", "main"}},
	}
	// testprof's profiles carry no mappings: the kernel frames are known by
	// the families (tcp_, sock_, ep_poll, libc's wrappers).
	load := &bundle.LoadResult{URL: "tcp://127.0.0.1:6379", Command: "redis-benchmark -h {host} -p {port} -c 32 -n 100000 -q GET key:__rand_int__", Unit: "key", Throughput: 60000}
	res := runWith(load, stacks)
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding: %+v", res)
	}
	if f := res.Findings[0]; !strings.Contains(f.Fix, "MGET") || !strings.Contains(f.Summary, "redis") {
		t.Errorf("%s\n%s", f.Summary, f.Fix)
	}
}

// A Spring controller on Tomcat taking one event per POST, as
// async-profiler shows it: the connector, the parser and the socket
// writes around a small controller.
func TestJVMIngestFires(t *testing.T) {
	tomcat := []string{"org.apache.coyote.http11.Http11Processor.service", "org.apache.coyote.AbstractProcessorLight.process",
		"org.apache.tomcat.util.net.NioEndpoint$SocketProcessor.doRun", "java.lang.Thread.run"}
	controller := append([]string{"org.springframework.web.servlet.DispatcherServlet.doDispatch", "org.apache.catalina.core.StandardWrapperValve.invoke",
		"org.apache.catalina.connector.CoyoteAdapter.service"}, tomcat...)
	stacks := []testprof.Stack{
		{Value: 400, Funcs: append([]string{"tcp_sendmsg", "sun.nio.ch.SocketDispatcher.write", "sun.nio.ch.SocketChannelImpl.write", "org.apache.tomcat.util.net.NioChannel.write", "org.apache.catalina.connector.OutputBuffer.close"}, tomcat...)},
		{Value: 250, Funcs: append([]string{"org.apache.coyote.http11.Http11InputBuffer.parseHeaders"}, tomcat...)},
		{Value: 150, Funcs: []string{"ep_poll", "sun.nio.ch.EPoll.wait", "sun.nio.ch.EPollSelectorImpl.doSelect", "org.apache.tomcat.util.net.NioEndpoint$Poller.run", "java.lang.Thread.run"}},
		{Value: 150, Funcs: append([]string{"java.util.concurrent.ConcurrentHashMap.merge", "com.example.ingest.EventController.ingest"}, controller...)},
		{Value: 50, Funcs: append([]string{"org.springframework.web.servlet.handler.AbstractHandlerMethodMapping.lookupHandlerMethod"}, controller...)},
	}
	res := runWith(&bundle.LoadResult{URL: "http://127.0.0.1:8080/events", Method: "POST", BodyBytes: 80, Throughput: 9000}, stacks)
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding: %+v", res)
	}
	// The handler mapping is Spring's per-request work: fixed only if named;
	// here it is outside the controller and in no fixed family.
	if got := res.Findings[0].Evidence[0].Num; got < 0.79 || got > 0.81 {
		t.Errorf("fixed share %.3f, want 0.80", got)
	}
}

// offCPU is a perf off-CPU profile of one thread over a second: waited
// nanoseconds in fdatasync, the rest in epoll_wait.
func offCPU(inSync, inPoll int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "offcpu", Unit: "nanoseconds"}, {Type: "switches", Unit: "count"}},
		DefaultSampleType: "switches", DurationNanos: 1e9}
	stack := func(names ...string) []*profile.Location {
		var locs []*profile.Location
		for _, n := range names {
			f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: n}
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Function, p.Location = append(p.Function, f), append(p.Location, l)
			locs = append(locs, l)
		}
		return locs
	}
	p.Sample = []*profile.Sample{
		{Value: []int64{inSync, 1000}, Location: stack("__schedule", "jbd2_log_wait_commit", "ext4_sync_file", "do_fsync", "__x64_sys_fdatasync", "fdatasync")},
		{Value: []int64{inPoll, 1000}, Location: stack("__schedule", "ep_poll", "do_epoll_wait", "epoll_wait")},
	}
	return p
}

// A server whose thread waits longer in syncs than it runs is bounded by
// its disk: not this rule's, however its CPU divides.
func TestWaitingOnSyncsIsNotSmallRequests(t *testing.T) {
	ev := &evidence.Evidence{Profiles: map[evidence.Kind]*profile.Profile{evidence.OffCPU: offCPU(700e6, 100e6)}}
	if !waitsOnSyncs(ev, 0.29) {
		t.Error("0.7 s of syncs a second against 0.29 cores: want the disk to bound it")
	}
	ev.Profiles[evidence.OffCPU] = offCPU(10e6, 300e6)
	if waitsOnSyncs(ev, 0.64) {
		t.Error("0.01 s of syncs a second against 0.64 cores: not bounded by the disk")
	}
}

// /proc/PID/io counts write() to a socket, not send(): 0.02 writes per key
// is a pipelined redis when its replies go through write(), and says
// nothing when they go through sendto() (a server replying with send(),
// its few writes a log's).
func TestFewWritesSilenceOnlyWhenTheCountersSeeTheReplies(t *testing.T) {
	reply := func(path ...string) []testprof.Stack {
		return []testprof.Stack{
			{Value: 500, Funcs: append(append([]string{"tcp_sendmsg"}, path...), "do_syscall_64", "entry_SYSCALL_64_after_hwframe", "connSocketWrite", "writeToClient", "beforeSleep", "aeProcessEvents", "aeMain", "main")},
			{Value: 200, Funcs: []string{"tcp_recvmsg", "sock_read_iter", "vfs_read", "ksys_read", "__libc_read", "connSocketRead", "readQueryFromClient", "aeProcessEvents", "aeMain", "main"}},
			{Value: 100, Funcs: []string{"ep_poll", "do_epoll_wait", "epoll_wait", "aeApiPoll", "aeProcessEvents", "aeMain", "main"}},
			{Value: 150, Funcs: []string{"dictFind", "lookupKey", "getGenericCommand", "call", "processCommand", "processInputBuffer", "readQueryFromClient", "aeProcessEvents", "aeMain", "main"}},
		}
	}
	io := func(writes uint64) *bundle.ProcessInfo {
		return &bundle.ProcessInfo{PID: 9, StartTime: 1, Comm: "redis-server", UserCPUSeconds: float64(writes) / 1e4, IO: &bundle.ProcessIO{WriteSyscalls: writes}}
	}
	for name, c := range map[string]struct {
		path []string
		want int
	}{
		"write()":  {[]string{"sock_write_iter", "vfs_write", "ksys_write", "__x64_sys_write", "__libc_write"}, 0},
		"sendto()": {[]string{"sock_sendmsg", "__sys_sendto", "__x64_sys_sendto", "__libc_send"}, 1},
	} {
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(reply(c.path...)...)})
		ev.Load = &bundle.LoadResult{URL: "tcp://127.0.0.1:6379", Command: "redis-benchmark -h {host} -p {port} -c 32 -n 100000 -q GET key:__rand_int__", Unit: "key", Throughput: 50000}
		start := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
		// 10 s at 50,000 keys a second with 10,000 writes: 0.02 per key.
		ev.SystemStart = &bundle.SystemSnapshot{Time: start, Process: io(0)}
		ev.SystemEnd = &bundle.SystemSnapshot{Time: start.Add(10 * time.Second), Process: io(10_000)}
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if len(res.Findings) != c.want {
			t.Errorf("replies through %s: %d findings, want %d (%v)", name, len(res.Findings), c.want, res.NotChecked)
		}
	}
}
