package report

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/rules"
)

// gainMeaning says what a finding's estimated gain means in figures a load
// test measures, the model casebook/README.md's calibration checks against
// perfdoctor verify: a share s of CPU is CPU per request × (1 − s) at the
// same load, or less (no casebook fix removed less), and up to 1/(1 − s)
// the throughput where the CPUs are the limit; a share s of request time is latency × (1 − s), and 1/(1 − s) the
// throughput of the same number of clients each waiting for its answer.
// Memory shares and limits (ports, leaks) have no such figure: "".
func gainMeaning(f rules.Finding) string {
	s := f.Impact
	if s < 0.01 || s >= 0.995 || f.Growing {
		return ""
	}
	if f.RemovesWork {
		return removedGainMeaning(f)
	}
	rng := ""
	if r := f.ImpactRange; r != nil && r[1]-r[0] >= 0.005 {
		// The range the finding states, as the same multiplier.
		rng = fmt.Sprintf(" (%.2fx to %.2fx by the range stated)", 1/(1-r[0]), 1/(1-min(r[1], 0.999)))
	}
	switch f.Resource {
	case "cpu":
		return fmt.Sprintf("CPU per request ×%.2f or less at the same load, up to %.2fx the throughput where CPU is the limit%s", 1-s, 1/(1-s), rng)
	case "latency":
		return fmt.Sprintf("request time ×%.2f, up to %.2fx the throughput of the same clients%s", 1-s, 1/(1-s), rng)
	}
	return ""
}

// removedGainMeaning is gainMeaning for a fix that removes the work
// (rules.Finding.RemovesWork): the estimate and the range's floor, and no
// top, since what the work drags goes with it and is not in the evidence.
func removedGainMeaning(f rules.Finding) string {
	s, floor := f.Impact, f.Impact
	if r := f.ImpactRange; r != nil {
		floor = min(r[0], s)
	}
	const noTop = "with no top the evidence can state: removing the work removes what it drags too (writes, copies, collections, waits), which the profile does not tie to it"
	switch f.Resource {
	case "cpu":
		return fmt.Sprintf("CPU per request ×%.2f or less at the same load, about %.2fx the throughput where CPU is the limit, at least %.2fx, %s", 1-s, 1/(1-s), 1/(1-floor), noTop)
	case "latency":
		return fmt.Sprintf("request time ×%.2f or less, about %.2fx the throughput of the same clients, at least %.2fx, %s", 1-s, 1/(1-s), 1/(1-floor), noTop)
	}
	return ""
}

// withSymptoms is a CPU finding's impact plus those of the CPU findings it
// explains, which its fix removes too (the engine gives each CPU sample one
// owner, so they add up); 0 when it explains none.
func withSymptoms(fs []rules.Finding, at map[string]int, f rules.Finding) float64 {
	if f.Resource != "cpu" {
		return 0
	}
	total, n := f.Impact, 0
	for _, id := range f.Explains {
		if j, ok := at[id]; ok && fs[j].Resource == "cpu" {
			total += fs[j].Impact
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return min(total, 1)
}
