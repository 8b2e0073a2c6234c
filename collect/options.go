// Package collect observes a live Go service over its net/http/pprof
// endpoints (and, when it runs on this machine, through /proc) and writes
// what it saw as a bundle directory.
package collect

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/internal/redact"
)

// Limits and defaults of Options.
const (
	MinDuration          = time.Second
	MaxDuration          = 10 * time.Minute
	DefaultTraceDuration = time.Second
	DefaultTimeout       = 30 * time.Second
	DefaultMaxBytes      = 256 << 20

	// probeTimeout bounds the first reachability check: an unreachable
	// target should fail in seconds, not after a whole profile's length.
	probeTimeout = 5 * time.Second
)

// Options says what to collect from where.
type Options struct {
	// Target is the service's pprof address: the base URL
	// (http://host:6060) or the /debug/pprof/ path itself. Query parameters
	// and userinfo are sent with every request and redacted when shown.
	Target string
	// Duration is the observation window: the CPU profile's length, rounded
	// up to whole seconds. Between MinDuration and MaxDuration.
	Duration time.Duration
	// TraceDuration is the execution trace's length, taken at the end of the
	// window. 0 means DefaultTraceDuration; negative skips the trace. It is
	// capped at Duration.
	TraceDuration time.Duration
	// HeapEvery, when positive, takes additional heap profiles every
	// HeapEvery during the window, written as heap-1.pb.gz, heap-2.pb.gz, ...
	// (HeapSeriesFile) between heap-0.pb.gz (start) and heap.pb.gz (end); at
	// most MaxHeapSnapshots of them. At least MinHeapEvery.
	HeapEvery time.Duration
	// Perf, for a local target, also records its stacks with kernel frames
	// through Linux perf over the window (PerfFile).
	Perf bool
	// PerfPath is the perf executable; "" looks up perf in PATH.
	PerfPath string
	// OutDir is the bundle directory to create. It must not exist or be empty.
	OutDir string
	// Timeout is allowed per request beyond its own duration. 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxBytes caps each response; a larger one fails that item. 0 means DefaultMaxBytes.
	MaxBytes int64
	// Progress, when set, shows what is being collected.
	Progress *progress.Line
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Roots locate /proc and /sys for local targets; zero means the real ones.
	Roots system.Roots
	// Token, when set, is sent on every request as "Authorization: Bearer
	// <Token>", as an agent started with a token requires.
	Token string
	// Client makes the HTTP requests; nil means a default client.
	Client *http.Client
}

// settings are Options validated and with defaults applied.
type settings struct {
	Options
	base   *url.URL      // normalised target ending in /debug/pprof/, with credentials
	shown  string        // base with credentials redacted, for messages
	window time.Duration // Duration in whole seconds
	trace  time.Duration // 0 = skipped
}

func validate(opt Options) (*settings, error) {
	base, err := parseTarget(opt.Target)
	if err != nil {
		return nil, err
	}
	s := &settings{Options: opt, base: base, shown: redact.URL(base)}
	switch {
	case opt.Duration < MinDuration:
		return nil, fmt.Errorf("duration %v is too short: the minimum is %v", opt.Duration, MinDuration)
	case opt.Duration > MaxDuration:
		return nil, fmt.Errorf("duration %v is too long: the maximum is %v", opt.Duration, MaxDuration)
	}
	// /debug/pprof/profile takes whole seconds.
	s.window = time.Duration(math.Ceil(opt.Duration.Seconds())) * time.Second
	switch {
	case opt.TraceDuration < 0:
		s.trace = 0
	case opt.TraceDuration == 0:
		s.trace = min(DefaultTraceDuration, s.window)
	default:
		s.trace = min(opt.TraceDuration, s.window)
	}
	if opt.HeapEvery < 0 || (opt.HeapEvery > 0 && opt.HeapEvery < MinHeapEvery) {
		return nil, fmt.Errorf("heap snapshot interval %v: want at least %v", opt.HeapEvery, MinHeapEvery)
	}
	if opt.OutDir == "" {
		return nil, errors.New("no output directory given")
	}
	s.OutDir = filepath.Clean(opt.OutDir)
	if opt.Timeout < 0 {
		return nil, fmt.Errorf("timeout %v is negative", opt.Timeout)
	}
	if opt.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if opt.MaxBytes < 0 {
		return nil, fmt.Errorf("size limit %d is negative", opt.MaxBytes)
	}
	if opt.MaxBytes == 0 {
		s.MaxBytes = DefaultMaxBytes
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	s.Logger = s.Logger.With("component", "collect")
	if s.Client == nil {
		s.Client = &http.Client{}
	}
	return s, nil
}

// parseTarget accepts http(s)://host[:port][/prefix][/debug/pprof[/]] and
// returns the URL of the pprof index, always ending in "/debug/pprof/".
func parseTarget(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("no target given: want a URL like http://host:6060")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the raw URL, which may hold credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("target is not a valid URL: %w", err)
	}
	shown := redact.URL(u)
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("target %s has no scheme: want http://%s", shown, strings.TrimPrefix(shown, "//"))
	default:
		if u.Opaque != "" && u.Host == "" {
			// "localhost:6060" parses as scheme "localhost".
			return nil, fmt.Errorf("target %s has no scheme: want http://%s", shown, shown)
		}
		return nil, fmt.Errorf("target %s: scheme must be http or https, not %q", shown, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("target %s has no host", shown)
	}
	// Requests re-encode the query when they add their parameters; doing it
	// here too makes the shown target the one actually used.
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("target %s has a malformed query: %w", shown, err)
	}
	u.RawQuery = q.Encode()
	u.ForceQuery = false
	u.Scheme = strings.ToLower(u.Scheme)
	u.Fragment, u.RawFragment = "", ""
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, "/debug/pprof") {
		p += "/debug/pprof"
	}
	u.Path, u.RawPath = p+"/", ""
	return u, nil
}
