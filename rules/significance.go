package rules

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Significance in absolute terms: a share of CPU is worth what it gives
// back. A CPU finding whose fix returns less than minCoresBack cores, in a
// process that used less than half the CPU it may use (Work.WaitBound), is
// at most low: the service is not short of CPU and the saving is too small
// to plan work for.
// A busy process keeps its findings' grades, since there the share is
// capacity (a container at its quota gains its share of the quota), and so
// does one whose available CPU is unknown.
//
// Measured on every recorded bundle (the casebook and the real-server
// corpus): the high findings of real problems give back 0.13 to 1.4 cores
// (casebook E2's connection churn 0.13, B1's goroutine churn 0.20, every
// other 0.21 or more), while the medium findings that were not the problem
// gave back 0.02 (C3's kernel network share) and 0.047 (L2's scheduler
// share, a downstream-wait case), and a server idling at 0.06 cores of 2
// showed 26% of its CPU in GC: 0.016 cores.
const minCoresBack = 0.05

// weighCores caps the CPU findings that give back too little CPU to
// matter, saying so in their basis.
func weighCores(w facts.Work, fs []Finding) {
	// Without the cores it may use (a profile alone: no /proc snapshot),
	// nobody can tell a quiet service from one at its quota.
	if !w.WaitBound() {
		return
	}
	for i := range fs {
		f := &fs[i]
		if f.Resource != "cpu" || f.Severity <= Low {
			continue
		}
		back := f.Impact * w.Cores
		if back >= minCoresBack {
			continue
		}
		f.Severity, f.atMostLow = Low, true
		f.ImpactBasis += fmt.Sprintf("; at most low: its fix gives back %.3f cores, and the process used %.2f cores of the %s it may use (%s)",
			back, w.Cores, human.Number(w.Available), w.CoresSource)
	}
}
