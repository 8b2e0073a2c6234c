// Package cfg001 names a setting the process was started with as the cause
// of the cost it drives (finding class configuration): a GOGC below the
// default or a GOMEMLIMIT at the live heap under a busy collector, a cache
// turned off by a flag, a debug log level, a server's buffer pool far
// smaller than the memory in the option file its command line names.
package cfg001

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/goruntime"
)

// Rule is CFG001.
var Rule = &rules.Rule{
	ID:    "CFG001",
	Class: "configuration",
	Doc: rules.Doc{
		Title: "A setting the process was started with explains its dominant cost",
		Text: `Some costs are chosen at start-up: GOGC=20 makes the collector run five
times as often as the default, a GOMEMLIMIT at the live heap makes it run
without pause, a flag turns a result cache off, a debug log level formats and
writes records no one reads. The code is then not the place to look: the
setting is, and changing it is the cheapest fix there is. When such a setting
is visible and the cost it drives is in the profile, this rule names the
setting as the cause; the runtime or library findings that describe the same
cost (gc-pressure, logging-cost, hot-function) are its symptoms. A server's
settings live in the files its command line names (a my.cnf, a
postgresql.conf): a MariaDB buffer pool far smaller than the memory leaves
every lookup reading from the disk, and the read waits (disk-io-wait) are
then the setting's symptom.`,
		Evidence: `The settings as written (facts.Configuration: the command line from /proc,
a JVM's options and arguments from JFR, the Go tuning variables of the
environment), the runtime's own GOGC and GOMEMLIMIT (runtime/metrics), the
live heap, and the CPU samples each setting drives. Figures below are verify's (paired rounds, 95% intervals) on svc
(testdata/svc, written for this rule; record.sh) and the real-server corpus.

GC settings. The effective GOGC is GOGC, or under a memory limit that binds,
100 x (GOMEMLIMIT - live heap) / live heap (at or under 1.05 x the live heap:
a death spiral). Below 100, with the GC at 5% of CPU or more (GC001's lowest
grade), it is reported. Over a steady live heap GC CPU per request follows
the cycle count, inversely proportional to GOGC (the Go GC guide: doubling
GOGC roughly halves GC CPU), so the default removes at least 1 - effective/100
of the GC's share, at most the GC and the allocation slow path it slows.
The write barriers count with the GC: the runtime turns them on only while
the collector marks, and the time spent marking follows the cycle count
too, so the same share of their CPU goes. The allocator's mostly stays:
svc's recordings at GOGC=20 and 100 (testdata gogc-20 and gogc-100, 689
and 256 µs of CPU per request) show the GC's CPU per request falling 81%
(475 to 90 µs), as 1 - 20/100 says, and mallocgc's outside it 16% (101 to
85 µs). svc at GOGC=20: GC 69% of CPU at 42 cycles/s, no write barriers
(it stores no pointers into old objects), predicted 55% [55%, 83%];
GOGC=100 measured CPU per request 0.43x [0.38, 0.48] (57% removed),
throughput 1.68x [1.23, 2.30]; perfdoctor try on it (GOGC=100 applied
from this finding): CPU per request -55.5% [-42.1, -65.8] against -57.0%
predicted. Prometheus 2.42 (go1.19) at GOGC=20: GC 28% and write barriers
5.6% (gcWriteBarrier, bulkBarrierPreWrite under the query's typed copies),
predicted 27% [27%, 40%] (22% before the barriers counted), CPU per query
0.66x [0.61, 0.72] measured (34% removed), throughput 1.66x [1.40, 1.95].
A second pair recorded the same way, GOGC=20 then unset, one after the
other (59.1 and 41.0 ms of CPU per query, 0.69x; ×0.72 predicted, ×0.76
without the barriers): per query the GC fell 78% (18.1 to 3.9 ms), the
barriers 69% (2.8 to 0.9 ms), mallocgc 5% (3.3 to 3.2 ms), the rest 5%
(34.9 to 33.0 ms).
svc with GOMEMLIMIT=48MiB over a 54 MiB live
heap: GC 72%, predicted [72%, 85%]; 1 GiB measured CPU per request 0.18x
(82% removed), throughput 4.89x [4.57, 5.22]. Silent: svc at GOGC=100 (GC
35%, the allocations' cost: GC001) and under GOMEMLIMIT=1GiB (GC 39%).

A cache off: a flag whose name says it disables a cache (disableCache,
no-cache, cache.enabled=false, a cache size of 0). It explains the CPU
outside the delivery of answers (the HTTP server's machinery, socket I/O,
compression, JSON encoding, logging) and the runtime's background (GC,
scheduler): the computation a hit would skip, from 30% of CPU (below it a
cache that answers everything gives under 1.4x). VictoriaMetrics with
-search.disableCache: 80% [80%, 82%] predicted, 5.3x [4.6, 6.1] and CPU per
request 0.16x measured with the cache on; svc rendering each answer with
5000 hashing rounds: 90% [90%, 91%] predicted, CPU per request 0.14x [0.12,
0.17] and 5.9x [4.8, 7.3] measured. The profile cannot tell which part
of the computation the cache keeps: svc with -disable-cache over a cheap
render (200 hashing rounds beside 2000 objects a request) showed 46% and
measured 0.98x [0.86, 1.11] with the cache on (see Caveats).

A debug log level: a level setting (log.level, logging.level.*, loggerLevel,
log4j2.level) at debug, trace or all, or klog's -v at 4 or more, or a switch
that turns debug or trace logging on (--debug, --trace, --verbose; a known
program's letters, nats-server's -D, -V and -DV), with the loggers and the
facades that format for them (LIB008's family, Spring's LogFormatUtils,
commons-logging) and the program's own logging helpers (frames.LogHelpers:
traceMsg, Debugf) at 5% of CPU or more. nats-server with -DV: 79% of its
CPU, 5.96x [4.69, 8.18] predicted for 30.2x measured in CPU per message
(the publishers queued on a lock held across each trace write, and the
parking, waking and collecting that went with them, were in no logging
frame). At INFO a debug record costs a level comparison: all
of that share goes, and at most the GC it drove and, on a JVM still
compiling, its JIT compilers' CPU (CompileBroker's threads): the code a
level turns on is compiled as it gets hot, and which part of the compiling
is the logging's the profile cannot say, so the range's top counts all of
it (on a warm JVM the compilers are idle and it adds nothing; the corpus's
JVMs, recorded minutes after start, ran them at 5% to 67% of their CPU). svc at
-log-level debug: 10% [10%, 47%] predicted, CPU per request 0.83x [0.78,
0.87] measured at info. Spring Boot at logging.level.root=DEBUG: loggers
20%, compilers 28%, predicted 20% [20%, 49%] (1.25x [1.25, 1.94]); 1.74x
[1.42, 2.14] and CPU per request 0.56x measured at INFO, and in the two
sides' recordings the compilers' CPU per request fell from 246 to 71 µs
(71%) with the loggers' from 172 to 8 µs. Its 32 threads also queued on
the pattern layout's abbreviation cache (JFR: 5.7 s of monitor waits in
Logback's NamedConverter over 28 s), which CPU samples do not show.


A server's cache: innodb_buffer_pool_size in the option file a MariaDB or
MySQL server's command line names (--defaults-file, read into the bundle:
facts.Configuration), or on its command line, while its serving threads wait
for file reads (DISK002's reading, rules.FileReadWaits: perf's scheduler
events, from DISK002's 10% of their time, graded as DISK002 grades) and the
pool fits at least twice in half of the memory the server may use (the
container's limit, else the machine's; MariaDB's guidance for a dedicated
server is 50-75% of it, so below that a larger pool is the lever, above it
more memory or an index is, and DISK002 says so alone). The gain is
DISK002's, the read waits' share by the queue's law, which the pool removes
once it holds the working set: the two findings state one figure, and the
reads' CPU samples this rule claims make DISK002's finding its symptom.
MariaDB 10.11 with innodb_buffer_pool_size=6M (0.02% of 25.3 GB) in the
my.cnf its --defaults-file names, under a 345 MB table, sysbench point
selects from 8 connections: read waits 43% of the serving threads' time,
81% of their busy time, 1.97x [1.75x, 2.22x] predicted; 1G measured 2.01x
[1.80, 2.23] (the first recording, before the bundle held the file: 46%,
2.11x [1.85x, 2.41x] for 2.32x [1.93, 2.81]). Silent where the option file was
not read (DISK002 names the setting without its value), where the pool is
half of the memory (12G of 25.3 GB), and where the pool holds the working
set (MariaDB's missing-index bundle at its default 128 MiB: no read waits).

A pool of one or two threads or connections is pool-queueing's (POOL001),
which reads the pool's setting with its waits (a PgBouncer's
default_pool_size from its ini file among them, with the file named); this
rule does not repeat it.`,
		Fix: `Change the setting; perfdoctor try proves a setting of the environment or a
JVM option by starting the service with it and measuring both (perfdoctor
try --cmd ... --report report.json --only CFG001), and perfdoctor verify
compares two running instances for a command-line flag.`,
		Before: `GOGC=20 ./service`,
		After:  `./service            # GOGC unset: the default 100`,
		Caveats: `A setting perfdoctor cannot see (a configuration file no command line names,
or one the named file includes; an environment variable other than Go's
tuning ones; a default compiled in) is not judged. A server's files are read
when perfdoctor records it with perf (run --perf, collect --perf, sys), at
the window's start: a setting changed since the server started (SET GLOBAL)
is not seen.
A cache helps only where answers repeat, and only for the part of the work
it keeps: the estimate counts all the computation, which overstates the gain
where most of it is not the cached part. Raising GOGC or GOMEMLIMIT costs
memory, stated with the fix.`,
		Since: "0.2",
		Refs:  []string{"https://go.dev/doc/gc-guide"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.System, rules.JVM, rules.Metrics, rules.Heap, rules.Perf},
	Facts: []facts.Key{facts.CPUStacks, facts.Configuration, facts.GCCost, facts.PerfStacks, facts.WorkDone},
	Check: check,
}

// Thresholds, with the measurements behind them in Doc.Evidence.
const (
	// defaultGOGC is the Go runtime's default, the value prescribed.
	defaultGOGC = 100
	// minGCShare is GC001's lowest grade: below it the GC is no cost.
	minGCShare = 0.05
	// minComputeShare is the computation a disabled cache must explain.
	minComputeShare = 0.30
	// minLogShare is the logging a debug level must explain.
	minLogShare = 0.05
	// minJITShare is the compiling worth naming in a debug level's gain
	// basis: below it the JVM is warm (the range counts it all the same).
	minJITShare = 0.01
)

func check(pass *rules.Pass) error {
	cfg := facts.Get(pass.Facts, facts.Configuration)
	// A server's cache setting explains waits off the CPU, read from perf's
	// scheduler events: the CPU profile's size does not judge them.
	bufferPool(pass, cfg)
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	gcSetting(pass, cfg, cpu)
	cacheOff(pass, cfg, cpu)
	debugLogging(pass, cfg, cpu)
	return nil
}

// gcSetting reports a GOGC below the default, or a GOMEMLIMIT leaving the
// live heap less headroom than the default, under a busy collector.
func gcSetting(pass *rules.Pass, cfg facts.Config, cpu *evidence.Stacks) {
	ev := pass.Evidence
	s := ev.Settings()
	if s.GOGC == 0 || s.GOGC < 0 && s.GOMEMLIMIT == 0 {
		return // GOGC unknown, or off without a limit: no cycles to count
	}
	gcShare, exact := goruntime.GCShare(ev, cpu)
	basis := "share of CPU samples with a GC frame"
	if exact {
		basis = "GC share of the process's CPU over the window (runtime/metrics)"
	}
	if gcShare < minGCShare {
		return
	}
	gogc := s.GOGC
	target := max(gogc, defaultGOGC)
	effective, byLimit := float64(gogc), false
	live := goruntime.LiveHeap(ev)
	if s.GOMEMLIMIT > 0 && live > 0 {
		headroom := 100 * (float64(s.GOMEMLIMIT) - float64(live)) / float64(live)
		if gogc < 0 || headroom < effective {
			effective, byLimit = max(headroom, 0), true
		}
	}
	if gogc < 0 {
		target = defaultGOGC // GOGC=off: the limit alone paces the GC
	}
	if effective >= defaultGOGC {
		return
	}
	removed := 1 - effective/float64(target)
	// The write barrier is on only while the collector marks: marking time
	// follows the cycle count as the GC's CPU does, so the same share of
	// the barriers' CPU goes with the cycles.
	inGC := cpu.Has(frames.GCFrames)
	inBarrier := cpu.Has(frames.WriteBarrierFrames)
	barrier := cpu.ShareWhere(func(s evidence.Sample) bool { return inBarrier(s) && !inGC(s) })
	driven := gcShare + barrier
	// At least the cycles' share of the GC and the barriers; at most the
	// GC, the barriers and the allocation slow path it slows (sweeping and
	// span refills on allocation, assists held at the limit), which part of
	// that the profile cannot say.
	low, high := min(driven*removed, 0.999), min(driven+facts.Get(pass.Facts, facts.GCCost).Malloc, 0.999)
	f := rules.Finding{
		Resource:        "cpu",
		Impact:          rules.Midway(low, high),
		ImpactRange:     &[2]float64{low, high},
		OverheadCounted: true,
		Evidence: []rules.Fact{
			rules.Share("GC share of CPU", gcShare),
			rules.Count("GOGC", float64(gogc), ""),
			rules.Count("effective GOGC (headroom the settings leave the live heap)", round(effective), ""),
		},
		Frames: cpu.Matched(gcDriven, 12),
	}
	// Barriers under half a percent are not worth a word.
	barrierNote := ""
	if barrier >= 0.005 {
		f.Evidence = append(f.Evidence, rules.Share("write barriers' share of CPU (on while the collector marks)", barrier))
		barrierNote = fmt.Sprintf(", and the write barriers' %s (on only while the collector marks, so they go as the cycles do)", human.Percent(barrier))
	}
	if live > 0 {
		f.Evidence = append(f.Evidence, rules.Bytes("live heap", live))
	}
	// A value the runtime reports but the environment does not hold was
	// set in code (debug.SetGCPercent, SetMemoryLimit): try's environment
	// would not change it.
	fromEnv := func(name string) bool {
		st, ok := cfg.Last(strings.ToLower(name))
		return ok && st.Source == facts.SourceEnv
	}
	written := func(name, value, call string) string {
		if fromEnv(name) {
			st, _ := cfg.Last(strings.ToLower(name))
			return st.Written() + " (environment)"
		}
		return fmt.Sprintf("%s=%s (set in code, %s, or by a library: not in the environment)", name, value, call)
	}
	tryIt := "perfdoctor try starts the service with the new setting and measures both (--only CFG001)."
	if !fromEnv("GOGC") && !fromEnv("GOMEMLIMIT") {
		tryIt = "Change it where the code sets it; perfdoctor verify compares the two builds under the same load."
	}
	if byLimit {
		limit := s.GOMEMLIMIT
		f.Evidence = append(f.Evidence, rules.Bytes("GOMEMLIMIT", limit))
		spiral := float64(limit) <= 1.05*float64(live)
		// The peak heap at the target GOGC, and a tenth more for the
		// runtime's own memory the limit also counts.
		want := uint64(float64(live) * (1 + float64(target)/100) * 1.1)
		cap, capName := s.MemoryLimit, "the container's memory limit"
		if cap == 0 && s.MemTotal > 0 {
			cap, capName = s.MemTotal/2, "half the machine's memory"
		}
		f.Summary = fmt.Sprintf("%s leaves the %s live heap %s of headroom: the collector runs as if GOGC were %.0f and takes %s of CPU",
			written("GOMEMLIMIT", goruntime.GoMemLimit(limit), "debug.SetMemoryLimit"), human.Bytes(live), human.Bytes(sat(limit, live)), effective, human.Percent(gcShare))
		if spiral {
			f.Summary = fmt.Sprintf("%s is at the %s live heap: the collector runs back to back (a GC death spiral) and takes %s of CPU",
				written("GOMEMLIMIT", goruntime.GoMemLimit(limit), "debug.SetMemoryLimit"), human.Bytes(live), human.Percent(gcShare))
		}
		if cap > 0 && want > cap {
			f.Fix = fmt.Sprintf("The live heap (%s) needs about %s at GOGC=%d, more than %s (%s): cut the live heap (smaller caches, fewer pointers) or give the service more memory, then raise GOMEMLIMIT. %s",
				human.Bytes(live), human.Bytes(want), target, capName, human.Bytes(cap), tryIt)
		} else {
			f.Fix = fmt.Sprintf("Raise GOMEMLIMIT to at least GOMEMLIMIT=%s (the live heap × %.1f at GOGC=%d, and a tenth for the runtime's own memory), or unset it; the heap then peaks near %s. %s",
				goruntime.GoMemLimit(want), 1+float64(target)/100, target, human.Bytes(uint64(float64(live)*(1+float64(target)/100))), tryIt)
			if fromEnv("GOMEMLIMIT") {
				f.Config = &rules.ConfigFix{Gain: f.Impact, Changes: []rules.ConfigChange{
					{Kind: rules.ConfigEnv, Name: "GOMEMLIMIT", Value: goruntime.GoMemLimit(want), Now: goruntime.GoMemLimit(limit)}}}
			}
			f.Example = fmt.Sprintf("GOMEMLIMIT=%s ./service   # was %s", goruntime.GoMemLimit(want), goruntime.GoMemLimit(limit))
		}
		f.ImpactBasis = fmt.Sprintf("%s%s; a limit with room for GOGC=%d makes cycles %s as rare (GC CPU follows the cycle count over a steady live heap), so at least %s of the GC's share goes, at most all of it and the allocation slow path",
			basis, barrierNote, target, timesRarer(effective, target), human.Percent(removed))
	} else {
		f.Summary = fmt.Sprintf("%s makes the collector run %s as often as the default and take %s of CPU",
			written("GOGC", strconv.Itoa(gogc), "debug.SetGCPercent"), timesRarer(effective, target), human.Percent(gcShare))
		f.Fix = fmt.Sprintf("Unset GOGC (the default is %d), or set the value your memory allows: the heap peaks near the live heap × (1 + GOGC/100)%s. Put GOMEMLIMIT beside it to cap memory instead of a low GOGC. %s",
			target, peakNote(live, gogc, target), tryIt)
		if fromEnv("GOGC") {
			f.Config = &rules.ConfigFix{Gain: f.Impact, Changes: []rules.ConfigChange{
				{Kind: rules.ConfigEnv, Name: "GOGC", Value: strconv.Itoa(target), Now: strconv.Itoa(gogc)}}}
		}
		f.Example = fmt.Sprintf("GOGC=%d ./service   # was GOGC=%d", target, gogc)
		f.ImpactBasis = fmt.Sprintf("%s%s; GOGC=%d makes cycles %s as rare (GC CPU follows the cycle count over a steady live heap), so at least %s of the GC's share goes, at most all of it and the allocation slow path",
			basis, barrierNote, target, timesRarer(effective, target), human.Percent(removed))
	}
	f.ImpactBasis += midwayBasis
	// Severity from what the frames show the fix removes; the engine raises
	// it to the estimate midway in the range (Regrade).
	f.Severity = rules.SeverityFor(low)
	f.Caveats = append(f.Caveats, "More headroom costs memory: check the peak heap against what the service may use.")
	f.Claim = &rules.Claim{Level: rules.LevelConfig, CPU: cpu.Has(gcDriven), Regrade: rules.SeverityFor}
	pass.Report(f)
}

// midwayBasis ends the basis of an estimate set midway in its range
// (rules.Midway).
const midwayBasis = "; the estimate is midway between the two ends: which part of the rest goes with the fix the profile cannot say"

// gcDriven is the CPU a GC setting drives: the collector's and the write
// barriers it turns on while marking.
var gcDriven = evidence.Any(frames.GCFrames, frames.WriteBarrierFrames)

func timesRarer(effective float64, target int) string {
	if effective < 1 {
		return "many times"
	}
	return human.Number(round(float64(target)/effective)) + "x"
}

func peakNote(live uint64, now, target int) string {
	if live == 0 || now < 0 {
		return ""
	}
	return fmt.Sprintf(" (here from ~%s to ~%s)", human.Bytes(uint64(float64(live)*(1+float64(now)/100))), human.Bytes(uint64(float64(live)*(1+float64(target)/100))))
}

// cacheFlag finds a setting that turns a cache off: disableCache and the
// like given as true, cache.enabled=false, a cache size of 0, a cache type
// of none.
func cacheFlag(cfg facts.Config) (facts.Setting, bool) {
	for _, s := range cfg.Settings {
		k := s.Key
		if !strings.Contains(k, "cache") {
			continue
		}
		v, isBool := s.Bool()
		if s.Alone && s.Next != "" {
			if nv, ok := (facts.Setting{Value: s.Next}).Bool(); ok {
				v, isBool = nv, true
			}
		}
		turnsOff := containsAny(k, "disable", "nocache", "skipcache", "bypasscache", "cacheoff")
		turnsOn := containsAny(k, "enable", "usecache", "cacheon") || strings.HasSuffix(k, "cache")
		sized := containsAny(k, "size", "capacity", "bytes", "entries", "maxmem", "max")
		switch {
		case turnsOff && isBool && v:
			return s, true
		case !turnsOff && turnsOn && isBool && !v && !s.Alone:
			return s, true
		case sized && isZero(s.Value):
			return s, true
		case strings.HasSuffix(k, "cache.type") && strings.EqualFold(s.Value, "none"): // Spring's spring.cache.type=none
			return s, true
		}
	}
	return facts.Setting{}, false
}

// delivery is the work that stays when a cache answers: the HTTP server's
// own machinery, writing, compressing and encoding the answer, logging.
var delivery = evidence.Any(
	frames.WriteSyscall, frames.Loggers, frames.SocketIO,
	evidence.FuncPrefix("net/http.(*conn).readRequest", "net/http.(*conn).serve.", "net/http.(*response).", "net/http.(*chunkWriter).",
		"net/http.checkConnErrorWriter", "net/http.(*conn).finalFlush", "net/http.readRequest", "net/http.(*connReader).",
		"net/textproto.", "bufio.(*Writer).Flush", "net.(*conn).Write", "net.(*conn).Read", "internal/poll.",
		"compress/", "github.com/klauspost/compress/", "encoding/json.", "github.com/valyala/fasthttp.",
		"org.apache.coyote.", "org.apache.tomcat.util.net.", "org.eclipse.jetty.io.", "org.eclipse.jetty.server.HttpConnection",
		"sun.nio.ch.", "java.util.zip.", "com.fasterxml.jackson."),
)

// collector is a Go or a JVM collector's work; background is the
// runtime's own work beside the requests.
var (
	collector  = evidence.Any(frames.GCFrames, frames.JVMGCFrames)
	background = evidence.Any(collector, frames.SchedulerFrames)
)

// cacheOff reports a cache turned off by a flag when the computation a
// cache hit would skip is most of the CPU.
func cacheOff(pass *rules.Pass, cfg facts.Config, cpu *evidence.Stacks) {
	flag, ok := cacheFlag(cfg)
	if !ok {
		return
	}
	delivered, bg := cpu.Has(delivery), cpu.Has(background)
	computing := func(s evidence.Sample) bool { return !delivered(s) && !bg(s) }
	share := cpu.ShareWhere(computing)
	if share < minComputeShare {
		return
	}
	gc := cpu.Share(collector)
	top := min(share+gc, 0.999)
	f := rules.Finding{
		Resource:    "cpu",
		Impact:      rules.Midway(share, top),
		ImpactRange: &[2]float64{share, top},
		RemovesWork: true, // a repeated answer is computed no more
		// The collector its garbage drove is in the range's top already.
		OverheadCounted: true,
		Severity:        rules.SeverityFor(share),
		ImpactBasis:     "share of CPU samples outside the delivery of answers (the HTTP server's machinery, socket I/O, compression, encoding, logging) and the runtime's background work: what a cache hit skips when answers repeat; at most that and the GC its garbage drives" + midwayBasis,
		Summary: fmt.Sprintf("%s turns a cache off (%s): %s of CPU computes answers a cache would keep",
			flag.Written(), flag.Source, human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Text("setting", flag.Written()+" ("+flag.Source+")"),
			rules.Share("CPU computing answers (outside delivery and the runtime's background)", share),
			rules.Share("GC share of CPU", gc),
		},
		Fix: fmt.Sprintf("Remove %s from %s (or turn the cache back on) unless the answers must never be reused; prove it with perfdoctor verify, the service started with and without it, under the same load.",
			flag.Written(), sourcePlace(flag)),
		Example: fmt.Sprintf("%s ... %s   ->   %s ...", cfg.Program, flag.Written(), cfg.Program),
		Caveats: []string{"The estimate counts all the computation outside delivery, and a cache keeps only its part: where most of the work is not what the cache stores (check the locations against it), the gain is smaller."},
	}
	if w := loadRepeats(pass.Evidence); w != "" {
		f.Evidence = append(f.Evidence, rules.Text("load", w))
	} else {
		f.Caveats = append(f.Caveats, "A cache saves only what repeats: the gain assumes the answers are asked for again.")
	}
	sites := cpu.TopSites(3, cpu.First(func(fn string) bool { return rules.IsApplication(fn) }))
	f.Locations = rules.Locations(sites, "where the computation runs (share of CPU)")
	f.Claim = &rules.Claim{Level: rules.LevelConfig, CPU: computing, Regrade: rules.SeverityFor}
	pass.Report(f)
}

// loadRepeats says whether the recorded load asked for one answer again
// and again (one URL, a GET): what a cache keeps.
func loadRepeats(ev *evidence.Evidence) string {
	l := ev.Load
	if l == nil || l.URL == "" || l.Requests == 0 || (l.Method != "" && l.Method != "GET") {
		return ""
	}
	return fmt.Sprintf("%s requests for one URL: the answers repeat", human.Number(float64(l.Requests)))
}

// isLogLevel says whether a setting sets a log level (klog's -v among
// them).
func isLogLevel(key string) bool {
	return key == "v" || strings.HasSuffix(key, "loglevel") || strings.HasSuffix(key, "log.level") || strings.HasSuffix(key, "loggerlevel") ||
		strings.HasPrefix(key, "logging.level") || key == "log4j2.level" || key == "org.slf4j.simplelogger.defaultloglevel"
}

// verboseSwitch says whether a setting is a switch that turns debug or
// trace logging on: --debug, --trace or --verbose given alone or true, or
// one of the program's own (verboseSwitches).
func verboseSwitch(program string, s facts.Setting) bool {
	if on, ok := s.Bool(); !ok || !on || s.Source != facts.SourceArgs {
		return false
	}
	switch s.Key {
	case "debug", "trace", "verbose":
		return true
	}
	return slices.Contains(verboseSwitches[program], s.Name)
}

// verboseSwitches are the single-letter switches known programs read as a
// log level: a letter means different things to different programs (-d
// daemonizes, -V prints a version), so only these are read. nats-server:
// -D debug, -V trace, -VV verbose trace, combined (nats-server --help);
// with -DV, tracing each protocol operation took 80% of its CPU under a
// publish load, and without it the CPU per message fell 30x (corpus
// go-nats-trace-logging).
var verboseSwitches = map[string][]string{
	"nats-server": {"-D", "-V", "-DV", "-VD", "-VV", "-DVV"},
}

func verbose(level string) bool {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "debug", "trace", "all", "finest", "finer", "fine", "verbose":
		return true
	}
	return false
}

