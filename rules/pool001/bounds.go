package pool001

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// bound is a bounded resource the evidence shows with its size: a group of
// worker threads, the connections the process holds to one peer, a
// setting on its command line. Requests queue for it when it is as large
// as the requests the service works on at once.
type bound struct {
	kind string // threads, connections, setting, goroutines
	// name is the resource as the finding names it: the thread pool's
	// name, the peer, the setting as written.
	name string
	size int
	// what is what it is, when known ("Tomcat's connector executor").
	what string
	// resize says how its size is set.
	resize string
	// cores is the CPU its threads used (thread groups).
	cores float64
	// unit names its slots when its kind does not: a native server's
	// threads are its workers and a few more (a listener, a main thread).
	unit string
	// def is the library's default size, when known: the size an operator
	// who set a smaller one most often goes back to.
	def int
	// addr is the peer a connections bound holds its sockets to; key the
	// configuration line that sizes it, when known (a pooler's).
	addr, key string
}

// matches reports whether b's size is what the service served at once:
// the slots of a saturated bound are all busy, so throughput × service
// time is its size; the fastest request is a lower bound on the mean
// service time, so the reading is at most the size, and at least half of
// it where holds vary (measured: 0.89-0.94 on the corpus's pools, 1.04-1.14
// on the Go and JVM services written for the rule, where a hand-off adds to
// the fastest request).
func (b bound) matches(inService float64) bool {
	if b.size <= 0 {
		return false
	}
	r := inService / float64(b.size)
	return r >= minMatch && r <= maxMatch
}

const (
	minMatch = 0.5
	maxMatch = 1.15
	// minGroupCPU is the part of the process's CPU a thread group must use
	// to be where requests run, not a housekeeping pool of the same size
	// (Tomcat's Catalina-utility: 1% of the JVM's CPU; its exec pool 30%).
	minGroupCPU = 0.10
)

// threadGroups are the JVM's groups of threads named alike, as bounds:
// any implementation, recognised by its threads' names and their CPU.
func threadGroups(s *jfr.Summary, processCores float64) []bound {
	if s == nil {
		return nil
	}
	cpus := float64(max(s.HWThreads, 1))
	var out []bound
	for _, p := range s.Threading.Pools {
		what, resize, _ := jvmthreads.PoolKind(p.Name)
		b := bound{kind: "threads", name: p.Name, size: p.Threads, cores: p.CPU * cpus, what: what, resize: resize}
		if processCores > 0 && b.cores < minGroupCPU*processCores {
			continue
		}
		out = append(out, b)
	}
	return out
}

// connPools name the library holding a JVM's connections from its threads.
var connPools = []struct {
	thread *regexp.Regexp
	what   string
	resize string
	def    int
}{
	{regexp.MustCompile(`^HikariPool-\d+`), "HikariCP's connection pool",
		"HikariCP's maximumPoolSize (Spring Boot: spring.datasource.hikari.maximum-pool-size, default 10)", 10},
	{regexp.MustCompile(`^C3P0PooledConnectionPoolManager`), "c3p0's connection pool", "c3p0's maxPoolSize, default 15", 15},
	{regexp.MustCompile(`^Druid-ConnectionPool-`), "Druid's connection pool", "Druid's maxActive, default 8", 8},
	{regexp.MustCompile(`^commons-pool-evictor`), "Commons DBCP's connection pool", "DBCP's maxTotal, default 8", 8},
}

