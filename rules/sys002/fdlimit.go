// Package sys002 detects a process running out of file descriptors
// (finding class fd-exhaustion).
package sys002

import (
	"fmt"
	"math"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is SYS002.
var Rule = &rules.Rule{
	ID:    "SYS002",
	Class: "fd-exhaustion",
	Doc: rules.Doc{
		Title: "The process is running out of file descriptors",
		Text: `Every socket and open file takes a descriptor, up to the process's
RLIMIT_NOFILE. At the limit accept() and connect() fail with EMFILE ("too many
open files"): a Go HTTP server logs "Accept error ... retrying" and sleeps,
clients time out. A count that only grows is a leak (response bodies or files
never closed).`,
		Evidence: `Open descriptors (/proc/PID/fd) against the soft limit (/proc/PID/limits) at
the end of the window, and their growth over it. Low from 50%, medium from
80%, high from 95% or when the growth would reach the limit within 10
minutes. The growth projected leaves out the clients on this host that
connected to the process's listeners over the window (established sockets
whose remote end is a listener the process holds): those descriptors are
the load's connections, closed when it ends, and a window that starts
between two of a benchmark's runs and ends inside one sees them all open
at once. memcached under memcaslap's 256 connections a run (corpus
native-memcached-get-per-key): 14 descriptors at the window's start,
142 at its end, 0 and 128 local clients established, read until then as
6.4 new descriptors a second reaching the limit of 1,024 in 2m18s.`,
		Fix: `Close what is opened: response bodies (defer resp.Body.Close() after reading
to EOF), files, connections that a pool should have reused. If the count is
steady and simply high (a busy proxy), raise the limit: LimitNOFILE= in the
systemd unit, ulimit -n, or the container runtime's nofile ulimit.`,
		Before: `resp, _ := client.Get(u); json.NewDecoder(resp.Body).Decode(&v)   // body never closed`,
		After:  `resp, _ := client.Get(u); defer resp.Body.Close(); json.NewDecoder(resp.Body).Decode(&v)`,
		Since:  "0.1",
		Refs:   []string{"https://man7.org/linux/man-pages/man2/getrlimit.2.html"},
	},
	Needs: []rules.Input{rules.System},
	Uses:  []rules.Input{rules.Host},
	Check: check,
}

const (
	low, medium, high = 0.50, 0.80, 0.95
	soonEnough        = 10 * time.Minute
)

func check(pass *rules.Pass) error {
	p := pass.Evidence.SystemEnd.Process
	if p.FDLimit == 0 || p.FDLimit > math.MaxInt32 {
		return nil // unlimited
	}
	used := float64(p.OpenFDs) / float64(p.FDLimit)
	var growth, clients float64 // descriptors per second; of them, the load's connections
	if d, ok := pass.Evidence.SystemDelta(); ok && d.Start.Process != nil && d.Start.Process.PID == p.PID && d.Seconds > 0 {
		growth = float64(p.OpenFDs-d.Start.Process.OpenFDs) / d.Seconds
		clients = float64(clientsGained(d)) / d.Seconds
	}
	// Descriptors that are clients' connections follow the load: they
	// close when it ends, so they are no leak to project.
	leak := growth - max(clients, 0)
	var eta time.Duration
	if leak > 0 {
		eta = time.Duration(float64(int(p.FDLimit)-p.OpenFDs) / leak * float64(time.Second))
	}
	sev := rules.Grade(used, medium, high)
	soon := eta > 0 && eta < soonEnough && used >= 0.1
	if soon {
		sev = rules.High
	}
	if used < low && !soon {
		return nil
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      used,
		Resource:    "latency",
		ImpactBasis: "share of the descriptor limit in use; at 100% accept and connect fail",
		Summary:     fmt.Sprintf("%d of %d file descriptors open (%s)", p.OpenFDs, p.FDLimit, human.Percent(used)),
		Evidence: []rules.Fact{
			rules.Share("descriptors in use", used),
			rules.Count("open descriptors", float64(p.OpenFDs), ""),
			rules.Count("RLIMIT_NOFILE", float64(p.FDLimit), ""),
			rules.Count("growth", growth, "/s"),
			rules.Count("of it, local clients' connections on its listeners", clients, "/s"),
		},
		Fix: pass.Rule.Doc.Fix,
	}
	if soon {
		f.Summary += fmt.Sprintf(", growing %.1f/s: the limit is reached in about %s", leak, eta.Round(time.Second))
		f.Impact = math.Max(used, 0.5)
	}
	pass.Report(f)
	return nil
}

// clientsGained is how many more clients on this host held connections to
// the process's listeners at the window's end than at its start.
func clientsGained(d *evidence.SystemDelta) int {
	if d.End.Net == nil {
		return 0
	}
	n := 0
	for _, l := range d.End.Net.Listeners {
		if l.Process {
			n += rules.LocalClients(d.End, l) - rules.LocalClients(d.Start, l)
		}
	}
	return n
}
