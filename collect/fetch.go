package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/internal/human"
)

// errInterrupted marks an item cut short by the caller's cancellation.
var errInterrupted = errors.New("interrupted")

// cleanError carries a message written for people while keeping the cause
// for errors.Is; it exists because *url.Error repeats the full request URL,
// query tokens included.
type cleanError struct {
	msg string
	err error
}

func (e *cleanError) Error() string { return e.msg }
func (e *cleanError) Unwrap() error { return e.err }

// statusError is a response other than 200 OK, with the first line of a
// plain-text body (net/http/pprof explains its refusals there).
type statusError struct {
	status     string // "404 Not Found"
	code       int
	msg        string
	retryAfter string // the Retry-After header of a 503 or 429
}

// busy reports whether the server asked to be asked again later: it is
// at its own limit (a concurrency cap, a rate limit), not refusing.
func (e *statusError) busy() bool {
	return e.code == http.StatusServiceUnavailable || e.code == http.StatusTooManyRequests
}

func (e *statusError) Error() string {
	if e.msg == "" {
		return "HTTP " + e.status
	}
	return "HTTP " + e.status + ": " + e.msg
}

// endpointURL is the pprof index URL with name appended and params added to
// the target's own query.
func (s *settings) endpointURL(name string, params url.Values) *url.URL {
	u := *s.base
	u.Path += name
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	return &u
}

// get fetches u within timeout, reading at most limit bytes of a 200 response.
func (s *settings) get(ctx context.Context, u *url.URL, timeout time.Duration, limit int64) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", unwrapURLError(err))
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, requestError(ctx, rctx, err, timeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		se := &statusError{status: resp.Status, code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
		if !looksHTML(msg) {
			se.msg = firstLine(msg)
		}
		return nil, se
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, requestError(ctx, rctx, err, timeout)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("response larger than the %s size limit", human.Bytes(uint64(limit)))
	}
	return body, nil
}

// requestError turns a failed request into a short reason: interrupted by
// the caller, timed out, or the network's own words without the URL.
func requestError(ctx, rctx context.Context, err error, timeout time.Duration) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%w (%w)", errInterrupted, ctx.Err())
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return &cleanError{fmt.Sprintf("no complete response within %v", timeout), context.DeadlineExceeded}
	}
	return describeNetError(unwrapURLError(err))
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// describeNetError names common network failures plainly.
func describeNetError(err error) error {
	var dnsErr *net.DNSError
	var nerr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &cleanError{"connection refused", err}
	case errors.Is(err, syscall.ECONNRESET):
		return &cleanError{"connection reset by peer", err}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return &cleanError{"no route to host", err}
	case errors.As(err, &dnsErr):
		return &cleanError{fmt.Sprintf("cannot resolve host %q: %v", dnsErr.Name, dnsErr.Err), err}
	case errors.As(err, &nerr) && nerr.Timeout():
		return &cleanError{"timed out", err}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &cleanError{"connection closed before the response was complete", err}
	}
	return err
}

// isPprofIndex reports whether body is net/http/pprof's index page, which
// links every profile with a debug=1 query and offers a full goroutine dump.
func isPprofIndex(body []byte) bool {
	return bytes.Contains(body, []byte("goroutine?debug=")) && bytes.Contains(body, []byte("heap"))
}

// parseProfile verifies that data is a profile `go tool pprof` can read.
func parseProfile(data []byte) (*profile.Profile, error) {
	if looksHTML(data) {
		return nil, errors.New("not a profile: got an HTML page")
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("not a profile: %s", strings.TrimPrefix(err.Error(), "parsing profile: "))
	}
	return p, nil
}

// traceMagic is how every Go execution trace starts ("go 1.22 trace\x00\x00\x00").
const traceHeaderLen = 16

func checkTrace(data []byte) error {
	if len(data) < traceHeaderLen || !bytes.HasPrefix(data, []byte("go 1.")) || !bytes.Contains(data[:traceHeaderLen], []byte(" trace")) {
		if looksHTML(data) {
			return errors.New("not a Go execution trace: got an HTML page")
		}
		head := data[:min(len(data), traceHeaderLen)]
		return fmt.Errorf("not a Go execution trace: starts with %q", head)
	}
	return nil
}

func looksHTML(b []byte) bool {
	b = bytes.TrimSpace(b[:min(len(b), 512)])
	return len(b) > 0 && b[0] == '<' && (bytes.Contains(bytes.ToLower(b), []byte("<html")) || bytes.Contains(bytes.ToLower(b), []byte("<!doctype")) || bytes.Contains(bytes.ToLower(b), []byte("<body")))
}

// firstLine returns the first line of a short text body, for error messages.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