// connections are the process's sockets to each peer, as bounds: a
// connection pool holds as many as its size when it is saturated. The
// peer is named from a URL on the command line that points at it.
func connections(ev *evidence.Evidence, args []string) []bound {
	snap := ev.SystemEnd
	if snap == nil || snap.Net == nil || !snap.Net.ProcessSockets {
		return nil
	}
	lib, resize, key, def := "a connection pool", "the client's connection pool size", "", 0
	if p := snap.Process; p != nil {
		for _, c := range poolers {
			if c.comm.MatchString(p.Comm) {
				lib, resize, key, def = c.what, c.resize, c.key, c.def
			}
		}
	}
	if s := ev.JVM; s != nil {
	threads:
		for _, t := range s.Threads {
			for _, c := range connPools {
				if c.thread.MatchString(t.Name) {
					lib, resize, def = c.what, c.resize, c.def
					break threads
				}
			}
		}
	}
	var out []bound
	for _, r := range snap.Net.Remotes {
		if r.Process <= 0 {
			continue
		}
		b := bound{kind: "connections", name: r.Addr, addr: r.Addr, key: key, size: r.Process, what: lib, resize: resize, def: def}
		if u := peerURL(r.Addr, args); u != "" {
			b.name = u
		}
		out = append(out, b)
	}
	return out
}

// peerURL is the command-line URL that points at addr (host:port), with
// credentials and query left out, or "".
func peerURL(addr string, args []string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	for _, a := range args {
		if _, v, ok := strings.Cut(a, "="); ok && strings.Contains(v, "://") {
			a = v
		}
		i := strings.Index(a, "://")
		if i < 0 {
			continue
		}
		rest := a[i+3:]
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[at+1:]
		}
		if q := strings.IndexAny(rest, "?#"); q >= 0 {
			rest = rest[:q]
		}
		for _, h := range []string{host, "localhost"} {
			if hp := h + ":" + port; rest == hp || strings.HasPrefix(rest, hp+"/") {
				return a[:i+3] + rest
			}
		}
	}
	return ""
}

// settingPools name the pool a setting sizes from a word of its name.
var settingPools = []struct {
	word, what, resize string
	def                int
}{
	{"hikari", "HikariCP's connection pool", "HikariCP's maximumPoolSize, default 10", 10},
	{"tomcat", "Tomcat's connector executor", "Tomcat's maxThreads, default 200", 200},
	{"jetty", "Jetty's QueuedThreadPool", "Jetty's maxThreads, default 200", 200},
	{"undertow", "Undertow's worker pool", "Undertow's worker threads", 0},
	{"netty", "a Netty event loop group", "the event loop's threads", 0},
	{"dbcp", "Commons DBCP's connection pool", "DBCP's maxTotal, default 8", 8},
	{"c3p0", "c3p0's connection pool", "c3p0's maxPoolSize, default 15", 15},
	{"druid", "Druid's connection pool", "Druid's maxActive, default 8", 8},
}

// Words in a setting's name that make it a pool's or a limit's size, and
// words that make it something else (a timeout, a memory size, a port).
var (
	poolWords = []string{"pool", "thread", "conn", "worker", "concurren", "parallel", "permit", "semaphore",
		"maxopen", "perhost", "inflight", "limit", "maxactive", "maxtotal"}
	notPoolWords = []string{"mem", "heap", "byte", "time", "port", "level", "ttl", "idle", "min", "queue",
		"backlog", "buffer", "cache", "retr", "delay", "interval", "lifetime"}
)

// settings are the command line's settings that size a pool: name=value or
// a flag followed by its value, the value a whole number.
func settings(args []string) []bound {
	var out []bound
	seen := map[string]bool{}
	for i, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			if !strings.HasPrefix(a, "-") || i+1 >= len(args) {
				continue
			}
			name, value = a, args[i+1]
		}
		n, err := strconv.Atoi(value)
		if err != nil || n <= 0 || !poolSetting(name) {
			continue
		}
		written := name + "=" + value
		if !ok {
			written = name + " " + value
		}
		if seen[written] {
			continue
		}
		seen[written] = true
		b := bound{kind: "setting", name: written, size: n, resize: strings.TrimLeft(name, "-")}
		for _, k := range settingPools {
			if strings.Contains(strings.ToLower(name), k.word) {
				b.what, b.resize, b.def = k.what, b.resize+" ("+k.resize+")", k.def
				break
			}
		}
		out = append(out, b)
	}
	return out
}

