package jvm008

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
)

func run(args string) rules.Result {
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{JVMArguments: args}
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func TestFiresOnDuplicatedAndRetired(t *testing.T) {
	res := run("-Xmx2g -XX:+UseConcMarkSweepGC -XX:+PrintGCDetails -Dregion=eu -XX:-PrintGCDetails -Xmx4g")
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	all := f.Summary
	for _, e := range f.Evidence {
		all += "\n" + e.Value
	}
	for _, want := range []string{"2 duplicated, 2 deprecated or removed", "-Xmx given 2 times (-Xmx2g -Xmx4g; the last wins)", "PrintGCDetails given 2 times", "-XX:UseConcMarkSweepGC (CMS was removed"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in\n%s", want, all)
		}
	}
}

func TestSilentOnCleanCommandLine(t *testing.T) {
	if res := run("-Xms4g -Xmx4g -XX:+UseG1GC -Xlog:gc*:file=gc.log -Dregion=eu -Dzone=a"); len(res.Findings) != 0 {
		t.Fatalf("got %+v", res.Findings)
	}
}
