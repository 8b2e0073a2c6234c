// Package e2ports reproduces casebook cases E2 and A6,
// ephemeral-port-exhaustion: a service calls a backend over a new TCP
// connection per request, so closed connections pile up in TIME_WAIT (60 s
// each) until the local ports for that one destination run short. With the
// default ip_local_port_range (28232 ports) the ceiling is about 470 new
// connections per second per destination.
//
// Each request sends one line to a backend that the handler starts on
// 127.0.0.1 and reads its one-line answer.
//
//   - Bad: dial, ask, close, per request. The client closes first, so the
//     TIME_WAIT entries are on the service's side and keyed by the backend's
//     address. New connections are rate limited to MaxDialRate (above the
//     ceiling) and capped at MaxDials per process, so the reproduction
//     stays bounded and never takes the whole host's ports.
//   - Fixed: the same exchange over a pool of kept-alive connections.
//
// The backend listens on a port below the default ephemeral range, as real
// backends do, so its port is never one the kernel hands out to clients.
//
// This is "any Go service": it imports nothing from perfdoctor.
package e2ports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// Bounds of the bad variant: the dial rate is about three times the default
// per-destination ceiling, and the total stays well under the 28232 ports.
const (
	MaxDialRate = 1500 // new connections per second
	MaxDials    = 20000
	maxIdle     = 32
)

// Handler is the service. Close stops the backend and closes pooled connections.
type Handler struct {
	variant string
	backend net.Listener
	addr    string

	idle     chan *conn
	dials    atomic.Int64
	accepted atomic.Int64

	paceMu sync.Mutex
	next   time.Time // when the next dial may start

	wg      sync.WaitGroup
	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
}

type conn struct {
	c net.Conn
	r *bufio.Reader
}

// NewHandler starts the backend and returns the variant's handler.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("e2ports: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	ln, err := listenBelowEphemeral()
	if err != nil {
		return nil, err
	}
	h := &Handler{variant: variant, backend: ln, addr: ln.Addr().String(), idle: make(chan *conn, maxIdle), conns: map[net.Conn]struct{}{}}
	h.wg.Go(h.serveBackend)
	return h, nil
}

// BackendAddr is the backend's host:port: the destination whose ports run out.
func (h *Handler) BackendAddr() string { return h.addr }

// listenBelowEphemeral listens on 127.0.0.1 at a free port in 20000-32767.
func listenBelowEphemeral() (net.Listener, error) {
	var err error
	for range 50 {
		var ln net.Listener
		ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(20000+rand.IntN(12768)))
		if err == nil {
			return ln, nil
		}
	}
	return nil, fmt.Errorf("e2ports: backend listener: %w", err)
}

// serveBackend answers each line with "pong" until the client closes.
func (h *Handler) serveBackend() {
	for {
		c, err := h.backend.Accept()
		if err != nil {
			return
		}
		h.accepted.Add(1)
		h.connsMu.Lock()
		h.conns[c] = struct{}{}
		h.connsMu.Unlock()
		h.wg.Go(func() {
			defer func() {
				h.connsMu.Lock()
				delete(h.conns, c)
				h.connsMu.Unlock()
				c.Close()
			}()
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadSlice('\n'); err != nil {
					return // the client closed first: TIME_WAIT is on its side
				}
				if _, err := c.Write([]byte("pong\n")); err != nil {
					return
				}
			}
		})
	}
}

var errBudget = errors.New("e2ports: the bad variant's dial budget is spent; restart the service")

// ServeHTTP asks the backend once and answers with its reply.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var err error
	if h.variant == Bad {
		err = h.askNewConn()
	} else {
		err = h.askPooled()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "pong\n")
}

func (h *Handler) askNewConn() error {
	if h.dials.Add(1) > MaxDials {
		return errBudget
	}
	h.pace()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return ask(&conn{c: c, r: bufio.NewReader(c)})
}

// pace spaces dials MaxDialRate a second apart.
func (h *Handler) pace() {
	h.paceMu.Lock()
	now := time.Now()
	if h.next.Before(now) {
		h.next = now
	}
	wait := h.next.Sub(now)
	h.next = h.next.Add(time.Second / MaxDialRate)
	h.paceMu.Unlock()
	time.Sleep(wait)
}

func (h *Handler) askPooled() error {
	var c *conn
	select {
	case c = <-h.idle:
	default:
		nc, err := net.Dial("tcp", h.addr)
		if err != nil {
			return err
		}
		c = &conn{c: nc, r: bufio.NewReader(nc)}
	}
	if err := ask(c); err != nil {
		c.c.Close()
		return err
	}
	select {
	case h.idle <- c:
	default:
		c.c.Close()
	}
	return nil
}

func ask(c *conn) error {
	if _, err := c.c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := c.r.ReadSlice('\n')
	return err
}

// Accepted is how many connections the backend has accepted.
func (h *Handler) Accepted() int64 { return h.accepted.Load() }

// Close stops the backend and waits for its connections to end.
func (h *Handler) Close() error {
	err := h.backend.Close()
	for {
		select {
		case c := <-h.idle:
			c.c.Close()
			continue
		default:
		}
		break
	}
	h.connsMu.Lock()
	for c := range h.conns {
		c.Close()
	}
	h.connsMu.Unlock()
	h.wg.Wait()
	return err
}
