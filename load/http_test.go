package load

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		head   bool
		status int
		keep   bool
		rest   string // what must be left unread
		err    string
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT", false, 200, true, "NEXT", ""},
		{"no reason", "HTTP/1.1 204\r\n\r\nNEXT", false, 204, true, "NEXT", ""},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n!\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT", false, 200, true, "NEXT", ""},
		{"close", "HTTP/1.1 500 Oops\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno", false, 500, false, "", ""},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 200, false, "", ""},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nokNEXT", false, 200, true, "NEXT", ""},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nall of it", false, 200, false, "", ""},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nNEXT", true, 200, true, "NEXT", ""},
		{"304", "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\nNEXT", false, 304, true, "NEXT", ""},
		{"100 continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\nNEXT", false, 201, true, "NEXT", ""},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 1\n\nxNEXT", false, 200, true, "NEXT", ""},
		{"case", "HTTP/1.1 200 OK\r\ncontent-LENGTH: 1\r\n\r\nxNEXT", false, 200, true, "NEXT", ""},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", false, 0, false, "", "unexpected EOF"},
		{"short chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", false, 0, false, "", "unexpected EOF"},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, 0, false, "", "bad chunk size"},
		{"chunk overrun", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n0\r\n\r\n", false, 0, false, "", "longer than its size"},
		{"not http", "SSH-2.0-OpenSSH\r\n\r\n", false, 0, false, "", "bad status line"},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", false, 0, false, "", "bad status line"},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, 0, false, "", "Content-Length"},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", false, 0, false, "", "Content-Length"},
		{"bad header", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n", false, 0, false, "", "bad header"},
		{"eof in headers", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", false, 0, false, "", "unexpected EOF"},
		{"empty", "", false, 0, false, "", "EOF"},
		{"upgrade", "HTTP/1.1 101 Switching Protocols\r\n\r\n", false, 0, false, "", "101"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(tc.in), 64)
			status, keep, err := readResponse(r, tc.head)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(r)
			if status != tc.status || keep != tc.keep || string(rest) != tc.rest {
				t.Errorf("got status %d keep %v rest %q, want %d %v %q", status, keep, rest, tc.status, tc.keep, tc.rest)
			}
		})
	}
	// A line longer than the buffer is malformed, not a hang or a panic.
	r := bufio.NewReaderSize(strings.NewReader("HTTP/1.1 200 OK\r\nX: "+strings.Repeat("a", 100)+"\r\n\r\n"), 16)
	if _, _, err := readResponse(r, false); !errors.Is(err, errProtocol) {
		t.Errorf("long line: err = %v, want a protocol error", err)
	}
}

// FuzzReadResponse checks the parser never panics or loops on any input,
// and that it consumes no more than it was given.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.0 404 Not Found\r\n\r\nbody",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\nffffffff\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, head bool) {
		r := bufio.NewReaderSize(strings.NewReader(string(in)), 64)
		status, _, err := readResponse(r, head)
		if err == nil && (status < 200 || status > 999) {
			t.Fatalf("accepted status %d", status)
		}
	})
}

// newServer starts an HTTP/1.1 test server that counts connections.
func newServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// bothClients runs a closed-loop test on the event loop and on the
// goroutine client (which the open loop and https use).
func bothClients(t *testing.T, test func(t *testing.T)) {
	for _, goroutines := range []bool{false, true} {
		t.Run(map[bool]string{false: "eventloop", true: "goroutines"}[goroutines], func(t *testing.T) {
			goroutinesOnly = goroutines
			defer func() { goroutinesOnly = false }()
			test(t)
		})
	}
}

func TestHTTPAgainstNetHTTP(t *testing.T) { bothClients(t, testHTTPAgainstNetHTTP) }

