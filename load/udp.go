package load

import (
	"context"
	"net"
	"sync"
	"time"
)

// udpConn sends the payload as one datagram per request over a connected
// socket. In request/reply mode it waits for one datagram back (any
// datagram: one request is outstanding per socket, and a reply that arrives
// after its timeout is read as the answer to the next request, which errs
// towards lower latency by at most one request per timeout); in
// fire-and-forget mode the request is the send call.
type udpConn struct {
	cfg Config
	t   *target
	buf []byte

	mu      sync.Mutex
	c       net.Conn
	stopped bool
}

func newUDPConn(cfg Config, t *target) *udpConn {
	return &udpConn{cfg: cfg, t: t, buf: make([]byte, 65536)}
}

func (u *udpConn) connect(ctx context.Context) {
	if u.c == nil {
		_ = u.dial(ctx)
	}
}

func (u *udpConn) dial(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", u.t.hostPort)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stopped {
		c.Close()
		return context.Canceled
	}
	u.c = c
	return nil
}

func (u *udpConn) do(ctx context.Context) string {
	if u.c == nil {
		if err := u.dial(ctx); err != nil {
			return classify(err)
		}
	}
	if err := u.c.SetDeadline(time.Now().Add(u.cfg.Timeout)); err != nil {
		return classify(err)
	}
	if _, err := u.c.Write(u.cfg.Body); err != nil {
		return classify(err)
	}
	if u.cfg.UDPMode == UDPFireForget {
		return ""
	}
	if _, err := u.c.Read(u.buf); err != nil {
		return classify(err)
	}
	return ""
}

func (u *udpConn) abort() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stopped = true
	if u.c != nil {
		u.c.SetDeadline(time.Unix(1, 0))
	}
}

func (u *udpConn) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.c != nil {
		u.c.Close()
		u.c = nil
	}
}
