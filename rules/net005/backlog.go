// Package net005 detects listen queues overflowing: connections the kernel
// completed but the server did not accept in time (finding class
// listen-backlog).
package net005

import (
	"fmt"
	"math"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is NET005.
var Rule = &rules.Rule{
	ID:    "NET005",
	Class: "listen-backlog",
	Doc: rules.Doc{
		Title: "The accept queue overflows",
		Text: `A listening socket queues connections whose handshake completed until the
server accepts them, up to min(the backlog passed to listen, somaxconn). When
the queue is full the kernel drops the client's final ACK (ListenOverflows,
ListenDrops) or answers SYNs with cookies; the client retransmits after a
second or more, so a full accept queue shows up as 1 s and 3 s latency steps,
not as errors.`,
		Evidence: `TcpExt.ListenOverflows, ListenDrops and SyncookiesSent from /proc/net/netstat
over the window, against Tcp.PassiveOpens (accepted connections); the
listening sockets' current queue against their backlog from /proc/net/tcp.
Medium from any overflow, high from 1% of new connections or 10 a second.`,
		Fix: `Accept faster: keep the accept loop free (Go's net/http accepts in its own
goroutine; make sure the process has CPU: no throttling, GOMAXPROCS matching
the quota) and keep connections alive so fewer are opened. Then make the
queue deeper: raise net.core.somaxconn (Go's net.Listen uses it as the backlog,
after a restart) and net.ipv4.tcp_max_syn_backlog; servers that pass their
own backlog (nginx listen ... backlog=, Java's ServerSocket) need it raised too.`,
		Before: `net.core.somaxconn = 128`,
		After:  `net.core.somaxconn = 4096, restart the service`,
		Caveats: `The counters are the whole network namespace's: another listener may be
the one overflowing; the listeners list shows which queues are full now.`,
		Since: "0.1",
		Refs:  []string{"https://man7.org/linux/man-pages/man2/listen.2.html"},
	},
	Needs: []rules.Input{rules.Host},
	Check: check,
}

func check(pass *rules.Pass) error {
	d, _ := pass.Evidence.SystemDelta()
	if d.End.Net == nil || d.Start.Net == nil {
		pass.Skip("the system snapshots have no network counters")
		return nil
	}
	overflows, ok1 := d.Counter("TcpExt.ListenOverflows")
	drops, ok2 := d.Counter("TcpExt.ListenDrops")
	if !ok1 && !ok2 {
		pass.Skip("/proc/net/netstat had no ListenOverflows or ListenDrops")
		return nil
	}
	lost := max(overflows, drops) // ListenDrops includes the overflows
	cookies, _ := d.Counter("TcpExt.SyncookiesSent")
	if lost == 0 && cookies == 0 {
		return nil
	}
	opens, _ := d.Counter("Tcp.PassiveOpens")
	frac := float64(lost) / float64(max(opens+lost, 1))
	rate := float64(lost) / math.Max(d.Seconds, 1)
	sev := rules.Medium
	if frac >= 0.01 || rate >= 10 {
		sev = rules.High
	}
	if lost == 0 {
		sev = rules.Low // cookies alone: the SYN queue, not yet the accept queue
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      math.Min(math.Max(frac, 0.01), 1),
		Resource:    "latency",
		ImpactBasis: "share of new connections that overflowed the accept queue, each delayed by the client's retransmit (1 s and more)",
		Summary:     fmt.Sprintf("%d connections overflowed accept queues in %.0f s (%s of new connections)", lost, d.Seconds, human.Percent(frac)),
		Evidence: []rules.Fact{
			rules.Count("ListenOverflows in the window", float64(overflows), ""),
			rules.Count("ListenDrops in the window", float64(drops), ""),
			rules.Count("SYN cookies sent in the window", float64(cookies), ""),
			rules.Count("connections accepted in the window (PassiveOpens)", float64(opens), ""),
			rules.Count("net.core.somaxconn", float64(d.End.Net.Sysctls.Somaxconn), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	if lost == 0 {
		f.Summary = fmt.Sprintf("%d SYN cookies sent in %.0f s: the SYN queue is full", cookies, d.Seconds)
	}
	for _, l := range d.End.Net.Listeners {
		if l.Backlog > 0 && l.Queue*2 >= l.Backlog {
			f.Evidence = append(f.Evidence, rules.Text("listener with a filling queue", fmt.Sprintf("%s: %d of %d", l.Addr, l.Queue, l.Backlog)))
		}
	}
	pass.Report(f)
	return nil
}
