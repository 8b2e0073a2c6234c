// Package jvm007 reports Java threads deadlocked on monitors or locks
// (finding class jvm-deadlock).
package jvm007

import (
	"strings"

	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM007.
var Rule = &rules.Rule{
	ID:    "JVM007",
	Class: "jvm-deadlock",
	Doc: rules.Doc{
		Title: "Java threads are deadlocked",
		Text: `Threads that each hold a lock the other waits for never proceed: the work
they carry is lost, the pool they belong to shrinks, and requests queue
behind them until the service stops answering.`,
		Evidence: `The JVM's own deadlock report in a thread dump: jdk.ThreadDump events of
the recording, or the thread dump perfdoctor collect --jfr takes at the end.
Not checked when the evidence holds no thread dump.`,
		Fix: `Take locks in one global order, hold them for as short a time as possible,
never call out (I/O, callbacks, other locked objects) while holding one, and
prefer java.util.concurrent structures or tryLock with a timeout where an
order cannot be guaranteed. The report names the threads, the locks and
where each waits.`,
		Caveats: "Only the JVM's detector is read: deadlocks through external resources (database rows, distributed locks) do not show.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/en/java/javase/21/troubleshoot/troubleshoot-process-hangs-and-loops.html"},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	if s.ThreadDumps == 0 {
		pass.Skip("the recording holds no thread dump (jdk.ThreadDump is taken every 60 s under the profile settings); perfdoctor collect --jfr takes one")
		return nil
	}
	if s.Deadlock == "" {
		return nil
	}
	report := s.Deadlock
	first, _, _ := strings.Cut(report, "\n")
	threads := 0
	for _, line := range strings.Split(report, "\n") {
		if strings.HasPrefix(line, `"`) && strings.HasSuffix(strings.TrimSpace(line), ":") {
			threads++
		}
	}
	f := rules.Finding{
		Severity:    rules.High,
		Impact:      0,
		Resource:    "latency",
		ImpactBasis: "not measurable: deadlocked threads make no progress at all",
		Summary:     strings.TrimSuffix(first, ":"),
		Evidence:    []rules.Fact{rules.Text("JVM deadlock report", report)},
		Fix:         pass.Rule.Doc.Fix,
		Caveats:     []string{pass.Rule.Doc.Caveats},
	}
	if threads > 0 {
		f.Evidence = append(f.Evidence, rules.Count("threads in the cycle", float64(threads), ""))
	}
	pass.Report(f)
	return nil
}