// logging is the loggers and the facades that format records for them
// only at a verbose level (Spring's LogFormatUtils, commons-logging).
var logging = evidence.Any(frames.Loggers, evidence.FuncPrefix("org.springframework.core.log.", "org.apache.commons.logging.", "org.jboss.logging."))

// debugLogging reports a debug log level when the loggers take a share of
// CPU.
func debugLogging(pass *rules.Pass, cfg facts.Config, cpu *evidence.Stacks) {
	var set facts.Setting
	found, isSwitch := false, false
	for _, s := range cfg.Where(isLogLevel) {
		v := s.Value
		if s.Alone {
			v = s.Next
		}
		// klog's -v counts verbosity: 4 and up is its debug level.
		if n, err := strconv.Atoi(v); s.Key == "v" && err == nil && n >= 4 || s.Key != "v" && verbose(v) {
			set, found = s, true
		}
	}
	if !found {
		for _, s := range cfg.Settings {
			if verboseSwitch(cfg.Program, s) {
				set, found, isSwitch = s, true, true
			}
		}
	}
	if !found {
		return
	}
	// The program's own logging helpers build the records the level turns
	// on, outside the loggers' frames.
	inLogging, inHelper := cpu.Has(logging), frames.LogHelpers(cpu, logging)
	records := func(s evidence.Sample) bool { return inLogging(s) || inHelper(s) }
	share := cpu.ShareWhere(records)
	if share < minLogShare {
		return
	}
	gc := cpu.Share(collector)
	// A level turns code on, and a JVM compiles code as it gets hot: while
	// the compilers are still at work, part of their CPU is the logging
	// paths', which part the profile cannot say.
	jit := cpu.Share(frames.JITFrames)
	top := min(share+gc+jit, 0.999)
	written := set.Written()
	if set.Alone && !isSwitch {
		written += " " + set.Next
	}
	f := rules.Finding{
		Resource:    "cpu",
		Impact:      rules.Midway(share, top),
		ImpactRange: &[2]float64{share, top},
		RemovesWork: true, // at INFO a debug record is a level comparison
		// The collector its garbage drove is in the range's top already.
		OverheadCounted: true,
		Severity:        rules.SeverityFor(share),
		ImpactBasis:     "share of CPU samples under the logging libraries and the facades that format for them: at INFO a debug record costs a level comparison, so about all of it goes, and at most the GC its garbage drove with it",
		Summary:         fmt.Sprintf("%s (%s) sets a debug log level: logging takes %s of CPU", written, set.Source, human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Text("setting", written+" ("+set.Source+")"),
			rules.Share("CPU under loggers", share),
			rules.Share("GC share of CPU", gc),
		},
		Fix: fmt.Sprintf("Set the level back to INFO (%s) and turn DEBUG on only for the logger under investigation, for a while. Prove it: %s.",
			sourcePlace(set), proveHow(set)),
		Frames: cpu.Matched(logging, 12),
		Claim:  &rules.Claim{Level: rules.LevelConfig, CPU: records, Regrade: rules.SeverityFor},
	}
	if isSwitch {
		f.Summary = fmt.Sprintf("%s (%s) turns on debug or trace logging: logging takes %s of CPU", written, set.Source, human.Percent(share))
		f.Fix = fmt.Sprintf("Start it without %s (%s): its debug and trace records are written for every operation. Turn it on only while investigating, for a while. Prove it: %s.",
			written, sourcePlace(set), proveHow(set))
	}
	if jit >= minJITShare {
		f.Evidence = append(f.Evidence, rules.Share("JIT compilers' share of CPU", jit))
		f.ImpactBasis += fmt.Sprintf(", and the JIT compilers' %s: the code the level turns on is compiled as it gets hot, and the profile cannot say which part of the compiling is the logging's", human.Percent(jit))
	}
	f.ImpactBasis += midwayBasis
	if set.Source == facts.SourceProperty || set.Source == facts.SourceJVMOption {
		f.Config = &rules.ConfigFix{Gain: share, Changes: []rules.ConfigChange{{Kind: rules.ConfigJVMFlag, Name: set.Name + "=", Value: "INFO", Now: set.Value}}}
	}
	pass.Report(f)
}

func sourcePlace(s facts.Setting) string {
	switch s.Source {
	case facts.SourceArgs:
		return "the command line"
	case facts.SourceProperty:
		return "the JVM's system properties"
	case facts.SourceJVMOption:
		return "the JVM's options"
	}
	return "the " + s.Source
}

func proveHow(s facts.Setting) string {
	if s.Source == facts.SourceProperty || s.Source == facts.SourceJVMOption {
		return "perfdoctor try applies the JVM option and measures both (--only CFG001)"
	}
	return "perfdoctor verify compares the service started with and without the setting under the same load"
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func isZero(v string) bool {
	v = strings.TrimRight(strings.ToLower(strings.TrimSpace(v)), "kmgtib")
	n, err := strconv.ParseFloat(v, 64)
	return err == nil && n == 0
}

func sat(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func round(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
