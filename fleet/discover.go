// Package fleet finds where, across many services, a fix gives back the most
// machines. It discovers instances through the Prometheus that already
// scrapes them (/api/v1/targets), ranks each service's instances by the CPU
// Prometheus measured, collects bounded bundles from the hottest and a random
// sample (collect.Collect), diagnoses each service's merged profiles with the
// rule catalog (rules.Run), and ranks every finding of every service by the
// cores it would recover: impact x the service's CPU.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/perfdoctor/perfdoctor/internal/redact"
)

// Defaults of Discovery.
const (
	DefaultGroupBy   = "job"
	DefaultCPUWindow = 5 * time.Minute
	// DefaultPprofLabel is the target label that, when present, gives the
	// instance's pprof endpoint: a port on the scrape host, a path on the
	// scrape address, or a whole URL.
	DefaultPprofLabel = "perfdoctor_pprof"
	// PprofAnnotationLabel is the same, from the Kubernetes pod annotation
	// perfdoctor.io/pprof, as Prometheus' Kubernetes discovery exposes it.
	PprofAnnotationLabel = "__meta_kubernetes_pod_annotation_perfdoctor_io_pprof"
	// CPUMetric is the counter client_golang's process collector exports.
	CPUMetric = "process_cpu_seconds_total"
)

// Discovery says where to find the fleet and how to read it.
type Discovery struct {
	// Prometheus is the server's base URL. Userinfo is sent as basic auth
	// and redacted when shown.
	Prometheus string
	// GroupBy is the target label naming the service (DefaultGroupBy).
	GroupBy string
	// Match selects targets by their labels; empty selects all.
	Match Matchers
	// PprofLabel names the label giving the pprof endpoint
	// (DefaultPprofLabel); PprofAnnotationLabel is always consulted after it.
	PprofLabel string
	// CPUWindow is the range of the rate() over CPUMetric (DefaultCPUWindow).
	CPUWindow time.Duration
	// Client makes the HTTP requests; nil means a client with a 30 s timeout.
	Client *http.Client
}

// Instance is one scrape target of a service.
type Instance struct {
	Service  string
	Name     string // the target's instance label
	Labels   map[string]string
	Pprof    string  // credentials redacted
	pprofRaw string  // with credentials, for requests
	Health   string  // Prometheus' view: up, down, unknown
	LastErr  string  // Prometheus' last scrape error
	CPU      float64 // from Prometheus; -1 when it has no CPUMetric series
}

// HasCPU reports whether Prometheus gave the instance's CPU.
func (i *Instance) HasCPU() bool { return i.CPU >= 0 }

// Service is the instances sharing a GroupBy label value.
type Service struct {
	Name      string
	Instances []*Instance // hottest first, instances without CPU last
	dir       string      // where its bundles and reports go
}

// Fleet is what discovery found.
type Fleet struct {
	Prometheus string // redacted
	GroupBy    string
	CPUQuery   string
	Services   []*Service // by name
	// Ungrouped counts selected targets lacking the GroupBy label.
	Ungrouped int
}

