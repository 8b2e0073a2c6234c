// Package load is perfdoctor's load generator: HTTP/1.1 keep-alive and UDP,
// closed loop (a fixed number of workers, each sending its next request when
// the previous one is answered) or open loop (a fixed arrival rate).
//
// Open loop measures latency from each request's intended send time, so a
// server that stalls cannot hide the queue it built (coordinated omission);
// it also reports the plain service time, late sends and sends that never
// happened. Latencies go into HdrHistograms (1µs..60s, 3 significant
// figures) plus a coarse per-second timeline.
package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

// Limits enforced by Config validation.
const (
	MaxConcurrency = 10000
	MaxDuration    = time.Hour
	MaxRate        = 1_000_000 // requests per second
	DefaultTimeout = 10 * time.Second
	// LateThreshold is how far behind its intended time an open-loop send
	// may start before it counts as late.
	LateThreshold = time.Millisecond
)

// Error kinds for transport failures in Result.ErrorsByKind. Non-2xx
// responses are counted under "http_<status>", e.g. "http_500".
const (
	KindTimeout  = "timeout"
	KindRefused  = "refused"
	KindReset    = "reset"    // the peer closed or reset the connection
	KindProtocol = "protocol" // a response that is not valid HTTP/1.x
	KindOther    = "other"
)

// UDP modes.
const (
	UDPRequestReply = "reply" // wait for one datagram back per request
	UDPFireForget   = "fire"  // send only; latency is the send call
)

// Config describes one load run.
type Config struct {
	// URL is http://, https:// or udp://host:port.
	URL    string
	Method string // default GET
	Body   []byte // HTTP body, or the UDP payload
	Header http.Header
	// Concurrency is the number of closed-loop workers, or in open loop the
	// number of connections (requests in flight at most) (1..10000).
	Concurrency int
	// Rate > 0 selects the open loop: requests per second, spread evenly.
	Rate float64
	// Duration bounds the run; it must be in (0, 1h] unless MaxRequests is
	// set, in which case 0 means no time bound.
	Duration time.Duration
	// MaxRequests bounds the number of requests sent; 0 = unbounded. The run
	// stops at whichever of Duration and MaxRequests comes first.
	MaxRequests int64
	// Timeout is the per-request timeout; 0 means DefaultTimeout.
	Timeout time.Duration
	// UDPMode is UDPRequestReply (default) or UDPFireForget for udp:// URLs.
	UDPMode string
	// TLS configures https:// connections; nil verifies against the system's
	// roots. ServerName defaults to the URL's host and NextProtos to HTTP/1.1.
	TLS *tls.Config
	// Progress, if non-nil, shows a live status line (silent off-terminal).
	Progress *progress.Line

	// Command, when set, is the load instead of HTTP or UDP requests: a
	// shell command (sh -c) that does UnitsPerRun units of work each time
	// it runs (a server's own benchmark tool), repeated back to back over
	// Duration. {url}, {addr}, {host} and {port} in it are replaced by the
	// parts of URL, which is then any scheme://host:port (tcp://...), or
	// may be empty. Latency is not measured: the command's own output has it.
	Command     string
	UnitsPerRun int64
	Unit        string // what a unit is ("SET", "transaction"); DefaultUnit when empty
}

// Percentiles of request latency.
type Percentiles struct {
	P50, P75, P90, P95, P99, P999, P9999, Max, Mean time.Duration
}

// Quantile is one row of the full percentile table.
type Quantile struct {
	Percentile float64
	Value      time.Duration
}

// Second is one second of the timeline, by completion time.
// For a command load, each run's units are spread over the seconds the run
// took.
type Second struct {
	T      int // seconds since the start (Result.Start)
	OK     int64
	Errors int64
	// Latency of the successful requests that completed in this second
	// (corrected in open loop), at 2 significant figures.
	P50, P99, Max time.Duration
}

