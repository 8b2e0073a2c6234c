// Package pyroscope reads a Grafana Pyroscope server through its query API
// (the Connect protocol over HTTP/1.1): the services and instances it
// holds profiles for (Series), the profile types it stores (ProfileTypes),
// and a selection's profiles merged over a time range, as pprof
// (SelectMergeProfile). It is a store.Reader.
package pyroscope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/internal/redact"
)

// Labels Pyroscope's own clients set.
const (
	DefaultServiceLabel  = "service_name"
	DefaultInstanceLabel = "instance"
)

// maxAnswer bounds one answer in memory.
const maxAnswer = 256 << 20

// Client reads one Pyroscope server.
type Client struct {
	base  *url.URL // without credentials
	shown string   // base, credentials redacted
	user  *url.Userinfo
	http  *http.Client
	// Tenant, when set, is sent as X-Scope-OrgID (multi-tenant servers).
	Tenant string
	// ServiceLabel and InstanceLabel name the labels that make services and
	// instances (DefaultServiceLabel, DefaultInstanceLabel).
	ServiceLabel, InstanceLabel string

	typesOnce sync.Once
	types     []ProfileType
	typesErr  error
}

// New reads the server at rawURL (http://host:4040); userinfo in it is sent
// as basic auth. A nil hc is http.DefaultClient.
func New(rawURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("pyroscope URL %q: want http(s)://host:port", redactRaw(rawURL))
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{base: u, shown: redact.URL(u), user: u.User, http: hc,
		ServiceLabel: DefaultServiceLabel, InstanceLabel: DefaultInstanceLabel}
	base := *u
	base.User = nil
	c.base = &base
	return c, nil
}

func redactRaw(s string) string {
	if u, err := url.Parse(s); err == nil {
		return redact.URL(u)
	}
	return "(unparsable)"
}

// Describe names the server, credentials redacted.
func (c *Client) Describe() string { return "pyroscope " + c.shown }

// ProfileType is one type of profile the server stores, as its ID
// <name>:<type>:<unit>:<period_type>:<period_unit> spells it.
type ProfileType struct {
	ID         string `json:"ID"`
	Name       string `json:"name"`
	SampleType string `json:"sampleType"`
	SampleUnit string `json:"sampleUnit"`
	PeriodType string `json:"periodType"`
	PeriodUnit string `json:"periodUnit"`
}

// ProfileTypes lists the profile types the server holds in r.
func (c *Client) ProfileTypes(ctx context.Context, r store.Range) ([]ProfileType, error) {
	var ans struct {
		ProfileTypes []ProfileType `json:"profileTypes"`
	}
	req := map[string]any{"start": r.From.UnixMilli(), "end": r.To.UnixMilli()}
	if err := c.callJSON(ctx, "ProfileTypes", req, &ans); err != nil {
		return nil, err
	}
	return ans.ProfileTypes, nil
}

// Series lists the services, and their instances, holding profiles in r.
func (c *Client) Series(ctx context.Context, r store.Range, service string) ([]store.Series, error) {
	matcher := "{" + c.ServiceLabel + `=~".+"}`
	if service != "" {
		matcher = c.selector(store.Series{Service: service})
	}
	req := map[string]any{"matchers": []string{matcher}, "labelNames": []string{c.ServiceLabel, c.InstanceLabel},
		"start": r.From.UnixMilli(), "end": r.To.UnixMilli()}
	var ans struct {
		LabelsSet []struct {
			Labels []struct{ Name, Value string } `json:"labels"`
		} `json:"labelsSet"`
	}
	if err := c.callJSON(ctx, "Series", req, &ans); err != nil {
		return nil, err
	}
	seen := map[store.Series]bool{}
	var out []store.Series
	for _, ls := range ans.LabelsSet {
		var s store.Series
		for _, l := range ls.Labels {
			switch l.Name {
			case c.ServiceLabel:
				s.Service = l.Value
			case c.InstanceLabel:
				s.Instance = l.Value
			}
		}
		if s.Service == "" || seen[s] || (service != "" && s.Service != service) {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b store.Series) int {
		if a.Service != b.Service {
			return strings.Compare(a.Service, b.Service)
		}
		return strings.Compare(a.Instance, b.Instance)
	})
	return out, nil
}

// wanted says which stored types make each kind: the profile name
// Pyroscope gives it and the sample types to combine, the first the
// default.
var wanted = []struct {
	kind  store.Kind
	name  string
	types []string
}{
	{store.CPU, "process_cpu", []string{"cpu"}},
	{store.Allocs, "memory", []string{"alloc_space", "alloc_objects"}},
	{store.Mutex, "mutex", []string{"delay", "contentions"}},
	{store.Block, "block", []string{"delay", "contentions"}},
}

