package lib006

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

var (
	counts = map[string]int{}
	n      int64
)

// countSprintf builds a cache key with fmt.Sprintf per event.
func countSprintf() {
	for range 64 {
		n++
		key := fmt.Sprintf("user:%d:region:%s:slot:%d", n%1000, "eu-west", n%24)
		counts[key]++
	}
}

var scratch = make([]byte, 0, 64)

// countAppend builds the same key with strconv.AppendInt into a reused buffer.
func countAppend() {
	for range 64 {
		n++
		b := append(scratch[:0], "user:"...)
		b = strconv.AppendInt(b, n%1000, 10)
		b = append(b, ":region:eu-west:slot:"...)
		b = strconv.AppendInt(b, n%24, 10)
		counts[string(b)]++ // no allocation: the compiler looks up with the bytes
	}
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func TestFiresOnSprintfKeys(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 1, countSprintf))
	if len(res.Findings) != 1 {
		t.Fatalf("want a string-formatting finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Impact < 0.1 || !strings.Contains(f.Summary, "fmt.Sprintf") || !strings.Contains(f.Summary, "countSprintf") {
		t.Errorf("impact %.2f summary %q", f.Impact, f.Summary)
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "countSprintf") {
		t.Errorf("locations %+v", f.Locations)
	}
	if !strings.Contains(f.Fix, "strings.Builder") || !strings.Contains(f.Fix, "strconv.AppendInt") {
		t.Errorf("fix %q", f.Fix)
	}
}

func TestSilentWithStrconvAppend(t *testing.T) {
	if res := run(testprof.CPU(t, 2*time.Second, 1, countAppend)); len(res.Findings) != 0 {
		t.Fatalf("strconv.AppendInt keys reported: %+v", res.Findings[0])
	}
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

func TestErrorfAndConcatenation(t *testing.T) {
	cpu := testprof.Build(
		stack(80, "strconv.formatBits", "fmt.(*fmt).fmtInteger", "fmt.(*pp).printArg", "fmt.(*pp).doPrintf", "fmt.Errorf", "main.(*repo).find", "main.handle"),
		stack(40, "runtime.mallocgc", "runtime.rawstring", "runtime.concatstrings", "runtime.concatstring3", "main.(*router).path", "main.handle"),
		stack(880, "main.handle"),
	)
	res := run(cpu)
	if len(res.Findings) != 1 {
		t.Fatalf("Errorf + concat not reported: %+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "fmt.Errorf") || !strings.Contains(f.Fix, "sentinel") || !strings.Contains(f.Fix, "concatenation") {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
	if len(f.Locations) != 2 || f.Locations[0].Function != "main.(*repo).find" || f.Locations[1].Function != "main.(*router).path" {
		t.Errorf("locations %+v", f.Locations)
	}
}

// Symbol names as in github.com/sirupsen/logrus v1.9 (entry.go) and
// go.uber.org/zap v1.27 (sugar.go).
func TestSilentWhenFmtIsUnderALogger(t *testing.T) {
	cpu := testprof.Build(
		stack(150, "fmt.(*pp).doPrintf", "fmt.Sprintf", "github.com/sirupsen/logrus.(*Entry).Logf", "github.com/sirupsen/logrus.(*Logger).Logf", "github.com/sirupsen/logrus.(*Logger).Infof", "main.handle"),
		stack(150, "fmt.(*pp).doPrintf", "fmt.Sprintf", "go.uber.org/zap.getMessage", "go.uber.org/zap.(*SugaredLogger).log", "go.uber.org/zap.(*SugaredLogger).Infof", "main.handle"),
		stack(150, "fmt.(*pp).doPrintln", "fmt.Sprintln", "log.Println", "main.handle"),
		stack(30, "fmt.(*pp).doPrintf", "fmt.Sprintf", "main.key", "main.handle"),
		stack(670, "main.handle"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("fmt under loggers reported: %+v", res.Findings[0])
	}
}