// Result is what a run measured. Latency covers successful (2xx) requests
// only: failures such as refused connections return in microseconds and
// would hide the server's real latency.
type Result struct {
	URL         string
	Method      string // the HTTP method, or "" for UDP and command loads
	BodyBytes   int    // each request's body (or UDP payload)
	Mode        string // "closed" or "open"
	Concurrency int
	Rate        float64       // open loop: the requested rate
	Start       time.Time     // when the run began: the Timeline's second 0
	Duration    time.Duration // wall time actually spent
	Requests    int64         // completed requests, successful or not
	Errors      int64         // non-2xx responses plus transport errors
	// ErrorsByKind counts errors by kind (KindTimeout, "http_503", ...).
	ErrorsByKind map[string]int64
	Throughput   float64 // successful requests per second
	// Latency is from the actual send in closed loop. In open loop it is
	// from the due time for requests that waited for a free connection
	// (corrected for coordinated omission), else from the send.
	Latency Percentiles
	// Service is from the actual send (open loop only; equal to Latency in
	// closed loop).
	Service Percentiles
	Table   []Quantile // the full latency percentile table
	// LateSends counts open-loop sends that waited more than LateThreshold
	// past their due time for a free connection; Dropped counts due sends
	// that never started before the run ended.
	LateSends, Dropped int64
	// Unfinished counts requests in flight when the run ended; they are not
	// in Requests.
	Unfinished int64
	Timeline   []Second
	// GeneratorCPU is the CPU this process used per second of wall time
	// (1.0 = one core busy); Warnings say when the generator itself, not the
	// target, may have limited the figures.
	GeneratorCPU float64
	LoadAverage  float64 // the machine's 1-minute load average at the end
	Warnings     []string
	// Interrupted is true when the caller's context ended the run early
	// (e.g. Ctrl-C); the figures cover what was measured until then.
	Interrupted bool

	// A command load (Mode ModeCommand): the command, what its units are,
	// how many each run does and how many runs completed. Requests and
	// Errors count units.
	Command     string
	Unit        string
	UnitsPerRun int64
	Runs        int64
	commandErr  string // what the last failed run printed

	// Warmup is the warm-up run just before this one, unrecorded, when
	// there was one (perfdoctor run sets it).
	Warmup *bundle.LoadWarmup
}