func poolSetting(name string) bool {
	key := strings.ToLower(strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(name, "-"), "D"), "-"))
	key = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' {
			return r
		}
		return -1
	}, key)
	// The last two parts of a dotted name say what it is:
	// spring.datasource.hikari.maximum-pool-size is hikari.maximumpoolsize.
	if parts := strings.Split(key, "."); len(parts) > 2 {
		key = strings.Join(parts[len(parts)-2:], ".")
	}
	pool := false
	for _, w := range poolWords {
		pool = pool || strings.Contains(key, w)
	}
	for _, w := range notPoolWords {
		if strings.Contains(key, w) {
			return false
		}
	}
	return pool
}

// commandLine is the target's arguments: the JVM's options and its
// application's arguments when a recording has them, else the process's
// command line from /proc.
func commandLine(ev *evidence.Evidence) []string {
	var args []string
	if s := ev.JVM; s != nil {
		args = append(args, strings.Fields(s.JVMArguments)...)
		args = append(args, strings.Fields(s.JavaArguments)...)
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, fmt.Sprintf("-D%s=%s", k, s.Properties[k]))
		}
	}
	if len(args) == 0 {
		for _, snap := range []*bundle.SystemSnapshot{ev.SystemEnd, ev.SystemStart} {
			if snap != nil && snap.Process != nil {
				return strings.Fields(snap.Process.Cmdline)
			}
		}
	}
	return args
}

// nativeServers are the native servers known to hold one worker (a thread,
// or a process in a prefork model) for the whole of each request, named
// from the command, with the setting that sizes the workers. Other native
// servers' threads and processes say nothing of their concurrency: nginx's,
// HAProxy's or Envoy's workers are event loops sized to the cores, each
// serving thousands of requests at once (the corpus's healthy nginx, two
// workers saturating two cores beside the load generator, read 2.2 served
// at once for its two workers).
var nativeServers = []struct {
	comm   *regexp.Regexp
	what   string
	resize string
}{
	{regexp.MustCompile(`^(apache2|httpd)$`), "Apache's MPM workers",
		"MaxRequestWorkers in the MPM's configuration (mpm_event and mpm_worker: ServerLimit × ThreadsPerChild; prefork: one process each)"},
	{regexp.MustCompile(`^php-fpm`), "PHP-FPM's children", "pm.max_children in the pool's configuration"},
	{regexp.MustCompile(`^(uwsgi|gunicorn)`), "the application server's workers", "its worker processes and threads (--workers, --threads)"},
}

// nativeWorkers are a known native server's workers as bounds, from the
// process tree's snapshot: the threads of each of its processes (Apache's
// children: their worker threads with a listener and a main thread) and
// its processes alike under the target (a prefork server's children). Go
// and JVM processes have their own readings: a Go program's threads are not
// its concurrency, a JVM's pools are named.
func nativeWorkers(ev *evidence.Evidence) []bound {
	snap := ev.SystemEnd
	if snap == nil || snap.Process == nil || ev.Platform() != evidence.PlatformNative {
		return nil
	}
	known := func(comm string) (what, resize string, ok bool) {
		for _, s := range nativeServers {
			if s.comm.MatchString(comm) {
				return s.what, s.resize, true
			}
		}
		return "", "", false
	}
	var out []bound
	alike := map[string]int{}
	for _, p := range append([]bundle.ProcessInfo{*snap.Process}, snap.Children...) {
		what, resize, ok := known(p.Comm)
		if !ok {
			continue
		}
		if p.PID != snap.Process.PID {
			alike[p.Comm]++
		}
		if p.Threads > 1 {
			out = append(out, bound{kind: "threads", name: fmt.Sprintf("%s (pid %d)", p.Comm, p.PID), size: p.Threads, what: what, resize: resize, unit: "workers"})
		}
	}
	for comm, n := range alike {
		if n > 1 {
			what, resize, _ := known(comm)
			out = append(out, bound{kind: "processes", name: comm + "'s processes", size: n, what: what, resize: resize, unit: "workers"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
