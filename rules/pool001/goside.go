package pool001

import (
	"errors"
	"slices"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/rules"
)

// goWait is where a Go service's requests waited for a pool's slot.
type goWait struct {
	pool *frames.Pool // nil for a channel used as a semaphore
	// at is the service's own frame that waited (the channel send, or the
	// call into the library that queued).
	at evidence.Frame
	// share is the part of request time spent waiting there; from says
	// how it was read.
	share float64
	from  string
	// waited is the mean wait of the requests that waited; requests how
	// many requests the reading saw (trace).
	waited   time.Duration
	requests int64
	handler  string
	// queued and holders are the goroutines waiting for a slot and using
	// one, on average over the goroutine profiles; inFlight the requests
	// in flight there. Zero without goroutine profiles.
	queued, holders, inFlight float64
	maxHolders                int
	// offCPU is the share of a request's time past the wait (its hold of
	// the slot and what follows) that the trace saw it blocked rather
	// than running: near 1 when the slot is held across a call to a
	// backend, near 0 when the holder computes. -1 without a trace.
	offCPU float64
}

// name is the pool as the finding names it.
func (w *goWait) name() string {
	if w.pool != nil {
		return w.pool.Name
	}
	return "a channel used as a semaphore at " + rules.SiteName(w.at)
}

// semaphoreSend is a wait on a channel send in the service's own code: a
// buffered channel full of tokens, the idiom for a semaphore or a bounded
// queue in front of workers.
func semaphoreSend(reason string, stack []evidence.Frame) (evidence.Frame, bool) {
	if reason != "" && reason != "chan send" {
		return evidence.Frame{}, false
	}
	sends := false
	for _, f := range stack {
		if f.Func == "runtime.chansend1" || f.Func == "runtime.chansend" {
			sends = true
			continue
		}
		if trace.WaitMechanics(f.Func) {
			continue
		}
		return f, sends && rules.IsApplication(f.Func)
	}
	return evidence.Frame{}, false
}

// acquiring classifies a waiting stack (leaf first): the pool it waits for
// and the service's frame that asked, or ok false. The wait must be the
// pool's own (its acquiring frame right above the blocking mechanism), not
// a connection being opened below it.
func acquiring(reason string, stack []evidence.Frame) (*frames.Pool, evidence.Frame, bool) {
	for j, f := range stack {
		if trace.WaitMechanics(f.Func) {
			continue
		}
		for i := range frames.Pools {
			if p := &frames.Pools[i]; p.Acquire(f.Func) {
				return p, caller(stack[j+1:]), true
			}
		}
		break
	}
	if at, ok := semaphoreSend(reason, stack); ok {
		return nil, at, true
	}
	return nil, evidence.Frame{}, false
}

// caller is the first frame of the service's own code in a stack.
func caller(stack []evidence.Frame) evidence.Frame {
	for _, f := range stack {
		if rules.IsApplication(f.Func) {
			return f
		}
	}
	return evidence.Frame{}
}

func traceFrames(fs []trace.Frame) []evidence.Frame {
	out := make([]evidence.Frame, len(fs))
	for i, f := range fs {
		out[i] = evidence.Frame{Func: f.Func, File: f.File, Line: f.Line}
	}
	return out
}

// minRequests is the requests a request path needs in the trace for its
// wait share to be read (NET006's bar).
const minRequests = 20

// fromTrace reads the execution trace: the request path that spends the
// largest share of its time waiting for a pool's slot.
func fromTrace(ev *evidence.Evidence) (*goWait, bool) {
	s, err := ev.Trace()
	if err != nil {
		if !errors.Is(err, evidence.ErrNoTrace) {
			return nil, false
		}
		return nil, false
	}
	worst := s.WorstPath(func(w trace.WaitSite) bool {
		_, _, ok := acquiring(w.Reason, traceFrames(w.Stack))
		return ok
	}, minRequests)
	if worst.Path == nil || worst.Wait <= 0 {
		return nil, false
	}
	// The site with the most of the path's wait names the pool.
	var top trace.SiteTime
	for _, w := range worst.Path.Waits {
		if worst.Sites[w.Site] && w.Total > top.Total {
			top = w
		}
	}
	site := s.Waits[top.Site]
	pool, at, _ := acquiring(site.Reason, traceFrames(site.Stack))
	w := &goWait{pool: pool, at: at, share: worst.Share, from: "execution trace", requests: worst.Path.Latency.Count,
		handler: worst.Path.Handler, offCPU: -1}
	var blocked time.Duration
	for _, pw := range worst.Path.Waits {
		if !worst.Sites[pw.Site] {
			blocked += pw.Total
		}
	}
	if rest := worst.Path.Latency.Total - worst.Wait; rest > 0 {
		w.offCPU = min(blocked.Seconds()/rest.Seconds(), 1)
	}
	if top.Count > 0 {
		w.waited = top.Total / time.Duration(top.Count)
	}
	return w, true
}

// fromGoroutines reads the goroutine profiles (start and end of the
// window): request goroutines waiting for a pool's slot against those in
// flight, and the goroutines using a slot.
func fromGoroutines(ev *evidence.Evidence) (*goWait, bool) {
	byPool := map[string]*goWait{}
	var order []string
	holders := map[string][]int{} // by pool, per snapshot
	var inFlight float64
	snapshots := 0
	for _, k := range []evidence.Kind{evidence.GoroutineStart, evidence.Goroutine} {
		st := evidence.NewStacks(ev.Profiles[k], "")
		if st == nil {
			continue
		}
		held := map[string]int{}
		for _, sm := range st.Samples {
			stack := make([]evidence.Frame, len(sm.Frames))
			for i, id := range sm.Frames {
				stack[i] = st.Frames[id]
			}
			if !slices.ContainsFunc(stack, func(f evidence.Frame) bool { return frames.InHandler(f.Func) }) {
				continue
			}
			inFlight += float64(sm.Value)
			if pool, at, ok := acquiring("", stack); ok {
				key := at.Func
				if pool != nil {
					key = pool.Name
				}
				w := byPool[key]
				if w == nil {
					w = &goWait{pool: pool, at: at, from: "goroutine profiles", offCPU: -1}
					byPool[key] = w
					order = append(order, key)
				}
				w.queued += float64(sm.Value)
				continue
			}
			for i := range frames.Pools {
				p := &frames.Pools[i]
				if p.Held != nil && slices.ContainsFunc(stack, func(f evidence.Frame) bool { return p.Held(f.Func) }) {
					held[p.Name] += int(sm.Value)
				}
			}
		}
		for name, n := range held {
			holders[name] = append(holders[name], n)
		}
		snapshots++
	}
	var best *goWait
	for _, key := range order {
		if w := byPool[key]; best == nil || w.queued > best.queued {
			best = w
		}
	}
	if best == nil || inFlight <= 0 {
		return nil, false
	}
	n := float64(snapshots)
	best.queued, best.inFlight = best.queued/n, inFlight/n
	if best.pool != nil {
		for _, h := range holders[best.pool.Name] {
			best.holders += float64(h) / n
			best.maxHolders = max(best.maxHolders, h)
		}
	}
	// Little's law: the share of requests in flight that wait for a slot
	// is the share of request time spent waiting.
	best.share = best.queued / best.inFlight
	return best, true
}
