// Package pyroscopetest is a stand-in for a Pyroscope server in tests,
// written from Pyroscope's documented HTTP API, not from a real server: a
// real one cannot be built here (the module proxy refuses
// github.com/grafana/pyroscope's source). It takes profiles on POST /ingest
// as Pyroscope's own Go client (pyroscope-go) sends them, and answers the
// query API's ProfileTypes, Series and SelectMergeProfile over the Connect
// protocol, as perfdoctor's reader asks them. What it does not model:
// storage blocks, downsampling, tenants, the flame-graph APIs.
package pyroscopetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"
)

// Server holds what was ingested.
type Server struct {
	mu      sync.Mutex
	entries []entry
	// Ingested counts accepted uploads.
	Ingested int
}

type entry struct {
	labels     map[string]string
	typ        ProfileType
	from, till time.Time
	p          *profile.Profile // one sample type: typ's
}

// ProfileType is as the query API lists it. It is declared here apart from
// collect/pyroscope's on purpose: the stand-in spells the API from its
// documentation, so that a client's misspelling fails the tests.
type ProfileType struct {
	ID         string `json:"ID"`
	Name       string `json:"name"`
	SampleType string `json:"sampleType"`
	SampleUnit string `json:"sampleUnit"`
	PeriodType string `json:"periodType"`
	PeriodUnit string `json:"periodUnit"`
}

// Handler serves the ingest and query API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ingest", s.ingest)
	mux.HandleFunc("POST /querier.v1.QuerierService/ProfileTypes", s.profileTypes)
	mux.HandleFunc("POST /querier.v1.QuerierService/Series", s.series)
	mux.HandleFunc("POST /querier.v1.QuerierService/SelectMergeProfile", s.selectMergeProfile)
	return mux
}

// Add stores p under labels for [from, till), one entry per sample type,
// named as Pyroscope names the profiles of its Go client.
func (s *Server) Add(labels map[string]string, from, till time.Time, p *profile.Profile, display map[string]string) {
	name := profileName(p, display)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range p.SampleType {
		one := p.Copy()
		one.SampleType = []*profile.ValueType{st}
		for _, smp := range one.Sample {
			smp.Value = []int64{smp.Value[i]}
		}
		pt, pu := "", ""
		if p.PeriodType != nil {
			pt, pu = p.PeriodType.Type, p.PeriodType.Unit
		}
		typ := ProfileType{Name: name, SampleType: st.Type, SampleUnit: st.Unit, PeriodType: pt, PeriodUnit: pu}
		typ.ID = strings.Join([]string{typ.Name, typ.SampleType, typ.SampleUnit, typ.PeriodType, typ.PeriodUnit}, ":")
		s.entries = append(s.entries, entry{labels: labels, typ: typ, from: from, till: till, p: one})
	}
	s.Ingested++
}

// profileName is the __name__ Pyroscope gives a Go client's profile.
func profileName(p *profile.Profile, display map[string]string) string {
	for _, st := range p.SampleType {
		switch {
		case st.Type == "cpu":
			return "process_cpu"
		case strings.HasPrefix(st.Type, "alloc_") || strings.HasPrefix(st.Type, "inuse_"):
			return "memory"
		case st.Type == "goroutine" || st.Type == "goroutines":
			return "goroutines"
		case st.Type == "contentions" || st.Type == "delay":
			if strings.HasPrefix(display[st.Type], "mutex") {
				return "mutex"
			}
			return "block"
		}
	}
	return "unknown"
}

var appName = regexp.MustCompile(`^([^{]+)(?:\{(.*)\})?$`)

func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	m := appName.FindStringSubmatch(q.Get("name"))
	if m == nil {
		http.Error(w, "bad name", http.StatusBadRequest)
		return
	}
	labels := map[string]string{"service_name": m[1]}
	for _, kv := range strings.Split(m[2], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	from, till := unixAny(q.Get("from")), unixAny(q.Get("until"))
	if err := r.ParseMultipartForm(64 << 20); err != nil {
		http.Error(w, "want multipart pprof: "+err.Error(), http.StatusBadRequest)
		return
	}
	f, _, err := r.FormFile("profile")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	display := map[string]string{}
	if cf, _, err := r.FormFile("sample_type_config"); err == nil {
		var cfg map[string]struct {
			DisplayName string `json:"display-name"`
		}
		data, _ := io.ReadAll(cf)
		cf.Close()
		if json.Unmarshal(data, &cfg) == nil {
			for k, v := range cfg {
				display[k] = v.DisplayName
			}
		}
	}
	s.Add(labels, from, till, p, display)
}

// unixAny reads seconds, milliseconds or nanoseconds since the epoch, as
// Pyroscope's ingest does.
func unixAny(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	switch {
	case n > 1e17:
		return time.Unix(0, n)
	case n > 1e11:
		return time.UnixMilli(n)
	}
	return time.Unix(n, 0)
}

