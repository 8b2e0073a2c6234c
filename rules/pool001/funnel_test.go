package pool001_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

const pgbouncer = "../../corpus/native-pgbouncer-pool-size-1/bad"

// PgBouncer with default_pool_size 1 under pgbench's 16 clients: the load
// measures no latency and PgBouncer queues the clients in its own memory
// (its accept queue is empty), yet its sockets show the funnel, 16 clients
// on its listener over 1 connection to PostgreSQL: 94% of their time
// waiting, the pool's setting named.
func TestFunnelFires(t *testing.T) {
	res := ruletest.Expect(t, pgbouncer, catalog.All(),
		`top POOL001 high "PgBouncer's server connection pool" "1 connection" "16 in flight" "1 served at once" "default_pool_size"`)
	if len(res.Findings) == 0 {
		return
	}
	f := res.Findings[0]
	if !strings.Contains(f.Example, "default_pool_size = 1\n->\ndefault_pool_size = 16") {
		t.Errorf("example %q", f.Example)
	}
	// The bundle holds PgBouncer's ini file: the line that sets the pool
	// is named with its file.
	if !strings.Contains(f.Summary, "set by default_pool_size = 1 in /tmp/perfdoctor-corpus/native-pgbouncer-pool-size-1/bouncer/bad.ini") ||
		!strings.Contains(f.Fix, "bad.ini, [pgbouncer], line 12: default_pool_size = 1)") {
		t.Errorf("summary %q, fix %q", f.Summary, f.Fix)
	}
	if r := f.ImpactRange; r == nil || 1/(1-r[0]) < 15.9 || 1/(1-r[0]) > 16.1 {
		t.Errorf("range %v, want 16x (16 clients over 1 connection)", r)
	}
}

// funnelEv is the PgBouncer bundle with its snapshots changed by edit.
func funnelEv(t *testing.T, edit func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult)) *evidence.Evidence {
	t.Helper()
	ev, _ := ruletest.Diagnose(t, pgbouncer, nil)
	start, end := cloneSnap(ev.SystemStart), cloneSnap(ev.SystemEnd)
	load := *ev.Load
	edit(start, end, &load)
	return ev.Derive().System(start, end).Load(&load).Evidence()
}

func cloneSnap(s *bundle.SystemSnapshot) *bundle.SystemSnapshot {
	c := *s
	n := *s.Net
	n.Remotes = nil
	for _, r := range s.Net.Remotes {
		states := map[string]int{}
		for k, v := range r.States {
			states[k] = v
		}
		r.States = states
		n.Remotes = append(n.Remotes, r)
	}
	n.Listeners = append([]bundle.Listener(nil), s.Net.Listeners...)
	c.Net = &n
	return &c
}

// funnelAddrs are the PgBouncer bundle's listener (the one it holds) and
// upstream (the endpoint it holds established connections to that is not
// its listener), as recorded.
func funnelAddrs(t *testing.T) (listener, upstream string) {
	t.Helper()
	ev, _ := ruletest.Diagnose(t, pgbouncer, nil)
	for _, l := range ev.SystemEnd.Net.Listeners {
		if l.Process {
			listener = l.Addr
		}
	}
	for _, r := range ev.SystemEnd.Net.Remotes {
		if r.Process > 0 && r.States["ESTABLISHED"] > 0 && r.Addr != listener {
			upstream = r.Addr
		}
	}
	if upstream == "" {
		t.Fatal("no upstream in the PgBouncer bundle")
	}
	return listener, upstream
}

// remote is the endpoint addr in s.
func remote(s *bundle.SystemSnapshot, addr string) *bundle.RemoteEndpoint {
	for i := range s.Net.Remotes {
		if s.Net.Remotes[i].Addr == addr {
			return &s.Net.Remotes[i]
		}
	}
	panic("no remote " + addr)
}

// The funnel stays silent where its clients are not shown active, its
// upstream is not a pool, or the process computes.
func TestFunnelSilent(t *testing.T) {
	listener, upstream := funnelAddrs(t)
	for name, edit := range map[string]func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult){
		// A healthy proxy's idle keep-alive clients: held before the load
		// began as at its end, the load's own work elsewhere.
		"idle keep-alive clients": func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {
			remote(start, listener).States["ESTABLISHED"] = 16
		},
		// The load had finished before the window's end: the clients
		// left are not its requests.
		"load finished": func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {
			load.DurationMS = 10000
		},
		// A connection per request to the upstream (Caddy's keep-alive
		// off: 345 closed in 5 s for 11 held), not a pool.
		"upstream dialled per request": func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {
			remote(end, upstream).RecentTimeWait = 345
		},
		// As many upstream connections as clients: nothing waits.
		"no funnel": func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {
			u := remote(end, upstream)
			u.Process, u.States["ESTABLISHED"] = 16, 16
		},
		// The listener is another process's.
		"someone else's listener": func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {
			for i := range end.Net.Listeners {
				end.Net.Listeners[i].Process = false
			}
		},
		// The process on most of its cores: the CPUs, not the pool.
		"CPU-bound": func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {
			p := *end.Process
			p.UserCPUSeconds = start.Process.UserCPUSeconds + 1.5*end.Time.Sub(start.Time).Seconds()
			end.Process = &p
		},
	} {
		t.Run(name, func(t *testing.T) {
			if fs := run(funnelEv(t, edit)); len(fs) != 0 {
				t.Errorf("%s: %s", fs[0].Severity, fs[0].Summary)
			}
		})
	}
	// The base fires, so each case above is silent by its one change.
	if fs := run(funnelEv(t, func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {})); len(fs) != 1 {
		t.Fatalf("the unchanged bundle: %+v", fs)
	}
}