// Discover reads the active targets and the CPU of each from Prometheus.
func Discover(ctx context.Context, d Discovery) (*Fleet, error) {
	base, err := url.Parse(strings.TrimRight(d.Prometheus, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("--prometheus %q: want http(s)://host:port", RedactURL(d.Prometheus))
	}
	if d.GroupBy == "" {
		d.GroupBy = DefaultGroupBy
	}
	if d.PprofLabel == "" {
		d.PprofLabel = DefaultPprofLabel
	}
	if d.CPUWindow <= 0 {
		d.CPUWindow = DefaultCPUWindow
	}
	if d.Client == nil {
		d.Client = &http.Client{Timeout: 30 * time.Second}
	}
	shown := redact.URL(base)
	targets, err := activeTargets(ctx, d.Client, base)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", shown, err)
	}
	f := &Fleet{Prometheus: shown, GroupBy: d.GroupBy}
	byName := map[string]*Service{}
	for _, t := range targets {
		labels := t.Labels
		if !d.Match.Select(labels) {
			continue
		}
		name := labels[d.GroupBy]
		if name == "" {
			f.Ungrouped++
			continue
		}
		raw, err := PprofEndpoint(t.ScrapeURL, labels[d.PprofLabel], t.DiscoveredLabels[PprofAnnotationLabel])
		inst := &Instance{Service: name, Name: labels["instance"], Labels: labels, Health: t.Health, LastErr: t.LastError, CPU: -1}
		if err != nil {
			inst.LastErr = err.Error()
			inst.Health = "no-pprof"
		} else {
			inst.pprofRaw = raw
			inst.Pprof = RedactURL(raw)
		}
		s := byName[name]
		if s == nil {
			s = &Service{Name: name}
			byName[name] = s
			f.Services = append(f.Services, s)
		}
		s.Instances = append(s.Instances, inst)
	}
	sort.Slice(f.Services, func(i, j int) bool { return f.Services[i].Name < f.Services[j].Name })
	if len(f.Services) == 0 {
		return f, nil
	}
	f.CPUQuery = cpuQuery(d.Match, d.CPUWindow)
	cpu, err := queryCPU(ctx, d.Client, base, f.CPUQuery)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %s: %w", shown, f.CPUQuery, err)
	}
	for _, s := range f.Services {
		for _, in := range s.Instances {
			if v, ok := cpu[cpuKey{in.Labels["job"], in.Name}]; ok {
				in.CPU = v
			}
		}
		sort.SliceStable(s.Instances, func(i, j int) bool { return s.Instances[i].CPU > s.Instances[j].CPU })
	}
	return f, nil
}

// maxTargetsBytes bounds the targets document: ~1 KiB a target, so room
// for some 250k targets.
const maxTargetsBytes = 256 << 20

// target is an active target as /api/v1/targets describes it.
type target struct {
	DiscoveredLabels map[string]string `json:"discoveredLabels"`
	Labels           map[string]string `json:"labels"`
	ScrapeURL        string            `json:"scrapeUrl"`
	LastError        string            `json:"lastError"`
	Health           string            `json:"health"`
}

// activeTargets reads /api/v1/targets?state=active: dropped targets can
// outnumber active ones by far in Kubernetes and are of no use here.
func activeTargets(ctx context.Context, c *http.Client, base *url.URL) ([]target, error) {
	var data struct {
		Active []target `json:"activeTargets"`
	}
	if err := apiGet(ctx, c, base, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	return data.Active, nil
}

type cpuKey struct{ job, instance string }

// cpuQuery is the PromQL for each instance's cores: the rate of the process
// CPU counter, restricted by the same matchers as the targets.
func cpuQuery(m Matchers, window time.Duration) string {
	return fmt.Sprintf("sum by (job, instance) (rate(%s{%s}[%s]))", CPUMetric, m.PromQL(), model.Duration(window))
}

func queryCPU(ctx context.Context, c *http.Client, base *url.URL, q string) (map[cpuKey]float64, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     model.Vector `json:"result"`
	}
	if err := apiGet(ctx, c, base, "/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("answer is a %q, want a vector", data.ResultType)
	}
	out := make(map[cpuKey]float64, len(data.Result))
	for _, s := range data.Result {
		out[cpuKey{string(s.Metric["job"]), string(s.Metric["instance"])}] = float64(s.Value)
	}
	return out, nil
}

// maxAnswerBytes bounds an API answer: ~1 KiB a target, so room for some
// 250k targets.
const maxAnswerBytes = 256 << 20

