package jvm007

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
)

const report = `Found one Java-level deadlock:
=============================
"worker-1":
  waiting to lock monitor 0x00007f (object 0x0000000711, a java.lang.Object),
  which is held by "worker-2"
"worker-2":
  waiting to lock monitor 0x00007e (object 0x0000000712, a java.lang.Object),
  which is held by "worker-1"
`

func run(s *jfr.Summary) rules.Result {
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = s
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func TestFiresOnDeadlockReport(t *testing.T) {
	res := run(&jfr.Summary{ThreadDumps: 1, Deadlock: report})
	if len(res.Findings) != 1 || res.Findings[0].Summary != "Found one Java-level deadlock" || res.Findings[0].Evidence[1].Num != 2 {
		t.Fatalf("got %+v", res.Findings)
	}
}

func TestSilentWithoutDeadlock(t *testing.T) {
	if res := run(&jfr.Summary{ThreadDumps: 2}); len(res.Findings) != 0 || len(res.NotChecked) != 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestNotCheckedWithoutThreadDump(t *testing.T) {
	res := run(&jfr.Summary{})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "no thread dump") {
		t.Fatalf("got %+v", res)
	}
}
