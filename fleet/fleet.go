package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// SchemaVersion is the version of the fleet report's JSON; docs/fleet.md.
const SchemaVersion = 1

// Options is one fleet run.
type Options struct {
	Discovery
	Plan
	Tool string // "perfdoctor VERSION", written into every report
}

// Report is the fleet report every format renders; its JSON is documented
// in docs/fleet.md.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	Prometheus    string `json:"prometheus"`
	// Store, for a run over a profile store instead of Prometheus' targets,
	// names it ("pyroscope http://host:4040"); From and To are the time
	// range its profiles were read over.
	Store    string     `json:"store,omitempty"`
	From     *time.Time `json:"from,omitempty"`
	To       *time.Time `json:"to,omitempty"`
	GroupBy  string     `json:"group_by"`
	Match    string     `json:"match,omitempty"`
	CPUQuery string     `json:"cpu_query"`
	Start    time.Time  `json:"start"`
	End      time.Time  `json:"end"`
	// Partial is true when some picked instance could not be collected.
	Partial   bool           `json:"partial"`
	Plan      PlanSummary    `json:"plan"`
	Savings   []Saving       `json:"savings"`
	Services  []*ServiceDiag `json:"services"`
	Ungrouped int            `json:"ungrouped_targets"`
	// Dir is where the bundles and per-service reports are; report paths
	// are relative to it.
	Dir string `json:"dir"`
}

// PlanSummary is the collection plan as run.
type PlanSummary struct {
	Hottest              int     `json:"hottest"`
	Sample               int     `json:"sample"`
	Seed                 uint64  `json:"seed"`
	Concurrency          int     `json:"concurrency"`
	DurationSeconds      float64 `json:"duration_seconds"`
	TargetTimeoutSeconds float64 `json:"target_timeout_seconds"`
	BudgetSeconds        float64 `json:"budget_seconds"`
}

// Saving is one finding of one service with the cores its fix would give
// back: Impact x the service's CPU, for findings about CPU.
type Saving struct {
	Rank         int            `json:"rank"`
	Service      string         `json:"service"`
	Rule         string         `json:"rule"`
	Class        string         `json:"class"`
	Severity     rules.Severity `json:"severity"`
	Impact       float64        `json:"impact"`
	Resource     string         `json:"resource"`
	ServiceCores float64        `json:"service_cores"`
	// Cores is nil for findings about memory or latency: they save
	// something other than CPU and rank after every CPU saving.
	Cores   *float64 `json:"cores"`
	Summary string   `json:"summary"`
	Report  string   `json:"report"` // the service's HTML report, relative to Dir
}

// CPU sources of a service's cores.
const (
	CPUFromPrometheus = "prometheus"
	CPUFromProfile    = "profile"
	CPUMixed          = "prometheus+profile"
	CPUUnknown        = "unknown"
)

// ServiceDiag is one service: its instances, their collection, the merged
// diagnosis and the instances that differ from it.
type ServiceDiag struct {
	Name string `json:"name"`
	// Cores is the CPU the service uses across all its instances; CPUSource
	// says where it came from (docs/fleet.md).
	Cores      float64         `json:"cores"`
	CPUSource  string          `json:"cpu_source"`
	Collected  int             `json:"collected"`
	Findings   []rules.Finding `json:"findings"`
	ReportHTML string          `json:"report_html,omitempty"`
	ReportJSON string          `json:"report_json,omitempty"`
	MergedCPU  string          `json:"merged_cpu,omitempty"` // pprof-merged CPU profile
	// Representative is the instance whose per-process state (heap, GC,
	// runtime statistics, trace) the merged diagnosis uses.
	Representative string           `json:"representative,omitempty"`
	Error          string           `json:"error,omitempty"`
	Instances      []InstanceReport `json:"instances"`
}

// InstanceReport is one instance of a service.
type InstanceReport struct {
	Instance string `json:"instance"`
	PprofURL string `json:"pprof_url,omitempty"`
	Health   string `json:"health"`
	// Cores is the instance's CPU; CPUSource is "prometheus" or "profile"
	// (measured from its CPU profile), absent when unknown.
	Cores     *float64    `json:"cores"`
	CPUSource string      `json:"cpu_source,omitempty"`
	Picked    string      `json:"picked,omitempty"`
	Status    string      `json:"status"`
	Error     string      `json:"error,omitempty"`
	Bundle    string      `json:"bundle,omitempty"` // relative to Dir
	Top       *TopFinding `json:"top_finding,omitempty"`
	// Outlier says why this instance differs from its service, if it does.
	Outlier string `json:"outlier,omitempty"`
}

// TopFinding is an instance's own first finding.
type TopFinding struct {
	Rule   string  `json:"rule"`
	Class  string  `json:"class"`
	Impact float64 `json:"impact"`
}

