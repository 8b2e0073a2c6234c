// Package r2relay is a UDP forwarder, a DNS-style relay: each datagram a
// client sends is forwarded to an upstream resolver and the resolver's
// answer relayed back to the client. The bad variant dials and closes an
// upstream socket for every datagram, so most of its CPU is kernel time
// (socket, connect, epoll registration, close) under net.DialUDP and
// Close: the kernel time is the symptom, the per-packet dial its cause.
//
// A datagram starts with a 2-byte query ID, as in DNS.
//
//   - Bad: per datagram, net.DialUDP to the upstream, write, read the
//     answer, close; then answer the client.
//   - Fixed: one connected upstream socket for the relay's life. Each
//     forwarded query gets a relay-chosen ID (clients' IDs may collide); a
//     reader goroutine matches answers to the waiting clients by that ID and
//     restores the client's own.
//
// Relay workers read the ingress socket; the upstream is a resolver the
// relay starts on 127.0.0.1:0 unless one is given. The HTTP side of the
// service only reports counters: the load goes to the UDP ingress.
//
// This is "any Go service": it imports nothing from perfdoctor.
package r2relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
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

const (
	// Workers is how many goroutines read the ingress socket.
	Workers = 4
	// upstreamTimeout bounds the wait for an answer; an ID whose query has
	// waited longer may be reused.
	upstreamTimeout = 2 * time.Second
	maxDatagram     = 1500
)

// Relay is the forwarder. It is an http.Handler for its status page;
// Close stops it.
type Relay struct {
	variant  string
	ingress  *net.UDPConn
	upstream *net.UDPAddr
	resolver *net.UDPConn // the built-in upstream, nil with an external one

	// fixed: the one upstream socket and the queries waiting on it.
	up      *net.UDPConn
	mu      sync.Mutex
	nextID  uint16
	pending map[uint16]waiting // by relay-chosen ID

	relayed, failed atomic.Int64
	wg              sync.WaitGroup
}

// waiting is a forwarded query the fixed variant waits on.
type waiting struct {
	client netip.AddrPort
	id     uint16 // the client's own query ID
	sent   time.Time
}

// New starts the relay on a UDP port of 127.0.0.1. upstream is a UDP
// host:port; "" starts a built-in resolver on 127.0.0.1:0.
func New(variant, upstream string) (*Relay, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("r2relay: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	r := &Relay{variant: variant, pending: make(map[uint16]waiting)}
	if upstream == "" {
		res, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, fmt.Errorf("r2relay: start resolver: %w", err)
		}
		r.resolver, r.upstream = res, res.LocalAddr().(*net.UDPAddr)
		r.wg.Add(1)
		go r.resolve()
	} else {
		addr, err := net.ResolveUDPAddr("udp", upstream)
		if err != nil {
			return nil, fmt.Errorf("r2relay: upstream %q: %w", upstream, err)
		}
		r.upstream = addr
	}
	in, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("r2relay: ingress: %w", err)
	}
	r.ingress = in
	if variant == Fixed {
		if r.up, err = net.DialUDP("udp", nil, r.upstream); err != nil {
			r.Close()
			return nil, fmt.Errorf("r2relay: dial upstream %s: %w", r.upstream, err)
		}
		r.wg.Add(1)
		go r.answers()
	}
	for range Workers {
		r.wg.Add(1)
		go r.serve()
	}
	return r, nil
}

// UDPAddr is the ingress address clients send to.
func (r *Relay) UDPAddr() string { return r.ingress.LocalAddr().String() }

// Relayed counts answers relayed back to clients.
func (r *Relay) Relayed() int64 { return r.relayed.Load() }

// ServeHTTP reports the relay's counters.
func (r *Relay) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "relayed=%d failed=%d upstream=%s\n", r.relayed.Load(), r.failed.Load(), r.upstream)
}

// Close stops the workers, the answer reader and the built-in resolver.
func (r *Relay) Close() error {
	var errs []error
	for _, c := range []*net.UDPConn{r.ingress, r.up, r.resolver} {
		if c != nil {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	r.wg.Wait()
	return errors.Join(errs...)
}

// serve is one relay worker: it reads client datagrams until the ingress
// socket closes.
func (r *Relay) serve() {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	answer := make([]byte, maxDatagram)
	for {
		n, client, err := r.ingress.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < 2 {
			continue // no query ID: not a query
		}
		if r.variant == Bad {
			m, err := r.exchangeDial(buf[:n], answer)
			if err != nil {
				r.failed.Add(1)
				continue
			}
			r.reply(answer[:m], client)
		} else if err := r.forward(buf[:n], client); err != nil {
			r.failed.Add(1)
		}
	}
}

// exchangeDial is the bad variant: a fresh connected socket per datagram,
// i.e. socket + setsockopt + connect + epoll_ctl add, write, read, then
// epoll_ctl del + close.
func (r *Relay) exchangeDial(query, answer []byte) (int, error) {
	c, err := net.DialUDP("udp", nil, r.upstream)
	if err != nil {
		return 0, fmt.Errorf("dial %s: %w", r.upstream, err)
	}
	defer c.Close()
	if _, err := c.Write(query); err != nil {
		return 0, fmt.Errorf("send %s: %w", r.upstream, err)
	}
	if err := c.SetReadDeadline(time.Now().Add(upstreamTimeout)); err != nil {
		return 0, err
	}
	return c.Read(answer)
}

// forward is the fixed variant: the query leaves on the shared socket under
// a relay-chosen ID; answers() relays the answer.
func (r *Relay) forward(query []byte, client netip.AddrPort) error {
	now := time.Now()
	r.mu.Lock()
	id := r.nextID
	if w, busy := r.pending[id]; busy && now.Sub(w.sent) < upstreamTimeout {
		r.mu.Unlock()
		return errors.New("r2relay: 65536 queries in flight")
	}
	r.nextID++
	r.pending[id] = waiting{client: client, id: binary.BigEndian.Uint16(query), sent: now}
	r.mu.Unlock()
	binary.BigEndian.PutUint16(query, id) // the worker's own buffer
	_, err := r.up.Write(query)
	return err
}

// answers reads the shared upstream socket and relays each answer to the
// client waiting on its ID.
func (r *Relay) answers() {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, err := r.up.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < 2 {
			continue
		}
		id := binary.BigEndian.Uint16(buf)
		r.mu.Lock()
		w, ok := r.pending[id]
		delete(r.pending, id)
		r.mu.Unlock()
		if !ok {
			continue // late or unknown answer
		}
		binary.BigEndian.PutUint16(buf, w.id)
		r.reply(buf[:n], w.client)
	}
}

func (r *Relay) reply(answer []byte, client netip.AddrPort) {
	if _, err := r.ingress.WriteToUDPAddrPort(answer, client); err != nil {
		r.failed.Add(1)
		return
	}
	r.relayed.Add(1)
}

// resolve is the built-in upstream: it answers each query with the query
// followed by a fixed answer record.
func (r *Relay) resolve() {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := r.resolver.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		last := buf[n-1]
		out := append(buf[:n], " A 10.0.0."...)
		out = strconv.AppendInt(out, int64(last), 10)
		r.resolver.WriteToUDPAddrPort(out, from)
	}
}
