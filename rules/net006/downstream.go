// Package downstream detects requests whose wall time goes to waiting for
// another service, one call after another (finding class downstream-wait).
package net006

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is NET006.
var Rule = &rules.Rule{
	ID:    "NET006",
	Class: "downstream-wait",
	Doc: rules.Doc{
		Title: "Requests spend their time waiting for a downstream, one call after another",
		Text: `A handler that calls other services one after the other takes the sum of
their latencies, and every slow reply of any of them lands in its own p99: a
backend with a 5% tail at 40 ms puts one request in seven into that tail
when it is called three times. A request that makes one call (a proxy's
whole job) has nothing to reorder: the rule then says, at info level, that
the latency is the downstream's and where to look next. The CPU profile shows none of it; the first
question on call, "why is p99 high", is answered by where the request waited.`,
		Evidence: `The execution trace, per HTTP request path (net/http servers): each
request's wall time from reading it to waiting for the next one on its
connection, by handler, and the time the request's own goroutine waited
inside a client call (net/http's Transport, database/sql, gRPC, redis,
pgx, MySQL, MongoDB, etcd, memcache clients). Waiting on a goroutine of its
own (calls made in parallel) is not counted, nor waiting for a pool's slot
before the call (database/sql's connection, net/http's per-host limit):
that is queueing for the pool (POOL001), where more calls in parallel only
queue more. Reports from 10% of the path's
wall time at 20 requests or more: medium from 25%, high from 50%. The peer
is the process's busiest outbound TCP endpoint from /proc, when known.
Without a trace, the block profile is the second source: time blocked per
second inside client calls whose stack runs a request handler (clients that
wait on a channel for the reply, as net/http's Transport and gRPC do) is the
average number of requests waiting (Little's law), over the handlers in
flight in the goroutine profiles; the finding says which source it used.`,
		Fix: `Make independent calls in parallel (errgroup, or a goroutine per call and a
WaitGroup) so the request takes the slowest call, not the sum; hedge calls
with a long tail (send a second copy when the first has not answered by
about the peer's p95, take the first reply, cancel the other); give each
call a deadline from the request's budget; cache or batch what does not need
a call per request.`,
		Before: `for _, p := range parts { out[p], err = call(ctx, p) }   // sum of latencies`,
		After:  `g, ctx := errgroup.WithContext(ctx); for _, p := range parts { g.Go(func() error { return hedged(ctx, p) }) }; g.Wait()`,
		Caveats: `Calls that depend on each other's results cannot run in parallel; hedging
adds load on the peer (about the share of calls past the hedge delay), so
use it on idempotent reads.`,
		Since: "0.2",
		Refs:  []string{"https://research.google/pubs/the-tail-at-scale/", "https://pkg.go.dev/golang.org/x/sync/errgroup"},
	},
	NeedsOneOf: []rules.Input{rules.Trace, rules.Block},
	Uses:       []rules.Input{rules.Goroutine, rules.System},
	Check:      check,
}

const (
	minRequests        = 20
	minShare           = 0.10
	mediumShare        = 0.25
	highShare          = 0.50
	parallelOrHedgeCut = 0.5 // case L2: p99 132 ms -> 42 ms, 3x the throughput
	// sequentialWaits is the waits per request from which the calls are
	// several one after another: net/http's client waits twice per call
	// (for the request to be written, then for the response), so L2's three
	// calls wait 6 times a request, one call twice, caddy's proxy once.
	sequentialWaits = 2.5
)

// proxies forward each request to one backend: waiting for it is their job.
var proxies = evidence.FuncPrefix(
	"net/http/httputil.(*ReverseProxy)", "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy.",
	"github.com/traefik/traefik/", "github.com/gorilla/websocket.", "google.golang.org/grpc.(*ClientConn).Invoke",
)