// Run discovers the fleet, collects it within the plan, diagnoses every
// service and ranks the savings. Instances that fail are recorded and the
// rest goes on; only discovery failing, or nothing at all selected, fails.
func Run(ctx context.Context, opt Options) (*Report, error) {
	f, err := Discover(ctx, opt.Discovery)
	if err != nil {
		return nil, err
	}
	if len(f.Services) == 0 {
		return nil, fmt.Errorf("prometheus %s: no active target has a %q label%s", f.Prometheus, f.GroupBy, matchNote(opt.Match))
	}
	return Diagnose(ctx, f, opt)
}

func matchNote(m Matchers) string {
	if len(m) == 0 {
		return ""
	}
	return " and matches " + m.String()
}

// Diagnose collects and diagnoses a discovered fleet.
func Diagnose(ctx context.Context, f *Fleet, opt Options) (*Report, error) {
	start := time.Now()
	p := opt.Plan.withDefaults()
	if p.OutDir == "" {
		return nil, errors.New("fleet: no output directory")
	}
	if err := os.MkdirAll(p.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	byService := p.collectAll(ctx, f)
	r := &Report{
		SchemaVersion: SchemaVersion, Tool: opt.Tool, Prometheus: f.Prometheus, GroupBy: f.GroupBy,
		CPUQuery: f.CPUQuery, Start: start, Ungrouped: f.Ungrouped, Dir: p.OutDir, Savings: []Saving{},
		Plan: PlanSummary{
			Hottest: p.Hottest, Sample: p.Sample, Seed: p.Seed, Concurrency: p.Concurrency,
			DurationSeconds: p.Duration.Seconds(), TargetTimeoutSeconds: p.TargetTimeout.Seconds(), BudgetSeconds: p.Budget.Seconds(),
		},
	}
	if len(opt.Match) > 0 {
		r.Match = opt.Match.String()
	}
	for _, s := range f.Services {
		sd := diagnoseService(ctx, s.Name, s.dir, byService[s.Name], p.OutDir, opt.Tool, scrapedMerge)
		for _, in := range sd.Instances {
			if in.Picked != "" && in.Status != StatusOK {
				r.Partial = true
			}
		}
		r.Services = append(r.Services, sd)
	}
	r.Savings = rankSavings(r.Services)
	r.End = time.Now()
	return r, nil
}

// scrapedMerge are the kinds merged across a scraped service's instances:
// the CPU profile is windowed and adds up across processes; the rest of a
// bundle (heap, goroutines, runtime statistics, trace) is per-process
// state and comes from the representative instance.
var scrapedMerge = []evidence.Kind{evidence.CPU}

// diagnoseService diagnoses each collected instance alone (for outliers)
// and the service as one: the instances' profiles of the merged kinds
// merged.
func diagnoseService(ctx context.Context, name, dir string, cs []*Collected, outDir, tool string, mergeKinds []evidence.Kind) *ServiceDiag {
	sd := &ServiceDiag{Name: name, Findings: []rules.Finding{}, Instances: []InstanceReport{}}
	var sources []string
	// Profiles are merged as instances come, so that one instance's
	// evidence at a time is held beside the first one's and the merge.
	m := newMerger()
	var first *evidence.Evidence // the hottest collected instance's
	for _, c := range cs {
		ir := InstanceReport{Instance: c.Name, PprofURL: c.Pprof, Health: c.Health, Picked: c.Picked, Status: c.Status, Error: c.Error}
		if c.HasCPU() {
			v := c.CPU
			ir.Cores, ir.CPUSource = &v, CPUFromPrometheus
		}
		if c.Status == StatusOK || c.Status == StatusPartial {
			req, source := diagnose.Request{Paths: []string{c.Bundle}, Tool: tool}, c.Bundle
			if c.Load != nil {
				ev, err := c.Load(ctx)
				if err != nil {
					ir.Status, ir.Error = StatusFailed, err.Error()
					sd.Instances = append(sd.Instances, ir) // nothing kept
					continue
				}
				req = diagnose.Request{Evidence: ev, Tool: tool}
				if len(ev.Sources) > 0 {
					source = ev.Sources[0]
				}
			}
			rep, err := diagnose.Run(ctx, req)
			if err != nil {
				ir.Status, ir.Error = StatusFailed, err.Error()
			} else if cpu := rep.Evidence.Profile(evidence.CPU); cpu == nil {
				ir.Status, ir.Error = StatusFailed, "bundle has no CPU profile"
			} else {
				if ir.Cores == nil {
					if v, ok := profileCores(cpu); ok {
						ir.Cores, ir.CPUSource = &v, CPUFromProfile
					}
				}
				if len(rep.Findings) > 0 {
					top := rep.Findings[0]
					ir.Top = &TopFinding{Rule: top.Rule, Class: top.Class, Impact: top.Impact}
				}
				if len(sources) == 0 {
					sd.Representative = c.Name // the hottest collected
					first = rep.Evidence
				}
				sources = append(sources, source)
				for _, k := range mergeKinds {
					m.add(k, rep.Evidence.Profile(k))
				}
				sd.Collected++
			}
		}
		if c.Bundle != "" {
			ir.Bundle = rel(outDir, c.Bundle)
		}
		sd.Instances = append(sd.Instances, ir)
	}
	sd.Cores, sd.CPUSource = serviceCores(sd.Instances)
	if len(sources) == 0 {
		sd.Error = "no instance could be collected"
		return sd
	}
	merged, err := m.result()
	if err != nil {
		sd.Error = fmt.Sprintf("service %s: %v", sd.Name, err)
		return sd
	}
	if err := sd.diagnoseMerged(ctx, first, sources, merged, m.count, dir, outDir, tool); err != nil {
		sd.Error = err.Error()
		return sd
	}
	markOutliers(sd)
	return sd
}

// merger merges the instances' profiles of each kind as they come, a few
// at a time: holding every instance's profiles until the end would cost
// memory in proportion to the instances, merging each as it comes would
// cost CPU in proportion to their square.
type merger struct {
	merged  map[evidence.Kind]*profile.Profile
	pending map[evidence.Kind][]*profile.Profile
	count   map[evidence.Kind]int // instances merged into each
	err     error
}

// mergeBatch is how many profiles of a kind wait before being merged.
const mergeBatch = 4

func newMerger() *merger {
	return &merger{merged: map[evidence.Kind]*profile.Profile{}, pending: map[evidence.Kind][]*profile.Profile{}, count: map[evidence.Kind]int{}}
}

func (m *merger) add(k evidence.Kind, p *profile.Profile) {
	if p == nil || m.err != nil {
		return
	}
	m.count[k]++
	m.pending[k] = append(m.pending[k], p)
	if len(m.pending[k]) >= mergeBatch {
		m.flush(k)
	}
}

func (m *merger) flush(k evidence.Kind) {
	ps := m.pending[k]
	if m.merged[k] != nil {
		ps = append([]*profile.Profile{m.merged[k]}, ps...)
	}
	m.pending[k] = nil
	switch len(ps) {
	case 0:
		return
	case 1:
		m.merged[k] = ps[0]
		return
	}
	merged, err := mergeProfiles(ps)
	if err != nil {
		m.err = fmt.Errorf("merging %s profiles: %w", k, err)
		return
	}
	m.merged[k] = merged
}

// result merges what is pending and returns the merge of each kind.
func (m *merger) result() (map[evidence.Kind]*profile.Profile, error) {
	for _, k := range slices.Sorted(maps.Keys(m.pending)) {
		m.flush(k)
	}
	return m.merged, m.err
}

// diagnoseMerged runs the catalog over the service: the profiles of the
// merged kinds of all collected instances merged, and the rest of the
// evidence of the first (hottest) one. It writes the merged CPU profile and
// the service's reports.
func (sd *ServiceDiag) diagnoseMerged(ctx context.Context, first *evidence.Evidence, sources []string, mergedKinds map[evidence.Kind]*profile.Profile, count map[evidence.Kind]int, dir, outDir, tool string) error {
	b := first.Derive().Sources(sources...)
	for _, k := range slices.Sorted(maps.Keys(mergedKinds)) {
		if count[k] < 2 {
			continue
		}
		merged := mergedKinds[k]
		b.Profile(k, merged)
		if k != evidence.CPU {
			continue
		}
		path := filepath.Join(dir, "merged-cpu.pb.gz")
		if _, err := bundle.WriteProfile(path, merged); err != nil {
			return fmt.Errorf("service %s: %w", sd.Name, err)
		}
		sd.MergedCPU = rel(outDir, path)
	}
	rep, err := diagnose.Run(ctx, diagnose.Request{Evidence: b.Evidence(), Tool: tool})
	if err != nil {
		return fmt.Errorf("service %s: %w", sd.Name, err)
	}
	sd.Findings = rep.Findings
	rep.Inputs.Target = sd.Name
	if err := diagnose.SaveReports(dir, rep); err != nil {
		return fmt.Errorf("service %s: %w", sd.Name, err)
	}
	sd.ReportHTML, sd.ReportJSON = rel(outDir, filepath.Join(dir, "report.html")), rel(outDir, filepath.Join(dir, "report.json"))
	return nil
}

// mergeProfiles merges the instances' profiles of one kind. Instances
// sampled at different periods (a store's, or differently configured
// processes) are merged at the first one's: pprof's merge refuses
// unequal periods, and the values are already totals.
func mergeProfiles(ps []*profile.Profile) (*profile.Profile, error) {
	same := make([]*profile.Profile, len(ps))
	copy(same, ps)
	for i, p := range same[1:] {
		if p.Period != same[0].Period {
			p = p.Copy()
			p.Period = same[0].Period
			same[i+1] = p
		}
	}
	return profile.Merge(same)
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}

// profileCores is the CPU a profile measured: its CPU time over its window.
func profileCores(p *profile.Profile) (float64, bool) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 || p.DurationNanos <= 0 {
		return 0, false
	}
	var ns int64
	for _, s := range p.Sample {
		ns += s.Value[idx]
	}
	return float64(ns) / float64(p.DurationNanos), true
}

