package trace

import (
	"sort"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// RequestPath is the wall time of the requests one handler served, and
// where it went off the CPU. A request is seen on net/http servers: from
// the connection's goroutine getting the request's first bytes (the end of
// its wait for the next request on a kept-alive connection) to its next
// such wait, so reading the request and writing the response are in it.
// The first request of each connection the trace saw already waiting,
// requests that never waited inside their handler (so that no stack named
// it), and the profiler's own requests (observer) are not counted.
type RequestPath struct {
	// Handler is the first function outside net/http under the connection's
	// serve loop (the handler, or the first middleware); empty when no wait
	// inside the request showed it.
	Handler string
	Latency Dist
	// Waits is the time the requests spent at each wait site, as indexes
	// into Summary.Waits, most time first.
	Waits []SiteTime
}

// SiteTime is the waits at one wait site.
type SiteTime struct {
	Site  int // index into Summary.Waits
	Count int64
	Total time.Duration
}

// maxPaths bounds the request paths kept; further handlers are merged
// into the unnamed path.
const maxPaths = 64

// request is one request in progress on a goroutine. Its waits are few
// sites (Site holds the table index while in progress): a slice, reused
// across the goroutine's requests, beats a map per request.
type request struct {
	start   xtrace.Time
	handler string
	waits   []SiteTime
}

type pathAcc struct {
	handler string
	latency *hist
	waits   map[int32]SiteTime
}

// siteKind is what the analyzer needs to know of a wait site to follow
// requests.
type siteKind struct {
	idle    bool   // a server connection waiting for its next request
	handler string // the handler the stack shows, if any
}

func classifySite(frames []Frame) siteKind {
	serve := -1
	for i, f := range frames {
		if f.Func == "net/http.(*conn).serve" {
			serve = i
			break
		}
	}
	if serve < 0 {
		return siteKind{}
	}
	var k siteKind
	inHandler := false
	for i := serve - 1; i >= 0; i-- {
		switch fn := frames[i].Func; {
		case fn == "net/http.serverHandler.ServeHTTP":
			inHandler = true
		case inHandler && !strings.HasPrefix(fn, "net/http."):
			k.handler = fn
			return k
		}
	}
	if !inHandler {
		for _, f := range frames[:serve] {
			k.idle = k.idle || f.Func == "net/http.(*connReader).Read"
		}
	}
	return k
}

// waitBegins is called when g starts waiting at site i: a wait for the
// next request ends the request in progress.
func (a *analyzer) waitBegins(g *goroutine, i int32, t xtrace.Time) {
	if i < 0 || g.req == nil || g.req.start == 0 || !a.kinds[i].idle {
		return
	}
	a.endRequest(g.req, t)
	g.req.start = 0 // ended; the struct is reused for the next request
}

// waitEnds is called when g's wait at site i of d ends at t, with the
// state it goes to: the time is charged to the request in progress, and
// the end of a wait for the next request begins one.
func (a *analyzer) waitEnds(g *goroutine, i int32, d time.Duration, t xtrace.Time, to xtrace.GoState) {
	if i < 0 {
		return
	}
	k := a.kinds[i]
	switch {
	case g.req != nil && g.req.start != 0:
		r := g.req
		j := 0
		for j < len(r.waits) && r.waits[j].Site != int(i) {
			j++
		}
		if j == len(r.waits) {
			r.waits = append(r.waits, SiteTime{Site: int(i)})
		}
		r.waits[j].Count++
		r.waits[j].Total += d
		if g.req.handler == "" {
			g.req.handler = k.handler
		}
	case k.idle && to != xtrace.GoUndetermined && to != xtrace.GoNotExist:
		if g.req == nil {
			g.req = &request{}
		}
		g.req.start, g.req.handler, g.req.waits = t, "", g.req.waits[:0]
	}
}

func (a *analyzer) endRequest(r *request, t xtrace.Time) {
	if r.handler == "" || observer(r.handler) {
		return // not known to be a request, or the profiler's own
	}
	p := a.paths[r.handler]
	if p == nil {
		if len(a.paths) >= maxPaths {
			p = a.paths[""]
		}
		if p == nil {
			p = &pathAcc{handler: r.handler, latency: newHist(), waits: map[int32]SiteTime{}}
			if len(a.paths) >= maxPaths {
				p.handler = ""
			}
			a.paths[p.handler] = p
		}
	}
	p.latency.record(t.Sub(r.start))
	for _, w := range r.waits {
		acc := p.waits[int32(w.Site)]
		acc.Count += w.Count
		acc.Total += w.Total
		p.waits[int32(w.Site)] = acc
	}
}

// observer reports whether a handler is the profiler's own endpoint
// (net/http/pprof, expvar, perfdoctor's agent): requests the collector made
// while the trace ran, not the service's. Their waits name a handler when
// a service's own requests never wait (casebook L4's p99 was pprof.Index's).
func observer(handler string) bool {
	for _, p := range []string{"net/http/pprof.", "expvar.", "github.com/perfdoctor/perfdoctor/agent."} {
		if strings.HasPrefix(handler, p) {
			return true
		}
	}
	return false
}

// requestPaths returns the paths, most requests first, with wait sites
// renumbered to the sorted table (order maps a site's table index to its
// index in Summary.Waits, -1 if it had no waits).
func (a *analyzer) requestPaths(order []int) []RequestPath {
	var out []RequestPath
	for _, p := range a.paths {
		rp := RequestPath{Handler: p.handler, Latency: p.latency.dist()}
		for i, w := range p.waits {
			if j := order[i]; j >= 0 {
				w.Site = j
				rp.Waits = append(rp.Waits, w)
			}
		}
		sort.Slice(rp.Waits, func(i, j int) bool {
			if rp.Waits[i].Total != rp.Waits[j].Total {
				return rp.Waits[i].Total > rp.Waits[j].Total
			}
			return rp.Waits[i].Site < rp.Waits[j].Site
		})
		out = append(out, rp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Latency.Count != out[j].Latency.Count {
			return out[i].Latency.Count > out[j].Latency.Count
		}
		return out[i].Handler < out[j].Handler
	})
	return out
}

// PathWait is the request path that spends the largest share of its wall
// time waiting at the sites in a class, and what it spent there.
type PathWait struct {
	Path  *RequestPath
	Sites []bool        // per Summary.Waits: whether the site is in the class
	Wait  time.Duration // time the path's requests waited at those sites
	Calls int64         // waits at those sites
	Share float64       // Wait over the path's total request time
}

// WorstPath finds, among request paths with at least minRequests requests,
// the one that spends the largest share of its time waiting at sites for
// which inClass holds. Path is nil when no path waited there.
func (s *Summary) WorstPath(inClass func(WaitSite) bool, minRequests int64) PathWait {
	best := PathWait{Sites: make([]bool, len(s.Waits))}
	for i, w := range s.Waits {
		best.Sites[i] = inClass(w)
	}
	for i := range s.Requests {
		p := &s.Requests[i]
		if p.Latency.Count < minRequests || p.Latency.Total <= 0 {
			continue
		}
		var wait time.Duration
		var calls int64
		for _, w := range p.Waits {
			if best.Sites[w.Site] {
				wait += w.Total
				calls += w.Count
			}
		}
		if share := wait.Seconds() / p.Latency.Total.Seconds(); share > best.Share {
			best.Path, best.Wait, best.Calls, best.Share = p, wait, calls, share
		}
	}
	return best
}
