// Package l2downstream reproduces a service whose p99 is set by its calls
// to a downstream (finding class downstream-wait), like the ad exchange in
// the casebook whose 200 ms budget went to waiting on bidders: each request
// needs three answers from a backend that usually replies in ~2 ms but
// sometimes in ~40 ms.
//
//   - Bad: the handler makes the three calls one after the other, so the
//     request takes the sum of three calls and every slow reply lands in
//     the request's latency.
//   - Fixed: the three calls go out in parallel, and a call not answered
//     within the backend's usual latency is hedged (sent again, the first
//     reply wins), so the request takes about one call's time and the slow
//     replies rarely reach it.
//
// The backend is a second HTTP server in the same process on its own
// loopback listener: to the service it is a peer reached over TCP like any
// other. This is "any Go service": it imports nothing from perfdoctor.
package l2downstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// The backend's latency: usually Usual, one reply in SlowEvery takes Slow.
const (
	Usual     = 2 * time.Millisecond
	Slow      = 40 * time.Millisecond
	SlowEvery = 20
	// hedgeAfter is when a call still unanswered is sent again: above the
	// usual latency, far below the slow one.
	hedgeAfter = 4 * Usual
)

var parts = []string{"user", "ads", "price"}

// Handler is the service; Close stops its backend.
type Handler struct {
	variant string
	backend *http.Server
	base    string
	client  *http.Client
}

// NewHandler starts the backend and returns the variant's handler.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("l2downstream: unknown variant %q", variant)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("l2downstream: backend: %w", err)
	}
	h := &Handler{
		variant: variant,
		backend: &http.Server{Handler: http.HandlerFunc(backend)},
		base:    "http://" + l.Addr().String() + "/",
		client:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 2 * time.Second},
	}
	go h.backend.Serve(l)
	return h, nil
}

// backend answers after its usual latency, or a slow one.
func backend(w http.ResponseWriter, r *http.Request) {
	d := Usual
	if rand.IntN(SlowEvery) == 0 {
		d = Slow
	}
	time.Sleep(d)
	fmt.Fprintf(w, "%s=%d\n", r.URL.Path[1:], rand.IntN(1000))
}

func (h *Handler) call(ctx context.Context, part string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+part, nil)
	if err != nil {
		return "", err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// fanOut makes the calls in parallel, one goroutine each, and hedges any
// call not answered within hedgeAfter with a second copy; the first reply
// of each part wins (the context cancels the other when the request ends).
func (h *Handler) fanOut(ctx context.Context, out []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type reply struct {
		part int
		s    string
		err  error
	}
	replies := make(chan reply, 2*len(parts))
	send := func(i int) { s, err := h.call(ctx, parts[i]); replies <- reply{i, s, err} }
	for i := range parts {
		go send(i)
	}
	done := make([]bool, len(parts))
	attempts := make([]int, len(parts))
	for i := range attempts {
		attempts[i] = 1
	}
	timer := time.NewTimer(hedgeAfter)
	defer timer.Stop()
	var errs []error
	for left := len(parts); left > 0; {
		select {
		case r := <-replies:
			attempts[r.part]--
			switch {
			case done[r.part]:
			case r.err == nil:
				out[r.part], done[r.part] = r.s, true
				left--
			case attempts[r.part] == 0:
				errs = append(errs, r.err)
				done[r.part] = true
				left--
			}
		case <-timer.C:
			for i := range parts {
				if !done[i] {
					attempts[i]++
					go send(i) // the hedge
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out := make([]string, len(parts))
	var err error
	if h.variant == Bad {
		for i, p := range parts {
			if out[i], err = h.call(r.Context(), p); err != nil {
				break
			}
		}
	} else {
		err = h.fanOut(r.Context(), out)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, s := range out {
		io.WriteString(w, s)
	}
}

// Close stops the backend.
func (h *Handler) Close() error {
	h.client.CloseIdleConnections()
	return h.backend.Close()
}