// serviceCores adds up the instances' CPU. Instances with neither a
// Prometheus figure nor a profile count as the mean of those known, so a
// service sampled at 5 of 200 instances still weighs 200 instances.
func serviceCores(ins []InstanceReport) (float64, string) {
	var sum float64
	var known, fromProm, fromProfile int
	for _, in := range ins {
		if in.Cores == nil {
			continue
		}
		sum += *in.Cores
		known++
		if in.CPUSource == CPUFromPrometheus {
			fromProm++
		} else {
			fromProfile++
		}
	}
	if known == 0 {
		return 0, CPUUnknown
	}
	total := sum * float64(len(ins)) / float64(known)
	switch {
	case fromProfile == 0:
		return total, CPUFromPrometheus
	case fromProm == 0:
		return total, CPUFromProfile
	}
	return total, CPUMixed
}

// Outlier thresholds: an instance's own top finding is worth a line when it
// is not the service's and recovers at least minOutlierImpact; an instance
// using more than hotOutlierFactor x the service's median CPU is one too.
const (
	minOutlierImpact = 0.05
	hotOutlierFactor = 2.0
)

func markOutliers(sd *ServiceDiag) {
	serviceTop := ""
	if len(sd.Findings) > 0 {
		serviceTop = sd.Findings[0].Class
	}
	var cores []float64
	for _, in := range sd.Instances {
		if in.Cores != nil {
			cores = append(cores, *in.Cores)
		}
	}
	sort.Float64s(cores)
	median := 0.0
	if len(cores) >= 3 {
		median = cores[len(cores)/2]
	}
	for i := range sd.Instances {
		in := &sd.Instances[i]
		var why []string
		if in.Top != nil && in.Top.Class != serviceTop && in.Top.Impact >= minOutlierImpact {
			why = append(why, fmt.Sprintf("its own top finding is %s (%s of its CPU), not the service's", in.Top.Class, human.Percent(in.Top.Impact)))
		}
		if median > 0 && in.Cores != nil && *in.Cores > hotOutlierFactor*median {
			why = append(why, fmt.Sprintf("uses %.2f cores, %.1fx the service's median", *in.Cores, *in.Cores/median))
		}
		in.Outlier = strings.Join(why, "; ")
	}
}

