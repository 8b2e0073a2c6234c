package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// httpConn is a lean HTTP/1.1 keep-alive client for one worker: the request
// is encoded once and written with one call, and the response is parsed in
// place from a bufio.Reader with no allocation per request. net/http's
// client costs several times more CPU per request, which on a small machine
// is CPU taken from the server under test.
type httpConn struct {
	cfg    Config
	t      *target
	req    []byte
	dialer net.Dialer
	head   bool // HEAD: responses carry no body

	mu      sync.Mutex // guards c against abort
	c       net.Conn
	stopped bool
	r       *bufio.Reader
	// deadlineSet is when the connection's deadline was last moved to
	// Timeout ahead; it is moved again only when that is a tenth of Timeout
	// (at most deadlineSlack) old, so a request's timeout is at least 90%
	// of Timeout and most requests skip the call.
	deadlineSet time.Time
}

const deadlineSlack = 10 * time.Millisecond

// buildRequest encodes the request every worker sends.
func buildRequest(cfg Config, t *target) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", cfg.Method, t.path, t.host)
	if cfg.Header.Get("User-Agent") == "" {
		b.WriteString("User-Agent: perfdoctor-load\r\n")
	}
	for name, vals := range cfg.Header {
		if http1Managed(name) {
			continue
		}
		for _, v := range vals {
			fmt.Fprintf(&b, "%s: %s\r\n", name, v)
		}
	}
	if len(cfg.Body) > 0 || cfg.Method == "POST" || cfg.Method == "PUT" || cfg.Method == "PATCH" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(cfg.Body))
	}
	b.WriteString("\r\n")
	b.Write(cfg.Body)
	return b.Bytes()
}

// http1Managed reports headers the client sets itself.
func http1Managed(name string) bool {
	for _, h := range []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"} {
		if equalFoldASCII(name, h) {
			return true
		}
	}
	return false
}

// tlsConfig is base (or the defaults) for one host, speaking HTTP/1.1.
func tlsConfig(base *tls.Config, host string) *tls.Config {
	c := &tls.Config{}
	if base != nil {
		c = base.Clone()
	}
	if c.ServerName == "" {
		c.ServerName = host
	}
	c.NextProtos = []string{"http/1.1"}
	return c
}

func newHTTPConn(cfg Config, t *target, req []byte) *httpConn {
	return &httpConn{cfg: cfg, t: t, req: req, head: cfg.Method == "HEAD",
		dialer: net.Dialer{Timeout: cfg.Timeout}}
}

func (h *httpConn) dial(ctx context.Context) error {
	c, err := h.dialer.DialContext(ctx, "tcp", h.t.hostPort)
	if err != nil {
		return err
	}
	if h.t.scheme == "https" {
		tc := tls.Client(c, tlsConfig(h.cfg.TLS, hostOnly(h.t.host)))
		tctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
		err := tc.HandshakeContext(tctx)
		cancel()
		if err != nil {
			c.Close()
			return err
		}
		c = tc
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		c.Close()
		return context.Canceled
	}
	h.c = c
	h.deadlineSet = time.Time{}
	if h.r == nil {
		h.r = bufio.NewReaderSize(c, 16<<10)
	} else {
		h.r.Reset(c)
	}
	return nil
}

func hostOnly(hostPort string) string {
	if h, _, err := net.SplitHostPort(hostPort); err == nil {
		return h
	}
	return hostPort
}

func (h *httpConn) connect(ctx context.Context) {
	if h.c == nil {
		_ = h.dial(ctx)
	}
}

func (h *httpConn) do(ctx context.Context) string {
	for attempt := 0; ; attempt++ {
		reused := h.c != nil
		if !reused {
			if err := h.dial(ctx); err != nil {
				return classify(err)
			}
		}
		status, keep, started, err := h.roundTrip()
		if err != nil {
			h.drop()
			// A kept-alive connection the server closed while idle fails
			// before any response byte: send again once on a new one, as
			// any HTTP client does.
			if reused && !started && attempt == 0 && ctx.Err() == nil {
				continue
			}
			return classify(err)
		}
		if !keep {
			h.drop()
		}
		if status < 200 || status > 299 {
			return "http_" + strconv.Itoa(status)
		}
		return ""
	}
}

func (h *httpConn) roundTrip() (status int, keep, started bool, err error) {
	if now := time.Now(); now.Sub(h.deadlineSet) > min(deadlineSlack, h.cfg.Timeout/10) {
		if err := h.c.SetDeadline(now.Add(h.cfg.Timeout)); err != nil {
			return 0, false, false, err
		}
		h.deadlineSet = now
		// abort may have set a past deadline just before: honour it.
		h.mu.Lock()
		stopped := h.stopped
		h.mu.Unlock()
		if stopped {
			return 0, false, false, context.Canceled
		}
	}
	if _, err := h.c.Write(h.req); err != nil {
		return 0, false, false, err
	}
	if _, err := h.r.Peek(1); err != nil {
		return 0, false, false, err
	}
	status, keep, err = readResponse(h.r, h.head)
	return status, keep, true, err
}

