// Package bld001 suggests profile-guided optimisation for a CPU-bound Go
// service built without it (finding class pgo-not-used).
package bld001

import (
	"fmt"
	"math"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is BLD001.
var Rule = &rules.Rule{
	ID:    "BLD001",
	Class: "pgo-not-used",
	Doc: rules.Doc{
		Title: "A CPU-bound Go service is built without profile-guided optimisation",
		Text: `Since Go 1.21 the compiler can take a CPU profile of the program (go build
-pgo, or a default.pgo file in the main package's directory) and inline and
devirtualise the hot calls it names. The Go project measures 2-14% less CPU on
a representative set of programs (Go 1.22); a service that spends its CPUs
working gets that back for the price of a longer build. This finding is
information: it claims no CPU of its own and never hides the findings that
name a cause.`,
		Evidence: `The executable's build information (from /proc/PID/exe, or the agent): a Go
version of 1.21 or later and no -pgo setting; and the CPU the process used over
the CPU profile against the CPU it may use (the cgroup quota, else the CPUs it
may run on, else GOMAXPROCS). Reports from half of that CPU, at info severity
with the lower end of the Go project's figure, 2%, as the estimated gain.
Silent without build information (profiles saved by hand).`,
		Fix: `Write a profile from bundles of production-like load with perfdoctor pgo
(several instances or windows merge into one), commit it as default.pgo next to
the main package, rebuild, and prove the gain with perfdoctor verify (old build
against new under the same load).`,
		Before: `go build ./cmd/server                               # no profile`,
		After:  "perfdoctor pgo b1 b2 -o cmd/server/default.pgo && go build ./cmd/server   # -pgo=auto finds it",
		Caveats: `The gain depends on how concentrated the hot paths are and on how well the
profile represents production; it is smaller for a service whose CPU goes to
the kernel, the GC or cgo.`,
		Since: "0.1",
		Refs:  []string{"https://go.dev/doc/pgo"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.System, rules.Metrics},
	Facts: []facts.Key{facts.CoresUsed},
	Check: check,
}

const (
	// busyShare is the share of the CPU the process may use from which it
	// counts as CPU-bound.
	busyShare = 0.5
	// typicalGain is the low end of the Go project's 2-14% (go.dev/doc/pgo).
	typicalGain = 0.02
	// firstMinor is the release that made PGO generally available.
	firstMinor = 21
)

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	b := ev.Build()
	if b == nil || b.PGO != "" || bundle.GoMinor(b.GoVersion) < firstMinor || !pass.EnoughCPU() {
		return nil
	}
	used := facts.Get(pass.Facts, facts.CoresUsed)
	limit, limitName := available(ev.Settings())
	if used <= 0 || limit <= 0 || used < busyShare*limit {
		return nil
	}
	where := "the main package's directory"
	if b.MainPackage != "" && b.MainPackage != "command-line-arguments" {
		where = b.MainPackage
	}
	f := rules.Finding{
		Severity:    rules.Info,
		Resource:    "cpu",
		Impact:      typicalGain,
		ImpactBasis: "the low end of the 2-14% less CPU the Go project measures for PGO builds (go.dev/doc/pgo, Go 1.22)",
		Summary:     fmt.Sprintf("The service uses %.2g cores of %s and is built without PGO (%s): a profile-guided build typically saves 2-14%% of CPU", used, limitName, b.GoVersion),
		Evidence: []rules.Fact{
			rules.Text("Go version", b.GoVersion),
			rules.Text("PGO profile", "none (no -pgo in the build information)"),
			rules.Count("cores used (CPU profile)", math.Round(used*100)/100, "cores"),
			rules.Count("cores the process may use", limit, "cores"),
		},
		Fix: fmt.Sprintf("Build with a profile: perfdoctor pgo %s -o default.pgo (add bundles of more instances or windows), put default.pgo in %s and rebuild; go build finds it by itself (-pgo=auto). Then prove the gain with perfdoctor verify, the old build against the new under the same load.",
			strings.Join(ev.Sources, " "), where),
		Example:    "perfdoctor pgo " + strings.Join(ev.Sources, " ") + " -o default.pgo\ngo build -pgo=default.pgo ./...",
		Caveats:    []string{"Use profiles representative of production traffic: a profile of a load test teaches the compiler only what that load exercised."},
		References: pass.Rule.Doc.Refs,
	}
	if b.Main != "" {
		f.Evidence = append(f.Evidence, rules.Text("main module", b.Main))
	}
	pass.Report(f)
	return nil
}

// available is the CPU the process may use: the cgroup quota, else the
// CPUs it may run on, else GOMAXPROCS.
func available(s evidence.Settings) (float64, string) {
	switch {
	case s.CPUQuota > 0:
		return s.CPUQuota, fmt.Sprintf("its %.3g-core CPU quota", s.CPUQuota)
	case s.NumCPU > 0:
		return float64(s.NumCPU), fmt.Sprintf("the %d CPUs it may use", s.NumCPU)
	case s.GOMAXPROCS > 0:
		return float64(s.GOMAXPROCS), fmt.Sprintf("GOMAXPROCS=%d cores", s.GOMAXPROCS)
	}
	return 0, ""
}