// rankSavings lists every finding of every service, CPU savings first by
// cores, then the rest by impact.
func rankSavings(services []*ServiceDiag) []Saving {
	out := []Saving{}
	for _, s := range services {
		for _, f := range s.Findings {
			sv := Saving{Service: s.Name, Rule: f.Rule, Class: f.Class, Severity: f.Severity, Impact: f.Impact,
				Resource: f.Resource, ServiceCores: s.Cores, Summary: f.Summary, Report: s.ReportHTML}
			if f.Resource == "" || f.Resource == "cpu" {
				c := f.Impact * s.Cores
				sv.Cores = &c
			}
			out = append(out, sv)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Cores == nil) != (b.Cores == nil) {
			return a.Cores != nil
		}
		if a.Cores != nil && *a.Cores != *b.Cores {
			return *a.Cores > *b.Cores
		}
		if a.Impact != b.Impact {
			return a.Impact > b.Impact
		}
		return a.Service < b.Service
	})
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

// ErrNothingCollected is returned by callers that want a non-zero exit when
// no instance at all could be collected.
var ErrNothingCollected = errors.New("no instance could be collected")

// Source names where the fleet was read from: the Prometheus server, or
// the store and its time range.
func (r *Report) Source() string {
	if r.Store == "" {
		return r.Prometheus
	}
	s := r.Store
	if r.From != nil && r.To != nil {
		s += " " + r.From.UTC().Format(time.RFC3339) + ".." + r.To.UTC().Format(time.RFC3339)
	}
	return s
}

// Collected reports how many instances were collected across services.
func (r *Report) Collected() int {
	n := 0
	for _, s := range r.Services {
		n += s.Collected
	}
	return n
}
