package disk002

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// serverCache is, by the process's name, what a known server's reads miss
// (said in the summary), the setting that sizes that cache (the fix: the
// user's lever, since the server's code is not the user's to change) and
// its key (facts.SettingKey), whose value and file the finding states
// where the configuration shows it.
var serverCache = map[string]struct{ missed, fix, key string }{
	"mariadbd": {innodbMissed, mysqlCache, InnoDBPoolKey},
	"mysqld":   {innodbMissed, mysqlCache, InnoDBPoolKey},
	"postgres": {"reads its cache does not hold", "PostgreSQL reads the blocks its shared buffers do not hold from the OS page cache, and from the disk when that " +
		"misses too: raise shared_buffers (a quarter of memory is the usual start) and leave the rest of memory to the page " +
		"cache, or add memory where the tables and indexes the queries touch are larger than it; effective_cache_size only " +
		"tells the planner how much cache to expect and caches nothing. pg_stat_statements' shared_blks_read names the " +
		"queries that read; if they scan a table, an index is the fix.", "shared.buffers"},
}

// InnoDBPoolKey is innodb_buffer_pool_size as facts.SettingKey keys it.
const InnoDBPoolKey = "innodb.buffer.pool.size"

const innodbMissed = "pages the InnoDB buffer pool (innodb_buffer_pool_size) does not hold"

const mysqlCache = "InnoDB reads each page its buffer pool does not hold from the disk, and with innodb_flush_method O_DIRECT " +
	"(the default) the page cache does not hold it either: size innodb_buffer_pool_size to the working set, the tables and " +
	"indexes the queries touch (on a dedicated server 50-75% of memory); Innodb_buffer_pool_reads rising against " +
	"Innodb_buffer_pool_read_requests in SHOW GLOBAL STATUS counts the misses. If the reads are a scan, an index is the fix."

// genericCache is the advice for a process whose cache is not known.
const genericCache = "A read that misses the process's own cache and the page cache waits for the device: size the cache to " +
	"the working set (the program's own, or RAM for the page cache; do not bypass it with O_DIRECT unless the program " +
	"caches), add memory where the working set is larger than it, or, if the reads are scans, add an index so a request " +
	"reads the pages it needs."