func testHTTPAgainstNetHTTP(t *testing.T) {
	big := strings.Repeat("y", 100_000)
	for _, tc := range []struct {
		name     string
		h        http.HandlerFunc
		method   string
		maxConns int64
		kind     string // the error every request gets, "" for success
	}{
		{"content-length", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }, "GET", 4, ""},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			for range 5 {
				io.WriteString(w, big[:3000])
				w.(http.Flusher).Flush()
			}
		}, "GET", 4, ""},
		{"head", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }, "HEAD", 4, ""},
		{"connection close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		}, "GET", 200, ""},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }, "GET", 4, "http_500"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }, "GET", 4, "http_302"},
		{"hijack and close", func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}, "GET", 400, KindReset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conns := newServer(t, tc.h)
			res, err := Run(context.Background(), Config{URL: srv.URL + "/x?y=1", Method: tc.method, Concurrency: 4, MaxRequests: 200, Duration: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 200 {
				t.Fatalf("%d requests, want 200: %s", res.Requests, res)
			}
			if tc.kind == "" && res.Errors != 0 || tc.kind != "" && res.ErrorsByKind[tc.kind] != 200 {
				t.Fatalf("want every request to end in %q: %s", tc.kind, res)
			}
			if n := conns.Load(); n > tc.maxConns {
				t.Errorf("%d connections, want at most %d", n, tc.maxConns)
			}
		})
	}
}

// rawServer answers each connection with fn on a plain TCP listener.
func rawServer(t *testing.T, fn func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); fn(c) }()
		}
	}()
	return "http://" + l.Addr().String() + "/"
}

func TestHTTPRawServers(t *testing.T) { bothClients(t, testHTTPRawServers) }

func testHTTPRawServers(t *testing.T) {
	readRequest := func(c net.Conn, r *bufio.Reader) bool {
		_, err := http.ReadRequest(r)
		return err == nil
	}
	for _, tc := range []struct {
		name string
		fn   func(net.Conn)
		kind string
	}{
		{"body until close", func(c net.Conn) {
			if readRequest(c, bufio.NewReader(c)) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nall the body")
			}
		}, ""},
		{"close after each answer", func(c net.Conn) {
			// keep-alive announced, then closed: the client retries on a
			// new connection instead of counting an error.
			r := bufio.NewReader(c)
			if readRequest(c, r) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}, ""},
		{"close without answer", func(c net.Conn) {}, KindReset},
		{"garbage", func(c net.Conn) {
			if readRequest(c, bufio.NewReader(c)) {
				io.WriteString(c, "garbage\r\n\r\n")
			}
		}, KindProtocol},
		{"silent", func(c net.Conn) { io.Copy(io.Discard, c) }, KindTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawServer(t, tc.fn)
			start := time.Now()
			res, err := Run(context.Background(), Config{URL: url, Concurrency: 2, MaxRequests: 20, Duration: 20 * time.Second, Timeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("took %s", el)
			}
			if tc.kind == "" && (res.Errors != 0 || res.Requests != 20) || tc.kind != "" && res.ErrorsByKind[tc.kind] != 20 {
				t.Fatalf("want 20 requests ending in %q: %s", tc.kind, res)
			}
		})
	}
}

// TestHTTPS runs against a TLS server on loopback: connections are kept
// alive (one handshake each) and an untrusted certificate is an error, not a
// silent success.
func TestHTTPS(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || r.ProtoMajor != 1 {
			http.Error(w, "want HTTP/1.1 over TLS", http.StatusBadRequest)
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below
	srv.StartTLS()
	t.Cleanup(srv.Close)
	trusted := srv.Client().Transport.(*http.Transport).TLSClientConfig

	res, err := Run(context.Background(), Config{URL: srv.URL + "/", Concurrency: 4, MaxRequests: 400, Duration: 20 * time.Second, TLS: trusted})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 400 || res.Errors != 0 {
		t.Fatalf("trusted: %s", res)
	}
	if n := conns.Load(); n > 4 {
		t.Errorf("%d TLS connections for 4 workers: not kept alive", n)
	}

	res, err = Run(context.Background(), Config{URL: srv.URL + "/", Concurrency: 1, MaxRequests: 3, Duration: 20 * time.Second})
	if err == nil && res.Errors == 0 {
		t.Fatalf("an untrusted certificate was accepted: %s", res)
	}
}
