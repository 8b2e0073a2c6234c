// Package net004 detects netfilter's connection tracking table near its
// limit or dropping packets (finding class conntrack-pressure).
package net004

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is NET004.
var Rule = &rules.Rule{
	ID:    "NET004",
	Class: "conntrack-pressure",
	Doc: rules.Doc{
		Title: "The connection tracking table is nearly full",
		Text: `With netfilter connection tracking loaded (NAT, Docker and Kubernetes
networking, stateful firewall rules), every flow takes an entry in a table of
nf_conntrack_max entries, kept for minutes after the flow ends. When the table
is full, new connections' packets are dropped ("nf_conntrack: table full,
dropping packet"): clients see connect timeouts and retransmissions, not errors.`,
		Evidence: `nf_conntrack_count against nf_conntrack_max at the end of the window, and
the drop, early_drop and insert_failed counters of /proc/net/stat/nf_conntrack
over the window. Low from 50% full, medium from 75%, high from 90% or any drop.`,
		Fix: `Cut the flows first: reuse connections (keep-alive, pools) so each request is
not a new tracked flow. Then size the table: raise net.netfilter.nf_conntrack_max
(and the hash size, nf_conntrack_buckets, to about max/4), shorten
nf_conntrack_tcp_timeout_time_wait, or exempt high-volume local traffic from
tracking with a NOTRACK (raw table) rule.`,
		Before: `net.netfilter.nf_conntrack_max = 65536, 60000 tracked flows`,
		After:  `keep-alive to the backends; nf_conntrack_max = 262144`,
		Caveats: `The table is the whole host's (or network namespace's); the flows may be
another program's.`,
		Since: "0.1",
		Refs:  []string{"https://www.kernel.org/doc/html/latest/networking/nf_conntrack-sysctl.html"},
	},
	Needs: []rules.Input{rules.Host},
	Check: check,
}

const low, medium, high = 0.50, 0.75, 0.90

func check(pass *rules.Pass) error {
	d, _ := pass.Evidence.SystemDelta()
	if d.End.Net == nil || d.End.Net.Conntrack == nil || d.End.Net.Conntrack.Max == 0 {
		return nil // no connection tracking: nothing to fill
	}
	end := d.End.Net.Conntrack
	full := float64(end.Count) / float64(end.Max)
	var drops uint64
	if d.Start.Net != nil && d.Start.Net.Conntrack != nil {
		start := d.Start.Net.Conntrack
		for _, c := range [][2]uint64{{start.Drops, end.Drops}, {start.EarlyDrops, end.EarlyDrops}, {start.InsertFailed, end.InsertFailed}} {
			if c[1] > c[0] {
				drops += c[1] - c[0]
			}
		}
	}
	if full < low && drops == 0 {
		return nil
	}
	sev := rules.Grade(full, medium, high)
	if drops > 0 {
		sev = rules.High
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      full,
		Resource:    "latency",
		ImpactBasis: "how full the conntrack table is; at 100% new flows' packets are dropped",
		Summary:     fmt.Sprintf("conntrack table %s full (%d of %d entries)", human.Percent(full), end.Count, end.Max),
		Evidence: []rules.Fact{
			rules.Share("conntrack table full", full),
			rules.Count("tracked flows", float64(end.Count), ""),
			rules.Count("nf_conntrack_max", float64(end.Max), ""),
			rules.Count("packets dropped for a full table in the window", float64(drops), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	if drops > 0 {
		f.Summary += fmt.Sprintf("; %d packets dropped in the window", drops)
		f.Impact = 1
	}
	pass.Report(f)
	return nil
}