// A process perf recorded (a native server, or any process without an
// execution trace): perf's scheduler events hold each thread's sleeps
// with their stacks, and perf's thread IDs tell the threads that serve
// connections (rules.ServingThreads). A serving thread asleep in a read
// of a file until the device completes it (frames.KernelFileRead under
// frames.IOWait: pread -> ext4's direct I/O -> io_schedule_timeout, or a
// buffered read waiting on the page's lock) holds its request for the
// read; syncs are DISK001's, and sockets, futexes and epoll are not the
// disk's.
//
// The share is the queue's law's (rules.QueueLaw, as DISK001's): the
// reads' time, off the CPU waiting and on it submitting them, of all of
// the serving threads' time to of their busy time, no more than the
// process's CPUs allow once it stops waiting (at any load: where the
// process uses all of its CPUs the cap is the reads' CPU share, the CPU
// law). A cache that holds the working set removes the reads, so the
// range starts at the whole share. Reported from minShare of the serving
// threads' time, medium from mediumShare, high from highShare (the
// trace's thresholds, the same share of a request's time).
//
// Measured (the corpus's native bundles, the serving threads' read waits
// alone, of their time): MariaDB 10.11 with a 6 MiB buffer pool under a
// 345 MB table, sysbench point selects from 8 connections, 41% (3.43
// thread-seconds a second asleep in pread's direct I/O, 99% of it in
// state D, of 8.4 serving threads; 1.12 sleeps and 1.11 read calls per
// select); with the reads' CPU (their path 31% of the samples, the
// device's completions on other stacks 2.8%) 46% of the threads' time and
// 82% of their busy time; at 1.26 of 2 cores the top is capped at 58%:
// 2.11x [1.85x, 2.41x], and innodb_buffer_pool_size = 1G measured 2.32x
// [1.93, 2.81] (CPU per select 0.48x where the cap assumes 0.66x: the fix
// also removed the pages' checksums and the buffer pool's eviction, which
// no read frame holds). Re-recorded with its my.cnf in the bundle on a
// quieter machine: 3.43 thread-seconds a second asleep of 9 serving
// threads (38%), with the reads' CPU (30% and 2.5%) 43% of their time and
// 81% of their busy time, at 1.34 cores capped at 55%: 1.97x [1.75x,
// 2.22x], and 1G measured 2.01x [1.80, 2.23] (CPU per select 0.52x). Every other native recording, the healthy ones
// (PostgreSQL's cached selects, nginx's static files, redis pipelined)
// and the problems (apache2, haproxy, nginx, pgbouncer, php-fpm,
// PostgreSQL, redis, MariaDB's missing index and its flush per commit),
// 0.00%: their serving threads' I/O sleeps are fdatasync's (DISK001's)
// and MariaDB's direct-I/O redo writes (0.30 thread-seconds a second, a
// write), none a read. minShare, 10%, is far from both.
//
// The reading itself is rules.FileReadWaits, which CFG001 shares: where
// the cache's setting is small beside the memory, CFG001 names it as the
// cause and this finding is its symptom.
//
// fromOffCPU reads perf's scheduler events for the serving threads' waits
// in file reads and reports them when they are a large share of the
// threads' time. It returns false when the evidence has no off-CPU
// profile whose threads perf's thread IDs tell apart.
func fromOffCPU(pass *rules.Pass) bool {
	ev := pass.Evidence
	st := facts.Get(pass.Facts, facts.PerfStacks)
	if st == nil {
		st = facts.Get(pass.Facts, facts.CPUStacks)
	}
	w := facts.Get(pass.Facts, facts.WorkDone)
	r, ok := rules.FileReadWaits(ev, st, facts.Get(pass.Facts, facts.CPUStacks), w)
	if !ok {
		return false
	}
	if r.Waiting == 0 {
		return true
	}
	law := r.Law
	if law.OfWindow < minShare {
		return true
	}
	off := ev.Profiles[evidence.OffCPU]
	window := float64(off.DurationNanos)
	low, high, mid, capped := law.Range(1)
	comm := ""
	if s := ev.SystemEnd; s != nil && s.Process != nil {
		comm = s.Process.Comm
	}
	unit := "request"
	if w.Unit != "" {
		unit = w.Unit
	}
	shown := []rules.Fact{
		rules.Share("the serving threads' time in file reads that wait for the device (off the CPU and on it), of all their time", law.OfWindow),
		rules.Share("of their busy time", law.OfBusy),
		rules.Count("serving threads on average (perf's thread IDs: those seen in socket work)", r.Threads, ""),
		rules.Count("threads waiting in a file read for the device, on average (off-CPU, perf sched_switch)", r.Waiting, ""),
		rules.Share("of that wait, uninterruptible (the device)", r.Device/r.Waiting),
		rules.Share("CPU samples in the file read path (submitting the reads, copying)", r.PathShare),
		rules.Share("CPU samples completing the reads (the block layer's interrupts, on other stacks)", r.Completions),
	}
	perUnit := ""
	if w.ReadsPerUnit > 0 && w.Unit != "" {
		at := ""
		if w.IOLowerBound {
			at = "at least "
		}
		perUnit = fmt.Sprintf("%s%s reads per %s", at, human.Number(w.ReadsPerUnit), unit)
		shown = append(shown, rules.Count(fmt.Sprintf("read system calls per %s (/proc/PID/io: files, and sockets read with read())", unit), w.ReadsPerUnit, ""))
	}
	if units := w.PerSecond * window / float64(time.Second); r.Sleeps > 0 && units > 0 {
		shown = append(shown, rules.Count(fmt.Sprintf("sleeps in a file read per %s (perf sched_switch)", unit), r.Sleeps/units, ""))
	}
	if comm != "" {
		shown = append(shown, rules.Text("process", comm))
	}
	if w.Cores > 0 {
		shown = append(shown, rules.Count(fmt.Sprintf("CPUs the process used (%s)", w.CoresSource), w.Cores, ""))
	}
	shown = append(shown, rules.Text("source", fmt.Sprintf("perf's sched_switch events over %s, the serving threads by perf's thread IDs",
		human.RoundDuration(time.Duration(off.DurationNanos)))))
	whose := "The serving threads"
	if comm != "" {
		whose = comm + "'s serving threads"
	}
	summary := fmt.Sprintf("%s (%s on average) wait for file reads to reach the disk %s of their time",
		whose, human.Number(r.Threads), human.Percent(law.OfWindow))
	fix := genericCache
	if known, ok := serverCache[comm]; ok {
		fix = known.fix
		missed := known.missed
		// The setting's value where the configuration shows it.
		if set, ok := facts.Get(pass.Facts, facts.Configuration).Last(known.key); ok {
			shown = append(shown, rules.Text(set.Name, set.Value+" ("+set.Where()+")"))
			name := strings.TrimLeft(set.Name, "-")
			missed = strings.Replace(missed, "("+name+")", "("+set.Written()+" in "+place(set)+")", 1)
			if missed == known.missed {
				missed += " (" + set.Written() + " in " + place(set) + ")"
			}
			fix = fmt.Sprintf("%s is %s now (%s). %s", name, set.Value, set.Where(), fix)
		}
		summary += ": " + missed
	}
	if perUnit != "" {
		summary += "; " + perUnit
	}
	waitStacks := evidence.NewStacks(r.Waited, "offcpu")
	var loc []rules.Location
	if callers := readCallers(waitStacks, facts.Get(pass.Facts, facts.SystemFrames)); len(callers) > 0 {
		loc = rules.Locations(callers, "code reading (share of the read waits)")
		summary += ", from " + rules.ShortFunc(callers[0].Func)
	}
	cpuBound := ""
	if capped {
		cpuBound = law.CapNote()
	}
	pass.Report(rules.Finding{
		Severity:    rules.Grade(law.OfWindow, mediumShare, highShare),
		Impact:      mid,
		ImpactRange: &[2]float64{low, high},
		Resource:    "latency",
		ImpactBasis: fmt.Sprintf("the process used %.2f of %s cores, and each request holds a serving thread for its reads: they hold its "+
			"serving threads (%s on average) %s of their time, %s of their busy time; a cache that holds the working set removes them%s",
			w.Cores, human.Number(w.Available), human.Number(r.Threads), human.Percent(law.OfWindow), human.Percent(law.OfBusy), cpuBound),
		Summary:   summary,
		Evidence:  shown,
		Fix:       fix,
		Caveats:   []string{pass.Rule.Doc.Caveats},
		Locations: loc,
		Frames:    waitStacks.Matched(evidence.Any(frames.KernelFileRead, frames.IOWait), 8),
		// The reads' kernel time is the reads', not a hot function's.
		Claim: &rules.Claim{Level: rules.LevelCode, CPU: r.OnCPU},
	})
	return true
}

