package net006

import (
	"fmt"
	"slices"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// fromBlock is the view without an execution trace: the block profile's
// time inside client calls made by goroutines running a request handler
// (a client that waits on a channel for its reply, as net/http's Transport
// and gRPC do), over the handlers in flight in the goroutine profiles. By
// Little's law, time waited per second is the average number of requests
// waiting; the goroutine profiles give the average number in flight.
func fromBlock(pass *rules.Pass, why string) error {
	ev := pass.Evidence
	if ev.Platform() != evidence.PlatformGo {
		return nil // a JVM or native process: neither source applies
	}
	w, ok := ev.BlockWaits()
	if !ok {
		pass.Skip(why + "; without one, a block profile (runtime.SetBlockProfileRate) with waits in it would do")
		return nil
	}
	if w.Window <= 0 {
		pass.Skip(why + "; the block profile counts since the process enabled it, not over a window (fetch /debug/pprof/block?seconds=N)")
		return nil
	}
	type caller struct {
		at      evidence.Frame
		handler string
	}
	waits := map[caller]time.Duration{}
	byHandler := map[string]time.Duration{}
	for _, s := range w.Sites {
		if !s.HasFunc(frames.DownstreamClient) || !s.HasFunc(frames.InHandler) {
			continue // not a client call, or made by a goroutine of its own
		}
		if forSlot(blockFuncs(s.Stack)) {
			continue // queueing for a pool's slot, not the downstream's time
		}
		c := caller{handler: handlerOf(s.Stack)}
		for _, f := range s.Stack {
			if rules.IsApplication(f.Func) && !frames.DownstreamClient(f.Func) {
				c.at = f
				break
			}
		}
		waits[c] += s.Delay
		byHandler[c.handler] += s.Delay
	}
	// The handler whose requests wait most.
	handler, total := "", time.Duration(0)
	for h, d := range byHandler {
		if d > total || d == total && h < handler {
			handler, total = h, d
		}
	}
	if total == 0 {
		return nil
	}
	inFlight, snapshots := handlersInFlight(ev, handler)
	if snapshots == 0 {
		pass.Skip(why + "; the block profile needs a goroutine profile beside it to know the requests in flight")
		return nil
	}
	waiting := w.PerSecond(total)
	// Little's law: waiting can exceed what two snapshots saw in flight.
	share := waiting / max(inFlight, waiting)
	if share < minShare {
		return nil
	}
	var locs []rules.Location
	for c, d := range waits {
		if c.handler == handler && c.at.Func != "" {
			locs = append(locs, rules.Location{Function: c.at.Func, File: c.at.File, Line: c.at.Line, Share: d.Seconds() / total.Seconds(), Role: "call to the downstream (share of the wait)"})
		}
	}
	sortLocations(locs)
	shown := []rules.Fact{
		rules.Share("request time waiting for the downstream (estimated)", share),
		rules.Count("requests waiting for it, on average (block profile)", waiting, ""),
		rules.Count("requests in flight, on average (goroutine profiles)", inFlight, ""),
		rules.Text("source", fmt.Sprintf("block profile over %s (no execution trace), requests in flight from %d goroutine profile(s)", human.RoundDuration(w.Window), snapshots)),
	}
	name := "the request handlers"
	if handler != "" {
		shown = append(shown, rules.Text("handler", handler))
		name = rules.ShortFunc(handler)
	}
	summary := fmt.Sprintf("%s spends about %s of its request time waiting for a downstream (block profile)", name, human.Percent(share))
	if peer := busiestPeer(ev); peer != "" {
		shown = append(shown, rules.Text("peer (the process's busiest outbound endpoint)", peer))
		summary += ", probably " + peer
	}
	if len(locs) > 0 {
		summary += ", called from " + rules.ShortFunc(locs[0].Function)
	}
	pass.Report(rules.Finding{
		Severity:    rules.Grade(share, mediumShare, highShare),
		Impact:      share * parallelOrHedgeCut,
		Resource:    "latency",
		ImpactBasis: "time blocked in downstream calls on the request path per second (block profile) over the requests in flight (goroutine profiles); parallel, hedged calls cut p99 from 132 ms to 42 ms in case L2, about half of it",
		Summary:     summary,
		Evidence:    shown,
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats, "Estimated without an execution trace: the requests in flight come from goroutine snapshots, and clients that read the network on the request's own goroutine (most database and cache drivers) block in the network poller, which the block profile does not record."},
		Locations:   locs,
	})
	return nil
}

// handlerOf is the application function the request's handler is: the
// first application frame leafward of the server's handler call.
func handlerOf(stack []evidence.Frame) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if !frames.InHandler(stack[i].Func) {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if rules.IsApplication(stack[j].Func) {
				return stack[j].Func
			}
		}
	}
	return ""
}

// handlersInFlight averages the goroutines running handler ("": any
// request handler) over the goroutine profiles (start and end of the
// window), and says how many profiles it read.
func handlersInFlight(ev *evidence.Evidence, handler string) (float64, int) {
	var sum float64
	n := 0
	for _, k := range []evidence.Kind{evidence.GoroutineStart, evidence.Goroutine} {
		st := evidence.NewStacks(ev.Profiles[k], "")
		if st == nil {
			continue
		}
		n++
		for _, sm := range st.Samples {
			stack := make([]evidence.Frame, len(sm.Frames))
			for i, id := range sm.Frames {
				stack[i] = st.Frames[id]
			}
			if slices.ContainsFunc(stack, func(f evidence.Frame) bool { return frames.InHandler(f.Func) }) && handlerOf(stack) == handler {
				sum += float64(sm.Value)
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

func blockFuncs(stack []evidence.Frame) []string {
	out := make([]string, len(stack))
	for i, f := range stack {
		out[i] = f.Func
	}
	return out
}