// apiGet calls a Prometheus HTTP API endpoint and decodes its data.
func apiGet(ctx context.Context, c *http.Client, base *url.URL, path string, q url.Values, data any) error {
	u := base.JoinPath(path)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may hold credentials
		}
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxAnswerBytes {
		return fmt.Errorf("answer larger than %d MiB", maxAnswerBytes>>20)
	}
	var doc struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("HTTP %d, not the Prometheus API (%s)", resp.StatusCode, firstLine(body))
	}
	if doc.Status != "success" {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, doc.Error)
	}
	return json.Unmarshal(doc.Data, data)
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b[:min(len(b), 120)]))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// PprofEndpoint is the pprof base URL of a target: the scrape address
// itself, or what a label (then an annotation) gives: a port on the scrape
// host ("6060"), a path on the scrape address ("/internal/debug/pprof/"),
// or a whole URL ("http://10.0.0.7:6060/debug/pprof/").
func PprofEndpoint(scrapeURL string, hints ...string) (string, error) {
	su, err := url.Parse(scrapeURL)
	if err != nil || su.Host == "" {
		return "", fmt.Errorf("scrape URL %q has no host", RedactURL(scrapeURL))
	}
	base := &url.URL{Scheme: su.Scheme, Host: su.Host, User: su.User, Path: "/debug/pprof/"}
	for _, h := range hints {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
			continue
		case isPort(h):
			base.Host = net.JoinHostPort(su.Hostname(), h)
		case strings.HasPrefix(h, "/"):
			base.Path = h
		case strings.HasPrefix(h, "http://") || strings.HasPrefix(h, "https://"):
			u, err := url.Parse(h)
			if err != nil || u.Host == "" {
				return "", fmt.Errorf("pprof endpoint %q is not a URL", RedactURL(h))
			}
			return u.String(), nil
		default:
			return "", fmt.Errorf("pprof endpoint %q: want a port, a /path or an http(s) URL", RedactURL(h))
		}
		break
	}
	return base.String(), nil
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 65536
}

// RedactURL shows a URL with its credentials hidden; what does not parse is
// shown only up to any '@', where a password could end.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return redact.URL(u)
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		return "…" + raw[i:]
	}
	return raw
}

// Matcher selects targets by one label, as PromQL does.
type Matcher struct {
	Label, Op, Value string
	re               *regexp.Regexp
}

// Matchers all have to match.
type Matchers []Matcher

var matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(?:"((?:[^"\\]|\\.)*)"|([^,"]*?))\s*(?:,|$)`)

// ParseMatchers reads label matchers as PromQL writes them, braces
// optional: `team="payments",job=~"api-.*"`.
func ParseMatchers(s string) (Matchers, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	var ms Matchers
	for rest := s; strings.TrimSpace(rest) != ""; {
		m := matcherRE.FindStringSubmatchIndex(rest)
		if m == nil {
			return nil, fmt.Errorf("label matcher %q: want label=\"value\", label!=\"value\", label=~\"regex\" or label!~\"regex\"", strings.TrimSpace(rest))
		}
		sub := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return rest[m[2*i]:m[2*i+1]]
		}
		mt := Matcher{Label: sub(1), Op: sub(2), Value: sub(4)}
		if m[6] >= 0 {
			v, err := strconv.Unquote(`"` + sub(3) + `"`)
			if err != nil {
				return nil, fmt.Errorf("label matcher %s: %w", sub(1), err)
			}
			mt.Value = v
		}
		if mt.Op == "=~" || mt.Op == "!~" {
			re, err := regexp.Compile("^(?:" + mt.Value + ")$")
			if err != nil {
				return nil, fmt.Errorf("label matcher %s%s: %w", mt.Label, mt.Op, err)
			}
			mt.re = re
		}
		ms = append(ms, mt)
		rest = rest[m[1]:]
	}
	return ms, nil
}

// Select reports whether labels satisfy every matcher; an absent label is
// the empty string, as in PromQL.
func (ms Matchers) Select(labels map[string]string) bool {
	for _, m := range ms {
		v := labels[m.Label]
		var ok bool
		switch m.Op {
		case "=":
			ok = v == m.Value
		case "!=":
			ok = v != m.Value
		case "=~":
			ok = m.re.MatchString(v)
		case "!~":
			ok = !m.re.MatchString(v)
		}
		if !ok {
			return false
		}
	}
	return true
}

// PromQL writes the matchers inside a selector's braces.
func (ms Matchers) PromQL() string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Label + m.Op + strconv.Quote(m.Value)
	}
	return strings.Join(parts, ",")
}

func (ms Matchers) String() string { return "{" + ms.PromQL() + "}" }
