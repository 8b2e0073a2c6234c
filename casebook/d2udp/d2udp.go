// Package d2udp reproduces casebook case D2, connection-churn: a UDP -> Redis
// -> UDP service that did net.DialUDP + Write + Close for every outgoing packet
// (socket, setsockopt, connect, epoll_ctl add, close syscalls) at ~30% of CPU.
// A sync.Pool of connected UDP sockets per destination, kept in a sync.Map,
// took it from 140k to 170k QPS.
//
// Here an HTTP ingress handler sends Datagrams small UDP datagrams per request
// to a downstream address: a sink the handler starts on 127.0.0.1:0 unless a
// downstream is given.
//
// This is "any Go service": it imports nothing from perfdoctor.
package d2udp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// Datagrams is how many datagrams each request sends downstream.
const Datagrams = 8

// Handler is the ingress service. It is an http.Handler; Close releases the
// sink and pooled sockets.
type Handler struct {
	variant string
	dst     *net.UDPAddr
	pools   udpPools
	seq     atomic.Uint64

	sink     *net.UDPConn // nil when an external downstream was given
	received atomic.Int64
	sinkDone chan struct{}
}

// NewHandler returns the variant's handler. downstream is a UDP host:port; ""
// starts a discarding sink on 127.0.0.1:0.
func NewHandler(variant, downstream string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("d2udp: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant}
	if downstream == "" {
		sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, fmt.Errorf("d2udp: start sink: %w", err)
		}
		_ = sink.SetReadBuffer(4 << 20) // fewer drops under bursts; not required
		h.sink, h.sinkDone = sink, make(chan struct{})
		h.dst = sink.LocalAddr().(*net.UDPAddr)
		go h.drain()
	} else {
		dst, err := net.ResolveUDPAddr("udp", downstream)
		if err != nil {
			return nil, fmt.Errorf("d2udp: downstream %q: %w", downstream, err)
		}
		h.dst = dst
	}
	return h, nil
}

// Downstream is the address datagrams are sent to.
func (h *Handler) Downstream() string { return h.dst.String() }

// Received counts datagrams the built-in sink has read (0 with an external
// downstream).
func (h *Handler) Received() int64 { return h.received.Load() }

// Close stops the sink and closes pooled sockets still reachable.
func (h *Handler) Close() error {
	h.pools.closeAll()
	if h.sink == nil {
		return nil
	}
	err := h.sink.Close()
	<-h.sinkDone
	return err
}

func (h *Handler) drain() {
	defer close(h.sinkDone)
	buf := make([]byte, 2048)
	for {
		if _, _, err := h.sink.ReadFromUDP(buf); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		h.received.Add(1)
	}
}

// ServeHTTP fans one request out to Datagrams downstream datagrams.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	var buf [64]byte
	msg := append(buf[:0], "evt seq="...)
	msg = strconv.AppendUint(msg, seq, 10)
	msg = append(msg, " part="...)
	n := len(msg)
	for i := range Datagrams {
		msg = strconv.AppendInt(msg[:n], int64(i), 10)
		var err error
		if h.variant == Bad {
			err = sendDial(h.dst, msg)
		} else {
			err = h.pools.send(h.dst, msg)
		}
		if err != nil {
			http.Error(w, "downstream: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("ok\n"))
}

// sendDial is the bad variant: a fresh connected socket per datagram, i.e.
// socket + setsockopt + connect + epoll_ctl add + write + epoll_ctl del + close.
func sendDial(dst *net.UDPAddr, msg []byte) error {
	c, err := net.DialUDP("udp", nil, dst)
	if err != nil {
		return fmt.Errorf("dial %s: %w", dst, err)
	}
	_, err = c.Write(msg)
	if cerr := c.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("send %s: %w", dst, err)
	}
	return nil
}

// udpPools is the fixed variant: per destination a sync.Pool of connected
// sockets, kept in a sync.Map, so a datagram costs one write syscall.
//
// Caveat (reply cross-talk): a connected UDP socket also receives the
// destination's replies. If one caller reads replies and another never does,
// sharing a destination's pool lets a socket carry a stale reply to the next
// user. Keep separate pools for callers that read replies and callers that do
// not (this service never reads). sync.Pool may drop idle sockets at any GC;
// the runtime's finalizer on the socket then closes it.
type udpPools struct {
	m sync.Map // netip.AddrPort -> *sync.Pool of *net.UDPConn
}

func (p *udpPools) pool(dst *net.UDPAddr) *sync.Pool {
	key := dst.AddrPort() // comparable, no allocation
	if v, ok := p.m.Load(key); ok {
		return v.(*sync.Pool)
	}
	v, _ := p.m.LoadOrStore(key, new(sync.Pool))
	return v.(*sync.Pool)
}

func (p *udpPools) send(dst *net.UDPAddr, msg []byte) error {
	pl := p.pool(dst)
	c, _ := pl.Get().(*net.UDPConn)
	if c == nil {
		var err error
		if c, err = net.DialUDP("udp", nil, dst); err != nil {
			return fmt.Errorf("dial %s: %w", dst, err)
		}
	}
	if _, err := c.Write(msg); err != nil {
		c.Close() // a socket that failed is not reused
		return fmt.Errorf("send %s: %w", dst, err)
	}
	pl.Put(c)
	return nil
}

// closeAll closes the sockets the pools still hold.
func (p *udpPools) closeAll() {
	p.m.Range(func(k, v any) bool {
		pl := v.(*sync.Pool)
		for {
			c, _ := pl.Get().(*net.UDPConn)
			if c == nil {
				break
			}
			c.Close()
		}
		p.m.Delete(k)
		return true
	})
}

// compile-time check
var _ http.Handler = (*Handler)(nil)