// Profiles returns s's profiles of every kind the server stores, merged
// over r.
func (c *Client) Profiles(ctx context.Context, r store.Range, s store.Series) (map[store.Kind]*profile.Profile, error) {
	c.typesOnce.Do(func() { c.types, c.typesErr = c.ProfileTypes(ctx, r) })
	if c.typesErr != nil {
		return nil, c.typesErr
	}
	sel := c.selector(s)
	out := map[store.Kind]*profile.Profile{}
	for _, w := range wanted {
		var parts []*profile.Profile
		for _, st := range w.types {
			i := slices.IndexFunc(c.types, func(t ProfileType) bool { return t.Name == w.name && t.SampleType == st })
			if i < 0 {
				continue
			}
			p, err := c.MergeProfile(ctx, c.types[i].ID, sel, r)
			if err != nil {
				return nil, err
			}
			if p != nil {
				parts = append(parts, p)
			}
		}
		p, err := store.Combine(w.types[0], parts...)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", c.Describe(), w.kind, err)
		}
		if p != nil {
			out[w.kind] = p
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %s: %w in %s .. %s", c.Describe(), sel, store.ErrNoProfiles,
			r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// selector is the label selector of a series, values quoted as PromQL does.
func (c *Client) selector(s store.Series) string {
	sel := "{" + c.ServiceLabel + "=" + strconv.Quote(s.Service)
	if s.Instance != "" {
		sel += "," + c.InstanceLabel + "=" + strconv.Quote(s.Instance)
	}
	return sel + "}"
}

// MergeProfile is the profile of type typeID matching selector, merged over
// r; nil when nothing matched. Its DurationNanos is r's.
func (c *Client) MergeProfile(ctx context.Context, typeID, selector string, r store.Range) (*profile.Profile, error) {
	// SelectMergeProfileRequest: profile_typeID = 1, label_selector = 2,
	// start = 3, end = 4 (milliseconds). Its answer is google.v1.Profile,
	// which is pprof's profile.proto.
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendString(req, typeID)
	req = protowire.AppendTag(req, 2, protowire.BytesType)
	req = protowire.AppendString(req, selector)
	req = protowire.AppendTag(req, 3, protowire.VarintType)
	req = protowire.AppendVarint(req, uint64(r.From.UnixMilli()))
	req = protowire.AppendTag(req, 4, protowire.VarintType)
	req = protowire.AppendVarint(req, uint64(r.To.UnixMilli()))
	body, err := c.call(ctx, "SelectMergeProfile", "application/proto", req)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, nil // an empty message: nothing matched
	}
	p, err := profile.ParseData(body)
	if err != nil {
		return nil, fmt.Errorf("%s SelectMergeProfile %s: answer is not a pprof profile: %w", c.Describe(), typeID, err)
	}
	if len(p.Sample) == 0 {
		return nil, nil
	}
	if p.TimeNanos == 0 {
		p.TimeNanos = r.From.UnixNano()
	}
	p.DurationNanos = r.Duration().Nanoseconds()
	return p, nil
}

func (c *Client) callJSON(ctx context.Context, method string, req, ans any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	body, err := c.call(ctx, method, "application/json", data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, ans); err != nil {
		return fmt.Errorf("%s %s: answer is not the JSON expected: %w", c.Describe(), method, err)
	}
	return nil
}

// call makes one unary Connect call of querier.v1.QuerierService.
func (c *Client) call(ctx context.Context, method, contentType string, data []byte) ([]byte, error) {
	u := c.base.JoinPath("querier.v1.QuerierService", method)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.Describe(), method, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Connect-Protocol-Version", "1")
	if c.user != nil {
		pw, _ := c.user.Password()
		req.SetBasicAuth(c.user.Username(), pw)
	}
	if c.Tenant != "" {
		req.Header.Set("X-Scope-OrgID", c.Tenant)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in our own message, redacted
		}
		return nil, fmt.Errorf("%s %s: %w", c.Describe(), method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", c.Describe(), method, err)
	}
	if len(body) > maxAnswer {
		return nil, fmt.Errorf("%s %s: answer larger than %d MiB", c.Describe(), method, maxAnswer>>20)
	}
	if resp.StatusCode != http.StatusOK {
		// Connect errors are JSON: {"code": "...", "message": "..."}.
		var ce struct{ Code, Message string }
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &ce) == nil && (ce.Code != "" || ce.Message != "") {
			msg = strings.TrimSpace(ce.Code + ": " + ce.Message)
		}
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		msg = strings.ReplaceAll(msg, "\n", " ")
		return nil, fmt.Errorf("%s %s: %s: %s", c.Describe(), method, resp.Status, msg)
	}
	return body, nil
}
