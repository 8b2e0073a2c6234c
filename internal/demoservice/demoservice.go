// Package demoservice is the small Go service `perfdoctor demo` starts,
// loads and diagnoses: a product search whose answers are built from many
// small, short-lived objects over a pointer-rich in-memory index, so the
// garbage collector is its bottleneck. It is the demo's own, apart from the
// casebook, so the perfdoctor binary links none of the casebook's services
// or their libraries.
package demoservice

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The index: products linked to related products through tiny link
// objects, 360k small pointer-only objects (~6 MB) that every GC cycle
// marks again. A search walks matchesPerSearch products and allocates a hit
// per product plus the related candidates (~40 KB of garbage per request):
// under the default GOGC=100 the GC runs many times a second. The index
// stays well under GC002's million live objects, so the demo's finding is
// the allocation rate's (GC001) on a fast machine and a slow one alike: at
// 100,000 products (900k objects, read as 1.2M from the sampled heap
// profile) a CI machine serving 1,700 requests/s ran 3 GC cycles a second
// and read as a scan-bound heap (GC002).
const (
	products         = 40_000
	relatedPer       = 6
	matchesPerSearch = 400
	scoreRounds      = 4
)

type product struct {
	sku     string
	related *link
	stock   *int64
}

type link struct {
	to   *product
	next *link
}

type hit struct {
	p    *product
	next *hit
}

var (
	indexOnce sync.Once
	index     []*product
)

func buildIndex() {
	index = make([]*product, products)
	for i := range index {
		stock := int64(i % 97)
		index[i] = &product{sku: "sku-" + strconv.Itoa(i), stock: &stock}
	}
	for i, p := range index {
		for j := range relatedPer {
			p.related = &link{to: index[(i*7919+j*104729+1)%products], next: p.related}
		}
	}
}

// search answers one request: a page of matching products, the related
// products to suggest, and the best-scoring match.
func search(w http.ResponseWriter, _ *http.Request) {
	first := rand.IntN(len(index))
	seed := rand.Uint64()
	var hits *hit
	suggest := make([]*product, 0, 2*matchesPerSearch*relatedPer+rand.IntN(8))
	for i := range matchesPerSearch {
		p := index[(first+i)%len(index)]
		hits = &hit{p: p, next: hits}
		for l := p.related; l != nil; l = l.next {
			suggest = append(suggest, l.to)
		}
	}
	var n int
	var best uint64
	for h := hits; h != nil; h = h.next {
		best = max(best, score(h.p.sku, seed))
		n++
	}
	buf := make([]byte, 0, 64)
	buf = append(buf, "matches="...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, " suggestions="...)
	buf = strconv.AppendInt(buf, int64(len(suggest)), 10)
	buf = append(buf, " best="...)
	buf = strconv.AppendUint(buf, best, 16)
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(buf)
}

// score stands for the service's own ranking logic: allocation-free work
// (an iterated FNV-1a hash), kept out of line so profiles attribute it.
//
//go:noinline
func score(sku string, seed uint64) uint64 {
	h := seed
	for range scoreRounds {
		for i := 0; i < len(sku); i++ {
			h = (h ^ uint64(sku[i])) * 1099511628211
		}
	}
	return h
}

// Service is the running demo service: the search on AppURL and the
// standard /debug/pprof endpoints on PprofURL, both on loopback.
type Service struct {
	AppURL, PprofURL string
	servers          []*http.Server
}

// Start builds the index and serves until ctx ends or Close is called.
// Addresses are host:port; port 0 picks a free one.
func Start(ctx context.Context, appAddr, pprofAddr string) (*Service, error) {
	indexOnce.Do(buildIndex)
	app := http.NewServeMux()
	app.HandleFunc("/", search)
	prof := http.NewServeMux()
	prof.HandleFunc("/debug/pprof/", pprof.Index)
	prof.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	prof.HandleFunc("/debug/pprof/profile", pprof.Profile)
	prof.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	prof.HandleFunc("/debug/pprof/trace", pprof.Trace)

	s := &Service{}
	for _, l := range []struct {
		addr string
		h    http.Handler
		url  *string
	}{{appAddr, app, &s.AppURL}, {pprofAddr, prof, &s.PprofURL}} {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("demo service: %w", err)
		}
		*l.url = "http://" + ln.Addr().String()
		// No write timeout: /debug/pprof/profile streams for as long as asked.
		srv := &http.Server{Handler: l.h, ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go srv.Serve(ln)
	}
	context.AfterFunc(ctx, func() { s.Close() })
	return s, nil
}

// Close stops both servers, waiting up to 2 s for requests in flight.
func (s *Service) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, srv.Close())
		}
	}
	return errors.Join(errs...)
}

// ReadyPrefix starts the line the demo service prints when it serves; the
// demo waits for it.
const ReadyPrefix = "ready "

// ReadyLine is the line announcing where the service serves.
func (s *Service) ReadyLine() string {
	return fmt.Sprintf("%sapp=%s pprof=%s", ReadyPrefix, s.AppURL, s.PprofURL)
}

// ParseReady reads the URLs back from a ready line (with or without its
// prefix).
func ParseReady(line string) (appURL, pprofURL string, err error) {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "app="); ok {
			appURL = v
		}
		if v, ok := strings.CutPrefix(f, "pprof="); ok {
			pprofURL = v
		}
	}
	if appURL == "" || pprofURL == "" {
		return "", "", fmt.Errorf("unexpected readiness line %q", line)
	}
	return appURL, pprofURL, nil
}
