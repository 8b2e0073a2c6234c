package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// A JVM report (a JFR summary, an exceptions profile, Java frames) matches
// the schema and names the JVM on the text report's inputs line.
func TestJVMReport(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 300, Funcs: []string{"java.lang.Throwable.fillInStackTrace", "java.lang.Throwable.<init>", "com.acme.Login.parse", "com.acme.Login.handle"}},
		testprof.Stack{Value: 700, Funcs: []string{"com.acme.Login.handle"}},
	)
	exc := testprof.Build(testprof.Stack{Value: 5, Funcs: []string{"java.lang.Throwable.<init>", "com.acme.Login.parse"}})
	exc.SampleType = []*profile.ValueType{{Type: "exceptions", Unit: "count"}}
	for _, s := range exc.Sample {
		s.Value = s.Value[:1]
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Exceptions: exc})
	ev.JVM = &jfr.Summary{JVMVersion: "OpenJDK 64-Bit Server VM (17.0.15+6) for linux-amd64", HWThreads: 2,
		GC: jfr.GC{Young: "G1New", Old: "G1Old"}, Exceptions: 600_000, ExceptionSpan: time.Minute}
	r := diagnosed("perfdoctor test", ev)
	if r.Inputs.JVM == nil || r.Inputs.JVM.Version != "17.0.15+6" || r.Inputs.JVM.ExceptionsPerMinute != 600_000 {
		t.Fatalf("inputs.jvm %+v", r.Inputs.JVM)
	}
	if got := describeInputs(r.Inputs); !strings.Contains(got, "JFR recording of JVM 17.0.15+6 (G1New/G1Old, 2 CPUs)") {
		t.Errorf("inputs line %q", got)
	}
	matchesSchema(t, "JVM", r)
}
