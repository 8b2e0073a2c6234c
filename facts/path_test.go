package facts_test

import (
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// The dominant path starts at the program's outermost frame (not the HTTP
// server's), follows the callee that keeps most of the cost, and ends
// where the cost spreads, listing what the end calls: the shape of a push
// on the pushgateway, whose leaves (a sort's comparisons, a getter) are
// the cost of the gather above them.
func TestDominantPathFollowsTheCostToWhereItSpreads(t *testing.T) {
	server := []string{"example.com/gw.(*Store).push", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}
	under := func(funcs ...string) []string { return append(funcs, server...) }
	cpu := testprof.Build(
		testprof.Stack{Value: 400, Funcs: under("example.com/model.(*LabelPair).GetValue", "sort.insertionSort", "sort.Sort", "example.com/lib.Gatherers.Gather", "example.com/gw.(*Store).check")},
		testprof.Stack{Value: 380, Funcs: under("example.com/lib.checkConsistency", "example.com/lib.Gatherers.Gather", "example.com/gw.(*Store).check")},
		testprof.Stack{Value: 20, Funcs: under("example.com/gw.(*Store).check")},
		testprof.Stack{Value: 100, Funcs: under("encoding/json.Unmarshal")},
		testprof.Stack{Value: 100, Funcs: []string{"runtime.gcBgMarkWorker"}},
	)
	set := facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})).Any("test")
	p := facts.Get(set, facts.DominantPath)
	if p == nil {
		t.Fatal("no path")
	}
	if got, want := p.ChainText(), "gw.(*Store).push -> gw.(*Store).check -> lib.Gatherers.Gather"; got != want {
		t.Errorf("chain %q, want %q", got, want)
	}
	if p.Share != 0.9 || p.End != 0.78 {
		t.Errorf("entry %.3f, end %.3f of CPU; want 0.9 and 0.78", p.Share, p.End)
	}
	if len(p.Callees) != 2 || p.Callees[0].Func != "sort.Sort" || p.Callees[1].Func != "example.com/lib.checkConsistency" {
		t.Errorf("callees %+v", p.Callees)
	}
	if under := facts.Get(set, facts.CPUStacks).ShareWhere(p.Under); under != 0.78 {
		t.Errorf("%.3f of CPU under the whole chain, want 0.78", under)
	}
}

// Generic instantiations are named as pprof shortens them, and a chain
// through two functions of one short name (a wrapper and what it wraps)
// names it once.
func TestPathNamesGenerics(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 100, Funcs: []string{"crypto/pbkdf2.Key[go.shape.interface { Sum([]uint8) []uint8; net/http.Handler }]", "golang.org/x/crypto/pbkdf2.Key", "example.com/svc.verify"}},
	)
	set := facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})).Any("test")
	p := facts.Get(set, facts.DominantPath)
	if p == nil {
		t.Fatal("no path")
	}
	if got, want := p.ChainText(), "svc.verify -> pbkdf2.Key"; got != want {
		t.Errorf("chain %q, want %q", got, want)
	}
}
