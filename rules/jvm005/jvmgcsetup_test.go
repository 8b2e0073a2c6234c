package jvm005

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
)

func run(cpus int, g jfr.GC) rules.Result {
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{HWThreads: cpus, GC: g}
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func TestFires(t *testing.T) {
	for name, tc := range map[string]struct {
		cpus int
		g    jfr.GC
		want string
	}{
		"serial on 16":        {16, jfr.GC{Young: "DefNew", Old: "SerialOld", ParallelThreads: 0}, "serial collector (DefNew/SerialOld)"},
		"too many GC threads": {2, jfr.GC{Young: "G1New", Old: "G1Old", ParallelThreads: 8, ConcThreads: 2}, "8 parallel GC threads on 2 hardware threads"},
	} {
		res := run(tc.cpus, tc.g)
		if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, tc.want) {
			t.Errorf("%s: got %+v", name, res.Findings)
		}
	}
}

func TestSilent(t *testing.T) {
	for name, tc := range map[string]struct {
		cpus int
		g    jfr.GC
	}{
		"G1 sized to the CPUs": {8, jfr.GC{Young: "G1New", Old: "G1Old", ParallelThreads: 8, ConcThreads: 2}},
		"serial on one CPU":    {1, jfr.GC{Young: "DefNew", Old: "SerialOld"}},
	} {
		if res := run(tc.cpus, tc.g); len(res.Findings) != 0 {
			t.Errorf("%s: got %+v", name, res.Findings)
		}
	}
}