func check(pass *rules.Pass) error {
	s, err := pass.Evidence.Trace()
	switch {
	case errors.Is(err, evidence.ErrNoTrace):
		return fromBlock(pass, "no execution trace (perfdoctor collect takes one; or /debug/pprof/trace?seconds=1 under load)")
	case err != nil:
		return fromBlock(pass, "the execution trace could not be read: "+err.Error())
	}
	worst := s.WorstPath(func(w trace.WaitSite) bool {
		return w.HasFunc(frames.DownstreamClient) && !forSlot(funcs(w.Stack))
	}, minRequests)
	best, bestWait, bestShare, isClient := worst.Path, worst.Wait, worst.Share, worst.Sites
	if best == nil || bestShare < minShare {
		return nil
	}
	// The code making the calls: the first application frame of the client
	// wait sites, by time.
	callers := map[trace.Frame]time.Duration{}
	var longest, proxied time.Duration
	for _, w := range best.Waits {
		if !isClient[w.Site] {
			continue
		}
		site := s.Waits[w.Site]
		longest = max(longest, site.Max)
		if site.HasFunc(proxies) {
			proxied += w.Total
		}
		for _, f := range site.Stack {
			if rules.IsApplication(f.Func) && !frames.DownstreamClient(f.Func) {
				callers[f] += w.Total
				break
			}
		}
	}
	var locs []rules.Location
	for f, d := range callers {
		locs = append(locs, rules.Location{Function: f.Func, File: f.File, Line: f.Line, Share: d.Seconds() / bestWait.Seconds(), Role: "call to the downstream (share of the wait)"})
	}
	sortLocations(locs)
	n := best.Latency.Count
	perRequest := bestWait / time.Duration(n)
	shown := []rules.Fact{
		rules.Share("request time waiting for the downstream", bestShare),
		rules.Duration("downstream wait per request", perRequest),
		rules.Count("downstream waits per request", float64(worst.Calls)/float64(n), ""),
		rules.Duration("request latency p50", best.Latency.P50),
		rules.Duration("request latency p99", best.Latency.P99),
		rules.Duration("longest single downstream wait", longest),
		rules.Count("requests seen", float64(n), ""),
		rules.Text("handler", best.Handler),
		rules.Text("source", fmt.Sprintf("execution trace, %s; p99 over the requests it saw", human.RoundDuration(s.Window))),
	}
	peer := busiestPeer(pass.Evidence)
	if peer != "" {
		shown = append(shown, rules.Text("peer (the process's busiest outbound endpoint)", peer))
	}
	summary := fmt.Sprintf("%s spends %s of its request time waiting for a downstream, %s per request (p99 %s)",
		rules.ShortFunc(best.Handler), human.Percent(bestShare), human.RoundDuration(perRequest), human.RoundDuration(best.Latency.P99))
	if peer != "" {
		summary += ", probably " + peer
	}
	if len(locs) > 0 {
		summary += ", called from " + rules.ShortFunc(locs[0].Function)
	}
	f := rules.Finding{
		Severity:    rules.Grade(bestShare, mediumShare, highShare),
		Impact:      bestShare * parallelOrHedgeCut,
		Resource:    "latency",
		ImpactBasis: "share of the request path's wall time spent waiting on downstream calls made one after another; parallel, hedged calls cut p99 from 132 ms to 42 ms in case L2, about half of it",
		Summary:     summary,
		Evidence:    shown,
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats},
		Locations:   locs,
	}
	if waits := float64(worst.Calls) / float64(n); waits < sequentialWaits || proxied >= bestWait/2 {
		// One call per request (a proxy's whole job): nothing to make
		// parallel here, and the wait is the downstream's own latency.
		what := "each request makes one downstream call"
		if proxied >= bestWait/2 {
			what = "a proxy forwards each request to its backend"
		}
		f.Severity, f.Impact, f.Example, f.Caveats = rules.Info, 0, "", nil
		f.Summary += fmt.Sprintf(" (%s: its latency is the downstream's)", what)
		f.ImpactBasis = "nothing for this service to gain by reordering calls: the time is the downstream's, where a diagnosis of the downstream finds it"
		f.Fix = "There is nothing to make parallel: " + what + ". Diagnose the downstream itself (perfdoctor collect or run against it)" +
			peerClause(peer) + "; give each call a deadline from the request's budget; hedge idempotent calls if the downstream's tail is long (the longest wait here is " +
			human.RoundDuration(longest).String() + " against " + human.RoundDuration(perRequest).String() + " per request); cache what does not need a call per request."
	}
	pass.Report(f)
	return nil
}

// peerClause names the peer in a sentence, when it is known.
func peerClause(peer string) string {
	if peer == "" {
		return ""
	}
	return ", probably " + peer
}

func sortLocations(locs []rules.Location) {
	sort.Slice(locs, func(i, j int) bool {
		if locs[i].Share != locs[j].Share {
			return locs[i].Share > locs[j].Share
		}
		return locs[i].Function < locs[j].Function
	})
}

// busiestPeer is the outbound endpoint the target holds the most sockets to.
func busiestPeer(ev *evidence.Evidence) string {
	s := ev.SystemEnd
	if s == nil || s.Net == nil {
		return ""
	}
	best, most := "", 0
	for _, r := range s.Net.Remotes {
		if r.Process > most {
			best, most = r.Addr, r.Process
		}
	}
	return best
}

// forSlot reports whether a waiting stack (leaf first) waits for a pool's
// slot (database/sql's connection, net/http's per-host limit): its first
// frame past the blocking mechanics is the pool's acquire. That wait is
// queueing for the pool, POOL001's; calls made in parallel only queue more
// on the same slots.
func forSlot(stack []string) bool {
	for _, fn := range stack {
		if trace.WaitMechanics(fn) {
			continue
		}
		return frames.PoolAcquire(fn)
	}
	return false
}

func funcs(stack []trace.Frame) []string {
	out := make([]string, len(stack))
	for i, f := range stack {
		out[i] = f.Func
	}
	return out
}