// asCommand is the bundle at dir as a collector marking the load's
// listener as the process's would record it, with the load's latencies
// taken away (as a command load's).
func asCommand(t *testing.T, dir string) *evidence.Evidence {
	t.Helper()
	ev, _ := ruletest.Diagnose(t, dir, nil)
	start, end := cloneSnap(ev.SystemStart), cloneSnap(ev.SystemEnd)
	for _, s := range []*bundle.SystemSnapshot{start, end} {
		s.Net.ProcessSockets = true
		s.Net.Listeners = append(s.Net.Listeners, bundle.Listener{Addr: "127.0.0.1:" + port(ev.Load.URL), Process: true})
	}
	load := *ev.Load
	load.Table, load.Service, load.Latency = nil, bundle.LoadPercentiles{}, bundle.LoadPercentiles{}
	return ev.Derive().System(start, end).Load(&load).Evidence()
}

// The funnel agrees with the load's latencies where both read: HikariCP
// with 1 connection under 32 clients reads 97% either way; Tomcat's 2
// threads in front of HikariCP's 10 connections keep it silent (the
// connections are not all busy), where the load reads the threads.
func TestFunnelAgreesWithTheLoad(t *testing.T) {
	fs := run(asCommand(t, "../../corpus/jvm-springboot-hikari-pool-1/bad"))
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "Requests wait 97% of their time for HikariCP's connection pool: 1 connection") {
		t.Errorf("HikariCP with 1 connection: %+v", fs)
	}
	if fs := run(asCommand(t, "../../corpus/jvm-springboot-tomcat-threads-2/bad")); len(fs) != 0 {
		t.Errorf("Tomcat's 2 threads: %s", fs[0].Summary)
	}
}

// A proxy dialling its upstream per request (Caddy with keep-alive off,
// 16 closed-loop clients) with its listener marked as its own and its
// load's latencies taken away: 2 of its 11 sockets to the upstream are
// established, the rest closing, and 345 closed in the last 5 s: not a
// pool, and no funnel reads.
func TestFunnelSilentOnAProxy(t *testing.T) {
	if fs := run(asCommand(t, "../../corpus/go-caddy-proxy-keepalive-off/bad")); len(fs) != 0 {
		t.Errorf("%s: %s", fs[0].Severity, fs[0].Summary)
	}
}

func port(url string) string {
	host := strings.SplitN(strings.SplitN(url, "://", 2)[1], "/", 2)[0]
	return host[strings.LastIndexByte(host, ':')+1:]
}

// withIni is the PgBouncer bundle with its ini file saying
// default_pool_size = size and its upstream connections set to conns.
func withIni(t *testing.T, size string, conns int) *evidence.Evidence {
	t.Helper()
	_, upstream := funnelAddrs(t)
	ev := funnelEv(t, func(start, end *bundle.SystemSnapshot, load *bundle.LoadResult) {
		u := remote(end, upstream)
		u.Process, u.States["ESTABLISHED"] = conns, conns
	})
	files := &bundle.ConfigFiles{Program: "pgbouncer", Files: []bundle.ConfigFile{{Path: "/etc/pgbouncer/pgbouncer.ini", Named: "argument", Format: "ini",
		Content: "[databases]\npostgres = host=127.0.0.1 dbname=postgres\n[pgbouncer]\npool_mode = transaction\ndefault_pool_size = " + size + "\n"}}}
	return ev.Derive().ConfigFiles(files).Evidence()
}

// The file's setting is stated only where it is the size seen: a pool as
// large as the clients stays silent, and a file whose value the sockets
// contradict (a [databases] entry's pool_size, a reload since) is shown
// beside the reading, not as its cause.
func TestFunnelReadsTheIniFile(t *testing.T) {
	if fs := run(withIni(t, "16", 16)); len(fs) != 0 {
		t.Errorf("default_pool_size = 16 for 16 clients: %s", fs[0].Summary)
	}
	fs := run(withIni(t, "20", 1))
	if len(fs) != 1 {
		t.Fatalf("default_pool_size = 20 with 1 connection seen: %+v", fs)
	}
	if strings.Contains(fs[0].Summary, "set by") || !strings.Contains(fmt.Sprint(fs[0].Evidence), "/etc/pgbouncer/pgbouncer.ini, [pgbouncer], line 5") {
		t.Errorf("summary %q, evidence %v", fs[0].Summary, fs[0].Evidence)
	}
	fs = run(withIni(t, "1", 1))
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "set by default_pool_size = 1 in /etc/pgbouncer/pgbouncer.ini") {
		t.Errorf("default_pool_size = 1: %+v", fs)
	}
}