// drop closes the connection; the next request dials a new one.
func (h *httpConn) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c != nil {
		h.c.Close()
		h.c = nil
	}
}

func (h *httpConn) abort() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.c != nil {
		h.c.SetDeadline(time.Unix(1, 0))
	}
}

func (h *httpConn) close() { h.drop() }

// errProtocol marks responses that are not valid HTTP/1.x.
var errProtocol = errors.New("malformed HTTP response")

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errProtocol}, args...)...)
}

// Limits on what a response may contain before it is called malformed.
const (
	maxHeaderLines = 200
	maxChunkLine   = 4096
)

// readResponse reads one response, skipping 1xx interim responses, and
// discards its body. keep is false when the connection cannot carry another
// request (Connection: close, HTTP/1.0 without keep-alive, or a body
// delimited by the end of the connection).
func readResponse(r *bufio.Reader, head bool) (status int, keep bool, err error) {
	for {
		status, keep, bodyLen, chunked, err := readHead(r)
		if err != nil {
			return 0, false, err
		}
		if status == 101 {
			return 0, false, protoErr("unexpected 101 Switching Protocols")
		}
		if status >= 100 && status < 200 {
			continue // interim response, the real one follows
		}
		if head || status == 204 || status == 304 {
			return status, keep, nil
		}
		switch {
		case chunked:
			err = discardChunked(r)
		case bodyLen >= 0:
			_, err = r.Discard(int(bodyLen))
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
		default:
			// No length: the body runs to the end of the connection.
			_, err = io.Copy(io.Discard, r)
			keep = false
		}
		return status, keep, err
	}
}

// readHead parses the status line and headers. bodyLen is -1 when the
// response gives no Content-Length.
func readHead(r *bufio.Reader) (status int, keep bool, bodyLen int64, chunked bool, err error) {
	line, err := readLine(r)
	if err != nil {
		return 0, false, 0, false, err
	}
	// "HTTP/1.1 200 OK": version, a space, three digits, then a space or the end.
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ') {
		return 0, false, 0, false, protoErr("bad status line %q", truncate(line))
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false, 0, false, protoErr("bad status line %q", truncate(line))
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 {
		return 0, false, 0, false, protoErr("bad status code %d", status)
	}
	keep = line[7] == '1' // HTTP/1.1 keeps the connection by default
	bodyLen = -1
	for n := 0; ; n++ {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, false, 0, false, err
		}
		if len(line) == 0 {
			return status, keep, bodyLen, chunked, nil
		}
		if n == maxHeaderLines {
			return 0, false, 0, false, protoErr("more than %d header lines", maxHeaderLines)
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return 0, false, 0, false, protoErr("bad header line %q", truncate(line))
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case equalFoldASCII(string(name), "Content-Length"):
			v, perr := strconv.ParseInt(string(value), 10, 64)
			if perr != nil || v < 0 || (bodyLen >= 0 && v != bodyLen) {
				return 0, false, 0, false, protoErr("bad Content-Length %q", truncate(value))
			}
			bodyLen = v
		case equalFoldASCII(string(name), "Transfer-Encoding"):
			if hasToken(value, "chunked") {
				chunked = true
			}
		case equalFoldASCII(string(name), "Connection"):
			if hasToken(value, "close") {
				keep = false
			} else if hasToken(value, "keep-alive") {
				keep = true
			}
		}
	}
}

// discardChunked skips a chunked body and its trailers.
func discardChunked(r *bufio.Reader) error {
	for {
		line, err := readLine(r)
		if err != nil {
			return unexpected(err)
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // chunk extensions
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || len(line) > 15 {
			return protoErr("bad chunk size %q", truncate(line))
		}
		size, perr := strconv.ParseInt(string(line), 16, 64)
		if perr != nil || size < 0 {
			return protoErr("bad chunk size %q", truncate(line))
		}
		if size == 0 {
			for { // trailers up to the empty line
				t, err := readLine(r)
				if err != nil {
					return unexpected(err)
				}
				if len(t) == 0 {
					return nil
				}
			}
		}
		if _, err := r.Discard(int(size)); err != nil {
			return unexpected(err)
		}
		crlf, err := readLine(r)
		if err != nil {
			return unexpected(err)
		}
		if len(crlf) != 0 {
			return protoErr("chunk longer than its size")
		}
	}
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readLine returns one line without its CRLF (or bare LF). The slice is
// valid until the next read.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, protoErr("line longer than %d bytes", r.Size())
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// hasToken reports whether a comma-separated header value holds token.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var part []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			part, v = v[:i], v[i+1:]
		} else {
			part, v = v, nil
		}
		if equalFoldASCII(string(bytes.TrimSpace(part)), token) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x|0x20 != y|0x20 || (x|0x20 < 'a' || x|0x20 > 'z') && x != y {
			return false
		}
	}
	return true
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// classify maps a transport error to an error kind.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errProtocol):
		return KindProtocol
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return KindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return KindReset
	default:
		return KindOther
	}
}
