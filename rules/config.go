package rules

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Config change kinds: how a setting reaches the process.
const (
	// ConfigEnv is an environment variable (GOGC, GOMEMLIMIT, GOMAXPROCS,
	// GODEBUG).
	ConfigEnv = "env"
	// ConfigJVMFlag is a JVM option; a process started by perfdoctor gets it
	// through JAVA_TOOL_OPTIONS, which every JVM reads at start.
	ConfigJVMFlag = "jvm-flag"
)

// ConfigFix is the part of a prescription that changes configuration only,
// in a form a machine can apply (perfdoctor try): the settings and the share
// of the finding's resource they alone are expected to recover.
type ConfigFix struct {
	Changes []ConfigChange `json:"changes"`
	// Gain is the expected fraction of the resource (CPU) recovered by
	// these settings alone, which may be less than the finding's Impact
	// (that also counts the code change).
	Gain float64 `json:"expected_gain"`
}

// ConfigChange is one setting.
type ConfigChange struct {
	Kind  string `json:"kind"` // ConfigEnv or ConfigJVMFlag
	Name  string `json:"name"` // GOGC; or the whole JVM option, e.g. -XX:+UseG1GC
	Value string `json:"value,omitempty"`
	Now   string `json:"now,omitempty"` // the current value, when known
}

// String is the setting as a person would type it: GOGC=400, -Xmx2g.
func (c ConfigChange) String() string {
	if c.Kind == ConfigJVMFlag {
		return c.Name + c.Value
	}
	return c.Name + "=" + c.Value
}

// Environ returns environ with the changes applied: environment variables
// set, JVM options appended to JAVA_TOOL_OPTIONS.
func (c *ConfigFix) Environ(environ []string) []string {
	out := append([]string(nil), environ...)
	set := func(name, value string) {
		for i, kv := range out {
			if strings.HasPrefix(kv, name+"=") {
				out[i] = name + "=" + value
				return
			}
		}
		out = append(out, name+"="+value)
	}
	get := func(name string) string {
		for _, kv := range out {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				return v
			}
		}
		return ""
	}
	for _, ch := range c.Changes {
		switch ch.Kind {
		case ConfigJVMFlag:
			set("JAVA_TOOL_OPTIONS", strings.TrimSpace(get("JAVA_TOOL_OPTIONS")+" "+ch.String()))
		default:
			set(ch.Name, ch.Value)
		}
	}
	return out
}

// String lists the settings: "GOMEMLIMIT=921MiB GOGC=2000".
func (c *ConfigFix) String() string {
	var parts []string
	for _, ch := range c.Changes {
		parts = append(parts, ch.String())
	}
	return strings.Join(parts, " ")
}

// Validate reports a change perfdoctor would not apply: an unknown kind, or
// a name that is not a plain variable or a JVM option.
func (c *ConfigFix) Validate() error {
	if len(c.Changes) == 0 {
		return fmt.Errorf("config fix without changes")
	}
	for _, ch := range c.Changes {
		switch ch.Kind {
		case ConfigEnv:
			if ch.Name == "" || strings.ContainsAny(ch.Name, "= \t\n\x00") {
				return fmt.Errorf("config change: bad variable name %q", ch.Name)
			}
		case ConfigJVMFlag:
			if !strings.HasPrefix(ch.Name, "-") || strings.ContainsAny(ch.Name+ch.Value, " \t\n\x00") {
				return fmt.Errorf("config change: bad JVM option %q", ch.Name+ch.Value)
			}
		default:
			return fmt.Errorf("config change %s: unknown kind %q", ch.Name, ch.Kind)
		}
	}
	return nil
}

// Trial is what `perfdoctor try` measured for a finding's ConfigFix: the
// same load on the current and on the prescribed configuration, in
// alternating rounds, each round a fresh process.
type Trial struct {
	Config string `json:"config"` // the settings tried, as typed
	Rounds int    `json:"rounds"`
	// PredictedGain is the ConfigFix's expected gain (a fraction of CPU).
	PredictedGain float64 `json:"predicted_gain"`
	// CPUGain is the measured drop of CPU time per request, 1 -
	// prescribed/current, with its 95% interval; nil when the target's CPU
	// time could not be read.
	CPUGain *Interval `json:"cpu_gain,omitempty"`
	// ThroughputGain is prescribed/current - 1 of requests per second.
	ThroughputGain Interval `json:"throughput_gain"`
	// P99Change is prescribed/current - 1 of the p99 latency.
	P99Change Interval `json:"p99_change"`
	// Peak resident memory of the process under each configuration
	// (largest over the rounds), the memory cost of the change.
	PeakRSSCurrent    uint64 `json:"peak_rss_current_bytes,omitempty"`
	PeakRSSPrescribed uint64 `json:"peak_rss_prescribed_bytes,omitempty"`
	Verdict           string `json:"verdict"` // verify's: faster, slower, no significant change
	// Prediction compares PredictedGain with the CPU gain's interval:
	// "within", "over" (predicted more than measured) or "under".
	Prediction string `json:"prediction,omitempty"`
}

// Interval is an estimate with its 95% confidence interval.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"ci95_low"`
	High     float64 `json:"ci95_high"`
}

// Summary is the trial in one line, for the reports.
func (t *Trial) Summary() string {
	pct := func(x float64) string { return fmt.Sprintf("%+.1f%%", x*100) }
	in := func(i Interval) string { return fmt.Sprintf("%s [%s, %s]", pct(i.Estimate), pct(i.Low), pct(i.High)) }
	s := fmt.Sprintf("%s over %d rounds against the current configuration: ", t.Config, t.Rounds)
	if t.CPUGain != nil {
		s += fmt.Sprintf("CPU per request saved %s, predicted %s (%s); ", in(*t.CPUGain), pct(t.PredictedGain),
			map[string]string{"within": "within the interval", "over": "over-predicted", "under": "under-predicted"}[t.Prediction])
	}
	s += fmt.Sprintf("throughput %s, p99 %s", in(t.ThroughputGain), in(t.P99Change))
	if t.PeakRSSCurrent > 0 && t.PeakRSSPrescribed > 0 {
		s += fmt.Sprintf("; peak RSS %s -> %s", human.Bytes(t.PeakRSSCurrent), human.Bytes(t.PeakRSSPrescribed))
	}
	return s + "; verdict: " + t.Verdict
}
