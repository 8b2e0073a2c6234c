package jvm009

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads/jvmthreadstest"
)

func run(t *testing.T, fixture string) rules.Result {
	t.Helper()
	return jvmthreadstest.Run(t, fixture, Rule)
}

// Virtual threads sleeping inside a native sort's callback (JDK 25) are
// pinned: the finding names the blocking call, the native call and the
// prescription for JDK 24 and later.
func TestFiresOnPinnedRecording(t *testing.T) {
	res := run(t, "pinned")
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "in ThreadWork.sleep (ThreadWork.java:") ||
		!strings.Contains(f.Summary, "Native or VM frame on stack") || !strings.Contains(f.Summary, "native code called by ThreadWork.lambda$pinned$0") {
		t.Errorf("summary %q at %s", f.Summary, f.Severity)
	}
	if !strings.Contains(f.Fix, "do not block inside the callback") || strings.Contains(f.Fix, "ReentrantLock") {
		t.Errorf("fix for JDK 25: %q", f.Fix)
	}
	if len(f.Locations) != 1 || f.Locations[0].Function != "perfdoctor.fixtures.ThreadWork.sleep" || f.Locations[0].File != "perfdoctor/fixtures/ThreadWork.java" || f.Locations[0].Share < 0.99 {
		t.Errorf("locations %+v", f.Locations)
	}
}

// The same virtual threads sleeping outside the callback unmount: silent.
func TestSilentOnUnpinnedRecording(t *testing.T) {
	for _, fixture := range []string{"unpinned", "locks", "rightpool"} {
		if res := run(t, fixture); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", fixture, res.Findings)
		}
	}
}

// On JDK 21 to 23, where synchronized pins, the prescription is to
// upgrade or use a ReentrantLock.
func TestPrescriptionByJDK(t *testing.T) {
	monitor := jfr.WaitSite{Stack: []jfr.StackFrame{{Func: "java.lang.VirtualThread.parkOnCarrierThread"}, {Func: "com.acme.Cache.load"}}}
	if fix := prescription(21, monitor, ""); !strings.Contains(fix, "JDK 24 or later") || !strings.Contains(fix, "ReentrantLock") {
		t.Errorf("JDK 21: %q", fix)
	}
	native := jfr.WaitSite{Reason: "Native or VM frame on stack"}
	if fix := prescription(25, native, ""); strings.Contains(fix, "ReentrantLock") {
		t.Errorf("JDK 25: %q", fix)
	}
}
