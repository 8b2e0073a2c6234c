// Package sys002 detects a process running out of file descriptors
// (finding class fd-exhaustion).
package sys002

import (
	"fmt"
	"math"
	"time"

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
minutes.`,
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
	var growth float64 // descriptors per second
	if d, ok := pass.Evidence.SystemDelta(); ok && d.Start.Process != nil && d.Start.Process.PID == p.PID && d.Seconds > 0 {
		growth = float64(p.OpenFDs-d.Start.Process.OpenFDs) / d.Seconds
	}
	var eta time.Duration
	if growth > 0 {
		eta = time.Duration(float64(int(p.FDLimit)-p.OpenFDs) / growth * float64(time.Second))
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
		},
		Fix: pass.Rule.Doc.Fix,
	}
	if soon {
		f.Summary += fmt.Sprintf(", growing %.1f/s: the limit is reached in about %s", growth, eta.Round(time.Second))
		f.Impact = math.Max(used, 0.5)
	}
	pass.Report(f)
	return nil
}
