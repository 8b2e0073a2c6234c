package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// The closed loop over plain HTTP runs as one event loop on its own OS
// thread: non-blocking sockets registered once with epoll (edge-triggered,
// in and out), each connection a small state machine, responses parsed by
// the same code as the goroutine client. Go's netpoller parks and wakes a
// goroutine for every response; at full speed on a small machine that costs
// about a third more CPU per request than an event loop like wrk's, CPU
// taken from the server under test.

// eventLoopFor reports whether the event loop can drive t.
func eventLoopFor(t *target) bool { return t.scheme == "http" }

// loopConn is one connection of the event loop.
type loopConn struct {
	w         *worker
	fd        int
	opened    bool // the first connection was made
	connected bool
	busy      bool // a request is outstanding
	reused    bool // the connection answered an earlier request
	retried   bool // this request was already sent again once
	written   int  // bytes of the request written
	sentAt    time.Time
	buf       []byte // response bytes received so far
}

type eventLoop struct {
	cfg    Config
	req    []byte
	cnt    *counters
	sa     syscall.Sockaddr
	family int
	ep     int
	byFD   map[int]*loopConn
	parser responseParser
	head   bool
}

// runEventLoop drives the workers' connections until ctx ends or the
// request budget is spent, recording through each worker like the
// goroutine loop.
func runEventLoop(ctx context.Context, cfg Config, t *target, req []byte, workers []*worker, cnt *counters) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l := &eventLoop{cfg: cfg, req: req, cnt: cnt, byFD: map[int]*loopConn{}, head: cfg.Method == "HEAD"}
	var err error
	if l.sa, l.family, err = sockaddr(t.hostPort); err == nil {
		l.ep, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	}
	if err != nil {
		for _, w := range workers { // every attempt would fail alike
			w.record(classify(err), 0, 0, time.Now(), false)
			cnt.done.Add(1)
			cnt.failed.Add(1)
		}
		return
	}
	defer syscall.Close(l.ep)

	conns := make([]*loopConn, len(workers))
	for i, w := range workers {
		conns[i] = &loopConn{w: w, fd: -1}
	}
	events := make([]syscall.EpollEvent, 128)
	rbuf := make([]byte, 64<<10)
	lastSweep := time.Now()
	for ctx.Err() == nil {
		spent := l.cfg.MaxRequests > 0 && cnt.tickets.Load() >= l.cfg.MaxRequests
		idle := true
		for _, c := range conns {
			if c.fd < 0 && !spent {
				// The first connections open before the run, like the
				// goroutine client's; later ones are part of the request
				// that needs them, so their setup counts in its latency.
				l.open(c, c.opened)
			}
			idle = idle && !c.busy
		}
		if spent && idle {
			break
		}
		n, err := syscall.EpollWait(l.ep, events, 10)
		if err != nil && err != syscall.EINTR {
			break
		}
		for _, ev := range events[:max(n, 0)] {
			if c := l.byFD[int(ev.Fd)]; c != nil {
				l.event(c, ev.Events, rbuf)
			}
		}
		if now := time.Now(); now.Sub(lastSweep) > 10*time.Millisecond {
			lastSweep = now
			for _, c := range conns {
				if c.busy && now.Sub(c.sentAt) > cfg.Timeout {
					l.shut(c)
					l.finish(c, KindTimeout)
				}
			}
		}
	}
	for _, c := range conns {
		if c.busy {
			cnt.unfinished.Add(1) // cut off by the end of the run
		}
		l.shut(c)
	}
}

// open starts a non-blocking connect, for a new request when forRequest
// is set (unless one is outstanding already). A failure counts as a failed
// request.
func (l *eventLoop) open(c *loopConn, forRequest bool) {
	if forRequest && !c.busy && !l.take(c) {
		return
	}
	c.opened = true
	c.connected, c.reused, c.written, c.buf = false, false, 0, c.buf[:0]
	fd, err := syscall.Socket(l.family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err == nil {
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if err = syscall.Connect(fd, l.sa); err == syscall.EINPROGRESS {
			err = nil
		}
		if err == nil {
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | -syscall.EPOLLET, Fd: int32(fd)}
			err = syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, fd, &ev)
		}
		if err != nil {
			syscall.Close(fd)
		}
	}
	if err != nil {
		if !c.busy && !l.take(c) {
			return
		}
		l.finish(c, classify(err))
		return
	}
	c.fd = fd
	l.byFD[fd] = c
}

// shut closes the socket, which also removes it from the epoll set.
func (l *eventLoop) shut(c *loopConn) {
	if c.fd >= 0 {
		delete(l.byFD, c.fd)
		syscall.Close(c.fd)
		c.fd = -1
	}
}

// take starts a request on c: false when the budget is spent.
func (l *eventLoop) take(c *loopConn) bool {
	if l.cfg.MaxRequests > 0 && l.cnt.tickets.Add(1) > l.cfg.MaxRequests {
		return false
	}
	c.busy, c.retried, c.written = true, false, 0
	c.sentAt = time.Now()
	l.cnt.sent.Add(1)
	return true
}

// finish ends the outstanding request; kind "" is success.
func (l *eventLoop) finish(c *loopConn, kind string) {
	now := time.Now()
	c.busy = false
	c.w.record(kind, now.Sub(c.sentAt), now.Sub(c.sentAt), now, false)
	l.cnt.done.Add(1)
	if kind != "" {
		l.cnt.failed.Add(1)
	}
}

// next sends the next request on a connected idle connection.
func (l *eventLoop) next(c *loopConn) {
	c.buf = c.buf[:0]
	if !l.take(c) {
		l.shut(c)
		return
	}
	l.write(c)
}