// place is where a setting was read, in a few words: its file, or the
// command line.
func place(s facts.Setting) string {
	if s.Source == facts.SourceFile {
		return s.File
	}
	return "the " + s.Source
}

// readCallers are the program's functions that made the reads waited for
// (waited, the read waits' stacks), by their share of the wait: in each
// sleep, the first frame rootward of the file system's read that is
// neither outside the program's binary (the kernel, the C library's pread
// wrapper: system), nor a read's entry point by name, nor unnamed.
func readCallers(waited *evidence.Stacks, system evidence.Matcher) []evidence.Site {
	app := func(fn string) bool { return !system(fn) && !readEntry(fn) && fn != "" && fn[0] != '[' }
	caller := waited.CallerOf(frames.KernelFileRead, app)
	// By function: perf's scheduler events name the binary as a frame's
	// file and no line.
	return waited.TopSites(3, func(sm evidence.Sample) *evidence.Frame {
		if f := caller(sm); f != nil {
			return &evidence.Frame{Func: f.Func}
		}
		return nil
	})
}

// readEntry is the way into a read from the program: the system call's
// entry and the C library's wrappers.
var readEntry = evidence.Any(
	evidence.FuncPrefix("vfs_read", "vfs_iter_read", "ksys_read", "ksys_pread", "do_iter_read", "__x64_sys_", "__arm64_sys_",
		"do_syscall_64", "entry_SYSCALL", "__libc_", "__GI_"),
	func(fn string) bool {
		return slices.Contains([]string{"read", "pread", "pread64", "preadv", "preadv2", "readv"}, fn)
	})
