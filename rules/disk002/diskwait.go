// Package diskwait detects requests waiting for file reads and writes to
// reach the device (finding class disk-io-wait).
package disk002

import (
	"errors"
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is DISK002.
var Rule = &rules.Rule{
	ID:    "DISK002",
	Class: "disk-io-wait",
	Doc: rules.Doc{
		Title: "Requests wait for file reads and writes to reach the disk",
		Text: `A read the page cache cannot serve (a working set larger than memory, direct
I/O, a cold start) or a write that must reach the device waits for the disk:
a fraction of a millisecond on local NVMe, milliseconds on network or busy
disks, and longer when requests queue on the device. The CPU is idle
meanwhile, so a CPU profile shows nothing; the request's latency shows it all.`,
		Evidence: `The execution trace, per HTTP request path (net/http servers): the time the
request's own goroutine spent in file system calls (os.File reads and writes,
pread/pwrite; syncs are DISK001's), its share of the path's wall time and the
calls per request. The host's iowait share of CPU time from /proc/stat is
added when known. Reports from 10% of the path's wall time at 20 requests or
more: medium from 25%, high from 50%.
Without a trace (a native server, any process perf recorded), perf's
sched_switch events (collect --perf, where the kernel permits them): the
threads that serve connections (perf saw them in socket work) asleep in a
file read until the device completes it (a read, pread or preadv, or a
mapped file's page fault, through a file system's read path or the page
cache, in io_schedule: a direct read's wait for its bio, a buffered read's
wait for the page), their share of the serving threads' time with the
reads' on-CPU samples, graded by the same thresholds. Syncs are DISK001's;
sockets, futexes and epoll are not the disk. The gain is the queue's law's,
as DISK001's: from the reads' share of the serving threads' time to their
share of the threads' busy time, at most where the process would use all of
its CPUs. The process's read calls per unit of work (/proc/PID/io) are shown
beside it. A database reading from the disk at every lookup has a cache
smaller than its working set, and for known servers (by the process's name)
the fix names it: MariaDB's and MySQL's innodb_buffer_pool_size, PostgreSQL's
shared_buffers and the memory left to the page cache (effective_cache_size
is only the planner's guess); otherwise a cache sized to the working set,
more memory, or an index where the reads are scans.`,
		Fix: `Keep the working set in memory (a cache in front of the file, or enough RAM
for the page cache; do not bypass it with O_DIRECT unless the service does
its own caching), read fewer and larger blocks (batch the records a request
needs, read ahead), move writes off the request path (a buffered log flushed
by one goroutine), and put the data on a device with lower latency.`,
		Before: `f.ReadAt(buf, off) // per record, per request, O_DIRECT`,
		After:  `cache.Get(key)     // records in memory; misses read whole blocks, off the request path where possible`,
		Caveats: `A cache only helps when the working set fits; for scans larger than memory,
fewer, larger and sequential reads are the fix.`,
		Since: "0.2",
		Refs:  []string{"https://www.kernel.org/doc/html/latest/block/stat.html"},
	},
	NeedsOneOf: []rules.Input{rules.Trace, rules.Perf},
	Uses:       []rules.Input{rules.Host, rules.System},
	Facts:      []facts.Key{facts.CPUStacks, facts.PerfStacks, facts.WorkDone, facts.SystemFrames, facts.Configuration},
	Check:      check,
}

const (
	minRequests = 20
	minShare    = 0.10
	mediumShare = 0.25
	highShare   = 0.50
	// cacheGain: serving case L3's records from memory took it from 2.6k to
	// 55k requests per second, nearly all of the wait.
	cacheGain = 0.9
)

var (
	fileIO = evidence.FuncPrefix("os.(*File).Read", "os.(*File).ReadAt", "os.(*File).Write", "os.(*File).WriteAt",
		"os.(*File).WriteString", "os.(*File).ReadFrom", "os.(*File).pread", "os.(*File).pwrite", "os.(*File).read", "os.(*File).write",
		"os.ReadFile", "os.WriteFile")
	// network is socket I/O; the request path itself runs under net/http.
	network = evidence.FuncPrefix("net.(*netFD).", "net.(*conn).", "crypto/tls.(*Conn).")
	syncing = evidence.FuncPrefix("os.(*File).Sync", "syscall.Fsync", "syscall.Fdatasync", "internal/poll.(*FD).Fsync")
)

func check(pass *rules.Pass) error {
	s, err := pass.Evidence.Trace()
	switch {
	case errors.Is(err, evidence.ErrNoTrace):
		if !fromOffCPU(pass) {
			pass.Skip("needs an execution trace (perfdoctor collect takes one; or /debug/pprof/trace?seconds=1 under load), " +
				"or perf's scheduler events with thread IDs (collect --perf, where the kernel permits them)")
		}
		return nil
	case err != nil:
		pass.Skip("the execution trace could not be read: " + err.Error())
		fromOffCPU(pass)
		return nil
	}
	worst := s.WorstPath(func(w trace.WaitSite) bool {
		return w.Reason == "syscall" && w.HasFunc(fileIO) && !w.HasFunc(network) && !w.HasFunc(syncing)
	}, minRequests)
	best, bestWait, bestCalls, bestShare, isDisk := worst.Path, worst.Wait, worst.Calls, worst.Share, worst.Sites
	if best == nil || bestShare < minShare {
		return nil
	}
	n := best.Latency.Count
	shown := []rules.Fact{
		rules.Share("request time waiting for file I/O", bestShare),
		rules.Count("file system calls per request", float64(bestCalls)/float64(n), ""),
		rules.Duration("mean time in one call", bestWait/time.Duration(max(bestCalls, 1))),
		rules.Duration("request latency p50", best.Latency.P50),
		rules.Duration("request latency p99", best.Latency.P99),
		rules.Count("requests seen", float64(n), ""),
		rules.Text("handler", best.Handler),
	}
	if d, ok := pass.Evidence.SystemDelta(); ok && len(d.CPUs) > 0 {
		t := d.CPUTotal()
		if tot := t.Total(); tot > 0 {
			shown = append(shown, rules.Share("host iowait share of CPU time", t.IOWait/tot))
		}
	}
	// The code reading or writing: the first application frame of the
	// busiest disk wait site of the path.
	var loc []rules.Location
	var top time.Duration
	for _, w := range best.Waits {
		if !isDisk[w.Site] || w.Total <= top {
			continue
		}
		for _, f := range s.Waits[w.Site].Stack {
			if rules.IsApplication(f.Func) {
				top = w.Total
				loc = []rules.Location{{Function: f.Func, File: f.File, Line: f.Line, Share: w.Total.Seconds() / bestWait.Seconds(), Role: "file I/O on the request path (share of the wait)"}}
				break
			}
		}
	}
	summary := fmt.Sprintf("%s spends %s of its request time waiting for file I/O, %.1f calls per request (p99 %s)",
		rules.ShortFunc(best.Handler), human.Percent(bestShare), float64(bestCalls)/float64(n), human.RoundDuration(best.Latency.P99))
	if len(loc) > 0 {
		summary += ", from " + rules.ShortFunc(loc[0].Function)
	}
	pass.Report(rules.Finding{
		Severity:    rules.Grade(bestShare, mediumShare, highShare),
		Impact:      bestShare * cacheGain,
		Resource:    "latency",
		ImpactBasis: "share of the request path's wall time in file system calls; serving the working set from memory removed nearly all of it in case L3",
		Summary:     summary,
		Evidence:    shown,
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats},
		Locations:   loc,
	})
	return nil
}