// String is a one-line summary.
func (r *Result) String() string {
	if r == nil {
		return "<nil>"
	}
	var b strings.Builder
	if r.Mode == ModeCommand {
		fmt.Fprintf(&b, "`%s` %s: %d runs, %d %ss, %d failed, %.1f %ss/s", r.Command, r.Duration.Round(time.Millisecond),
			r.Runs, r.Requests, r.Unit, r.Errors, r.Throughput, r.Unit)
		if r.Interrupted {
			b.WriteString(" [interrupted]")
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s", r.URL)
	if r.Mode == modeOpen {
		fmt.Fprintf(&b, " rate=%g c=%d", r.Rate, r.Concurrency)
	} else {
		fmt.Fprintf(&b, " c=%d", r.Concurrency)
	}
	fmt.Fprintf(&b, " %s: %d req, %d err, %.1f req/s, p50=%s p90=%s p99=%s p99.9=%s max=%s",
		r.Duration.Round(time.Millisecond), r.Requests, r.Errors, r.Throughput,
		fmtDur(r.Latency.P50), fmtDur(r.Latency.P90), fmtDur(r.Latency.P99), fmtDur(r.Latency.P999), fmtDur(r.Latency.Max))
	if r.Mode == modeOpen {
		fmt.Fprintf(&b, " (service p99=%s, late=%d, dropped=%d)", fmtDur(r.Service.P99), r.LateSends, r.Dropped)
	}
	if len(r.ErrorsByKind) > 0 {
		b.WriteString(" (" + r.ErrorKinds() + ")")
	}
	if r.Interrupted {
		b.WriteString(" [interrupted]")
	}
	return b.String()
}

// ErrorKinds lists the error counts as "kind=n, ..." sorted by kind.
func (r *Result) ErrorKinds() string {
	kinds := make([]string, 0, len(r.ErrorsByKind))
	for k := range r.ErrorsByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%s=%d", k, r.ErrorsByKind[k])
	}
	return strings.Join(kinds, " ")
}

// fmtDur rounds a latency for reading (human.RoundDuration).
func fmtDur(d time.Duration) string { return human.RoundDuration(d).String() }

const (
	modeClosed = "closed"
	modeOpen   = "open"
)

// target is a validated URL.
type target struct {
	scheme   string // http, https, udp
	hostPort string // with the default port filled in
	host     string // for Host: and TLS server name
	path     string // request target, with the query
}

// validate checks cfg and fills defaults into a copy.
func (cfg Config) validate() (Config, *target, error) {
	if cfg.Concurrency < 1 || cfg.Concurrency > MaxConcurrency {
		return cfg, nil, fmt.Errorf("load: concurrency %d out of range 1..%d", cfg.Concurrency, MaxConcurrency)
	}
	if cfg.MaxRequests < 0 {
		return cfg, nil, fmt.Errorf("load: max requests %d is negative", cfg.MaxRequests)
	}
	if cfg.Duration < 0 {
		return cfg, nil, fmt.Errorf("load: duration %s is negative", cfg.Duration)
	}
	if cfg.Rate < 0 || cfg.Rate > MaxRate || cfg.Rate != cfg.Rate {
		return cfg, nil, fmt.Errorf("load: rate %g out of range (0, %d] requests/s", cfg.Rate, MaxRate)
	}
	if cfg.MaxRequests == 0 {
		if cfg.Duration == 0 {
			return cfg, nil, errors.New("load: duration must be > 0 when max requests is not set")
		}
		if cfg.Duration > MaxDuration {
			return cfg, nil, fmt.Errorf("load: duration %s exceeds %s (set max requests for longer runs)", cfg.Duration, MaxDuration)
		}
	}
	if cfg.Timeout < 0 {
		return cfg, nil, fmt.Errorf("load: timeout %s is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodGet
	}
	if !strings.Contains(cfg.URL, "://") {
		return cfg, nil, fmt.Errorf("load: URL %q: scheme must be http, https or udp (e.g. http://host:port/path)", cfg.URL)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return cfg, nil, fmt.Errorf("load: bad URL: %w", err)
	}
	t := &target{scheme: u.Scheme, host: u.Host, path: u.RequestURI()}
	switch u.Scheme {
	case "http", "https":
		if cfg.UDPMode != "" {
			return cfg, nil, fmt.Errorf("load: UDP mode %q given for an %s URL", cfg.UDPMode, u.Scheme)
		}
		if strings.ContainsAny(cfg.Method, " \r\n") {
			return cfg, nil, fmt.Errorf("load: bad method %q", cfg.Method)
		}
	case "udp":
		if cfg.UDPMode == "" {
			cfg.UDPMode = UDPRequestReply
		}
		if cfg.UDPMode != UDPRequestReply && cfg.UDPMode != UDPFireForget {
			return cfg, nil, fmt.Errorf("load: UDP mode %q: want %s or %s", cfg.UDPMode, UDPRequestReply, UDPFireForget)
		}
		if len(cfg.Body) > 65507 {
			return cfg, nil, fmt.Errorf("load: UDP payload of %d bytes exceeds a datagram", len(cfg.Body))
		}
	default:
		return cfg, nil, fmt.Errorf("load: URL %q: scheme must be http, https or udp", cfg.URL)
	}
	if u.Host == "" {
		return cfg, nil, fmt.Errorf("load: URL %q has no host", cfg.URL)
	}
	t.hostPort = u.Host
	if u.Port() == "" {
		if u.Scheme == "udp" {
			return cfg, nil, fmt.Errorf("load: URL %q: udp needs a port", cfg.URL)
		}
		t.hostPort = u.Host + map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
	}
	return cfg, t, nil
}

// AllFailed is an error when every request failed, so an unreachable
// target fails a command rather than printing zeros; nil otherwise.
func (r *Result) AllFailed() error {
	if r.Mode == ModeCommand && r.Requests > 0 && r.Requests == r.Errors {
		return fmt.Errorf("the load command failed: %s", r.commandErr)
	}
	if r.Requests > 0 && r.Requests == r.Errors {
		return fmt.Errorf("every request failed (%s)", r.ErrorKinds())
	}
	return nil
}