func (l *eventLoop) write(c *loopConn) {
	for c.written < len(l.req) {
		n, err := syscall.Write(c.fd, l.req[c.written:])
		if err == syscall.EAGAIN {
			return // EPOLLOUT resumes it
		}
		if err != nil {
			l.lost(c, err)
			return
		}
		c.written += n
	}
}

// lost handles a connection that failed with a request outstanding and
// nothing of its answer received: a kept-alive connection the server closed
// while idle gets one resend on a new connection, as any HTTP client does.
func (l *eventLoop) lost(c *loopConn, err error) {
	retry := c.reused && !c.retried && len(c.buf) == 0
	l.shut(c)
	if retry {
		l.open(c, true) // counts the request failed if it cannot connect
		c.retried = true
		return // sent once connected
	}
	l.finish(c, classify(err))
}

func (l *eventLoop) event(c *loopConn, events uint32, rbuf []byte) {
	if !c.connected {
		if events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) == 0 {
			return
		}
		if e, _ := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_ERROR); e != 0 {
			l.shut(c)
			if c.busy || l.take(c) {
				l.finish(c, classify(syscall.Errno(e)))
			}
			return
		}
		c.connected = true
		if c.busy { // a resend waiting for its new connection
			l.write(c)
		} else {
			l.next(c)
		}
		if c.fd < 0 {
			return
		}
	}
	if c.busy && c.written < len(l.req) && events&syscall.EPOLLOUT != 0 {
		l.write(c)
		if c.fd < 0 {
			return
		}
	}
	if events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
		return
	}
	// Edge-triggered: read until the socket is drained. A short read
	// drains it (data arriving later raises a new edge), unless the peer
	// also hung up, when the read that returns the end must follow.
	hungUp := events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0
	eof := false
	var rerr error
	for {
		m, err := syscall.Read(c.fd, rbuf)
		if m > 0 {
			c.buf = append(c.buf, rbuf[:m]...)
			if m < len(rbuf) && !hungUp {
				break
			}
		}
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			rerr = err
			break
		}
		if m == 0 {
			eof = true
			break
		}
	}
	l.input(c, eof, rerr)
}

// input completes the answers in c.buf and moves the connection on.
func (l *eventLoop) input(c *loopConn, eof bool, rerr error) {
	ended := eof || rerr != nil
	for c.busy && len(c.buf) > 0 {
		status, keep, used, complete, err := l.parser.parse(c.buf, l.head, ended)
		if err != nil {
			l.shut(c)
			l.finish(c, classify(err))
			return
		}
		if !complete {
			break
		}
		c.buf = c.buf[:copy(c.buf, c.buf[used:])]
		kind := ""
		if status < 200 || status > 299 {
			kind = "http_" + strconv.Itoa(status)
		}
		l.finish(c, kind)
		c.reused = true
		if !keep || ended {
			l.shut(c)
			return
		}
		l.next(c)
		if c.fd < 0 {
			return
		}
	}
	if !ended {
		return
	}
	if !c.busy {
		l.shut(c)
		return
	}
	if rerr == nil {
		rerr = io.ErrUnexpectedEOF
	}
	l.lost(c, rerr)
}

// responseParser finds complete responses in a byte slice with the parsing
// code of the goroutine client.
type responseParser struct {
	src bytes.Reader
	br  *bufio.Reader
}

// parse reports whether buf starts with a complete response and how many
// bytes it used. ended says the connection is over, which completes a body
// that runs to the end of the connection and makes a short one an error.
func (p *responseParser) parse(buf []byte, head, ended bool) (status int, keep bool, used int, complete bool, err error) {
	p.src.Reset(buf)
	if p.br == nil {
		p.br = bufio.NewReaderSize(&p.src, 16<<10)
	} else {
		p.br.Reset(&p.src)
	}
	short := func(err error) bool {
		return !ended && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
	}
	for {
		var bodyLen int64
		var chunked bool
		status, keep, bodyLen, chunked, err = readHead(p.br)
		if err != nil {
			if short(err) {
				return 0, false, 0, false, nil
			}
			return 0, false, 0, false, unexpected(err)
		}
		if status == 101 {
			return 0, false, 0, false, protoErr("unexpected 101 Switching Protocols")
		}
		if status < 200 {
			continue // interim response, the real one follows
		}
		switch {
		case head || status == 204 || status == 304:
		case chunked:
			err = discardChunked(p.br)
		case bodyLen >= 0:
			_, err = p.br.Discard(int(bodyLen))
		case !ended:
			return 0, false, 0, false, nil // the body runs to the end of the connection
		default:
			_, err = io.Copy(io.Discard, p.br)
			keep = false
		}
		if err != nil {
			if short(err) {
				return 0, false, 0, false, nil
			}
			return 0, false, 0, false, unexpected(err)
		}
		return status, keep, len(buf) - p.src.Len() - p.br.Buffered(), true, nil
	}
}

// sockaddr resolves hostPort once for the raw sockets.
func sockaddr(hostPort string) (syscall.Sockaddr, int, error) {
	a, err := net.ResolveTCPAddr("tcp", hostPort)
	if err != nil {
		return nil, 0, err
	}
	if ip4 := a.IP.To4(); ip4 != nil {
		sa := &syscall.SockaddrInet4{Port: a.Port}
		copy(sa.Addr[:], ip4)
		return sa, syscall.AF_INET, nil
	}
	sa := &syscall.SockaddrInet6{Port: a.Port}
	copy(sa.Addr[:], a.IP.To16())
	return sa, syscall.AF_INET6, nil
}