func (s *Server) profileTypes(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	seen := map[string]bool{}
	var types []ProfileType
	for _, e := range s.entries {
		if !seen[e.typ.ID] {
			seen[e.typ.ID] = true
			types = append(types, e.typ)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(types, func(a, b ProfileType) int { return strings.Compare(a.ID, b.ID) })
	writeJSON(w, map[string]any{"profileTypes": types})
}

type label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Matchers   []string `json:"matchers"`
		LabelNames []string `json:"labelNames"`
		Start, End int64
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		connectError(w, "invalid_argument", err.Error())
		return
	}
	var sels []selector
	for _, m := range req.Matchers {
		sel, err := parseSelector(m)
		if err != nil {
			connectError(w, "invalid_argument", err.Error())
			return
		}
		sels = append(sels, sel)
	}
	from, till := time.UnixMilli(req.Start), time.UnixMilli(req.End)
	s.mu.Lock()
	seen := map[string]bool{}
	var out []map[string][]label
	for _, e := range s.entries {
		if !e.overlaps(from, till) || (len(sels) > 0 && !slices.ContainsFunc(sels, func(sel selector) bool { return sel.matches(e.labels) })) {
			continue
		}
		var ls []label
		for k, v := range e.labels {
			if len(req.LabelNames) == 0 || slices.Contains(req.LabelNames, k) {
				ls = append(ls, label{k, v})
			}
		}
		slices.SortFunc(ls, func(a, b label) int { return strings.Compare(a.Name, b.Name) })
		key := fmt.Sprint(ls)
		if !seen[key] {
			seen[key] = true
			out = append(out, map[string][]label{"labels": ls})
		}
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"labelsSet": out})
}

func (e entry) overlaps(from, till time.Time) bool { return e.from.Before(till) && e.till.After(from) }

func (s *Server) selectMergeProfile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") != "application/proto" {
		connectError(w, "unimplemented", "this stand-in answers application/proto only")
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		connectError(w, "invalid_argument", err.Error())
		return
	}
	var typeID, selText string
	var start, end int64
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			connectError(w, "invalid_argument", "bad protobuf")
			return
		}
		data = data[n:]
		switch {
		case typ == protowire.BytesType:
			v, m := protowire.ConsumeString(data)
			if m < 0 {
				connectError(w, "invalid_argument", "bad protobuf")
				return
			}
			if num == 1 {
				typeID = v
			} else if num == 2 {
				selText = v
			}
			n = m
		case typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(data)
			if m < 0 {
				connectError(w, "invalid_argument", "bad protobuf")
				return
			}
			if num == 3 {
				start = int64(v)
			} else if num == 4 {
				end = int64(v)
			}
			n = m
		default:
			n = protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				connectError(w, "invalid_argument", "bad protobuf")
				return
			}
		}
		data = data[n:]
	}
	sel, err := parseSelector(selText)
	if err != nil {
		connectError(w, "invalid_argument", err.Error())
		return
	}
	from, till := time.UnixMilli(start), time.UnixMilli(end)
	var ps []*profile.Profile
	s.mu.Lock()
	for _, e := range s.entries {
		if e.typ.ID == typeID && e.overlaps(from, till) && sel.matches(e.labels) {
			ps = append(ps, e.p)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/proto")
	if len(ps) == 0 {
		return // an empty Profile message
	}
	for i, p := range ps { // Merge wants equal periods; uploads' may differ
		if i > 0 {
			p = p.Copy()
			p.Period = ps[0].Period
			ps[i] = p
		}
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		connectError(w, "internal", err.Error())
		return
	}
	if err := merged.WriteUncompressed(w); err != nil {
		connectError(w, "internal", err.Error())
	}
}

// selector is a label selector: {a="b",c=~"re"}.
type selector []struct {
	name, op string
	re       *regexp.Regexp
	value    string
}

var matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_.]*)\s*(=~|=)\s*("(?:[^"\\]|\\.)*")\s*(?:,|$)`)

func parseSelector(s string) (selector, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("parse error: selector %q", s)
	}
	rest := s[1 : len(s)-1]
	var sel selector
	for strings.TrimSpace(rest) != "" {
		m := matcherRE.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("parse error: selector %q", s)
		}
		v, err := strconv.Unquote(m[3])
		if err != nil {
			return nil, fmt.Errorf("parse error: selector %q", s)
		}
		item := sel[:0:0]
		item = append(item, struct {
			name, op string
			re       *regexp.Regexp
			value    string
		}{name: m[1], op: m[2], value: v})
		if m[2] == "=~" {
			if item[0].re, err = regexp.Compile("^(?:" + v + ")$"); err != nil {
				return nil, err
			}
		}
		sel = append(sel, item[0])
		rest = rest[len(m[0]):]
	}
	return sel, nil
}

func (sel selector) matches(labels map[string]string) bool {
	for _, m := range sel {
		v := labels[m.name]
		if (m.re != nil && !m.re.MatchString(v)) || (m.re == nil && v != m.value) {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func connectError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}
