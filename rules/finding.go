package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Severity ranks how much a finding matters. A healthy service must come out
// with nothing above Low.
type Severity int

const (
	Info Severity = iota
	Low
	Medium
	High
)

var severityNames = [...]string{"info", "low", "medium", "high"}

func (s Severity) String() string {
	if s < Info || s > High {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Severity) UnmarshalText(b []byte) error {
	for i, n := range severityNames {
		if string(b) == n {
			*s = Severity(i)
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// SeverityFor grades a recoverable share with the thresholds most rules use:
// 20% of CPU is worth a change today, 8% this quarter, 2% a note.
func SeverityFor(share float64) Severity {
	switch {
	case share >= 0.20:
		return High
	case share >= 0.08:
		return Medium
	case share >= 0.02:
		return Low
	}
	return Info
}

// Finding is one diagnosis with its evidence and prescription. Its JSON form
// is the contract documented in docs/schema.md.
type Finding struct {
	// ID names the finding within one diagnosis, for links: the rule ID,
	// with "#2", "#3"... for a rule's further findings.
	ID       string   `json:"id"`
	Rule     string   `json:"rule"`
	Class    string   `json:"class"`
	Severity Severity `json:"severity"`
	// Impact is the estimated fraction of the resource (CPU unless Resource
	// says otherwise) that the fix can recover, in [0, 1]: all of the cost
	// where the fix removes the work (a cache, precompression, an index,
	// batching), less where it only speeds the work up.
	Impact float64 `json:"impact"`
	// ImpactRange, when set, is the least and the most the fix recovers
	// ([low, high], Impact within it): a fix whose gain depends on what
	// the user picks (a compression level, a batch size) says so.
	ImpactRange *[2]float64 `json:"impact_range,omitempty"`
	// RemovesWork says the fix removes the work rather than making it
	// cheaper (a cache, content compressed once, an index, a debug level or
	// a per-request pass turned off). The gain then has a floor and no top
	// the evidence can state: the work drags writes, copies, collections
	// and scheduling the profile does not tie to it, which go too, so what
	// is left after the fix is not in the evidence. Of the eleven such
	// fixes the corpus measured, six gained more than the top their
	// findings stated, 1.16 to 16 times it, and none less than its floor
	// in CPU per unit (one, a debug level on a JVM sharing its cores with
	// the load, less in throughput: 1.37x for a floor of 1.51x, its CPU per
	// request 1.56x); the casebook's R3, a compressed response cached,
	// gained 966x the throughput for a top of 8x (docs/ranking.md, gains
	// that match the fix).
	RemovesWork bool `json:"removes_work,omitempty"`
	// OverheadCounted says the rule already counted the collector's and
	// scheduler's share its work drags, so the engine adds none.
	OverheadCounted bool       `json:"-"`
	Resource        string     `json:"resource"`     // "cpu", "memory" or "latency"
	ImpactBasis     string     `json:"impact_basis"` // how Impact was computed
	Summary         string     `json:"summary"`
	Evidence        []Fact     `json:"evidence"`
	Fix             string     `json:"fix"`
	Example         string     `json:"example,omitempty"` // a short code or config change
	Caveats         []string   `json:"caveats,omitempty"`
	Locations       []Location `json:"locations"`
	// Frames are the function names the finding is about, so a flame graph
	// can mark them and fallback rules can leave them alone.
	Frames     []string `json:"frames,omitempty"`
	References []string `json:"references,omitempty"`

	// Growing marks a cost that grows until something fails (a leak of
	// memory or goroutines, ports running out): at one severity it ranks
	// before steady costs, whatever its resource.
	Growing bool `json:"growing,omitempty"`
	// CausedBy is the ID of the finding this one is a consequence of
	// (kernel time under connection setup, scheduler time under an
	// oversubscribed GOMAXPROCS, waits behind a CPU hog); it ranks under its
	// cause. CauseReason says why; Explains is the other direction.
	CausedBy    string   `json:"caused_by,omitempty"`
	CauseReason string   `json:"cause_reason,omitempty"`
	Explains    []string `json:"explains,omitempty"`
	// Claim is the cost the rule computed Impact from; the engine
	// arbitrates claims between findings and records the outcome in Cost.
	Claim *Claim `json:"-"`
	Cost  *Cost  `json:"cost,omitempty"`
	// Config is the part of the fix that is configuration only, for
	// perfdoctor try to apply; Tried is what try measured with it.
	Config *ConfigFix `json:"config,omitempty"`
	Tried  *Trial     `json:"tried,omitempty"`

	// atMostLow records weighCores' cap (the fix gives back too few cores
	// in a quiet process), which no later grading lifts.
	atMostLow bool
}

// MarshalJSON keeps empty lists as [] rather than null, so consumers need
// no nil checks.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	if f.Evidence == nil {
		f.Evidence = []Fact{}
	}
	if f.Locations == nil {
		f.Locations = []Location{}
	}
	return json.Marshal(plain(f))
}

// Fact is one piece of evidence: a named value as shown to people, and the
// number behind it for machines.
type Fact struct {
	Name  string  `json:"name"`
	Value string  `json:"value"`
	Num   float64 `json:"number"`
	Unit  string  `json:"unit,omitempty"`
}

// Share is a fact that is a fraction of a whole.
func Share(name string, v float64) Fact {
	return Fact{Name: name, Value: human.Percent(v), Num: v, Unit: "fraction"}
}

// Count is a fact that is a plain number.
func Count(name string, v float64, unit string) Fact {
	val := human.Number(v)
	if unit != "" {
		val += " " + unit
	}
	return Fact{Name: name, Value: val, Num: v, Unit: unit}
}

// Bytes is a fact that is a size in bytes.
func Bytes(name string, v uint64) Fact {
	return Fact{Name: name, Value: human.Bytes(v), Num: float64(v), Unit: "bytes"}
}

// Duration is a fact that is a time span: its number in milliseconds, its
// text rounded for reading (RoundDuration).
func Duration(name string, d time.Duration) Fact {
	return Fact{Name: name, Value: human.RoundDuration(d).String(), Num: float64(d) / float64(time.Millisecond), Unit: "ms"}
}

// Text is a fact with no number.
func Text(name, v string) Fact { return Fact{Name: name, Value: v} }

// Location is a place in the code a finding points at.
type Location struct {
	Function string  `json:"function"`
	File     string  `json:"file,omitempty"`
	Line     int64   `json:"line,omitempty"`
	Share    float64 `json:"share"`          // of the profile the rule read
	Role     string  `json:"role,omitempty"` // e.g. "allocation site", "caller"
}

// The gain model's calibration target (docs/ranking.md), read by the
// corpus's scorecard and the casebook's calibration table alike: the
// median of ln(measured / predicted) within ±GainTargetLog, and the
// measured gain inside the stated range in GainTargetInRange of the
// problems scored.
const (
	GainTargetLog     = 0.15
	GainTargetInRange = 0.8
)

// Gain is what fixing finding i of the ranked findings fs gives, as a load
// test measures it: share is the part of CPU (or of request time) its fix
// removes, the CPU findings it explains included (each CPU sample has one
// owner, so they add up, and the cause's fix removes its symptoms too), and
// times the throughput where that resource is the limit, 1/(1 − share);
// low and high are the same for the finding's ImpactRange (both times when
// it has none), high +Inf where the fix removes the work (RemovesWork). ok
// is false for memory findings and growing costs, which have no such
// figure.
func Gain(fs []Finding, i int) (share, times, low, high float64, ok bool) {
	f := fs[i]
	if f.Growing || (f.Resource != "cpu" && f.Resource != "latency") {
		return 0, 1, 1, 1, false
	}
	var explained float64
	if f.Resource == "cpu" {
		explained = explainedCPU(fs, f)
	}
	mult := func(s float64) float64 { return 1 / (1 - min(s+explained, 0.999)) }
	share = min(f.Impact+explained, 0.999)
	times = mult(f.Impact)
	low, high = times, times
	if r := f.ImpactRange; r != nil {
		low, high = mult(r[0]), mult(r[1])
	}
	if f.RemovesWork {
		high = math.Inf(1)
	}
	return share, times, low, high, true
}
