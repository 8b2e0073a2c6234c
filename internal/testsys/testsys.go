// Package testsys gives system rule tests real snapshots, recorded on a
// 2-CPU Linux VM with `perfdoctor sys --pid PID --perf -o DIR` while casebook
// E2 ran under load, and a way to edit them into the case a rule must see.
//
//   - e2-bad: a new TCP connection per request, ~1100/s to one backend.
//   - e2-fixed: the same service with kept-alive connections.
package testsys

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// Evidence loads a recorded bundle (e2-bad or e2-fixed) and applies edit, if
// any, to its start and end snapshots.
func Evidence(t testing.TB, name string, edit func(start, end *bundle.SystemSnapshot)) *evidence.Evidence {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	ev, err := evidence.Load(context.Background(), evidence.LoadOptions{}, filepath.Join(filepath.Dir(file), "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if ev.SystemStart == nil || ev.SystemEnd == nil {
		t.Fatalf("%s: not two system snapshots", name)
	}
	if edit != nil {
		edit(ev.SystemStart, ev.SystemEnd)
	}
	return ev
}
