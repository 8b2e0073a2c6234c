package facts_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/internal/testsys"
)

// TestRequiresAreAcyclic: a fact that requires itself, directly or not,
// would wait on its own computation.
func TestRequiresAreAcyclic(t *testing.T) {
	all := facts.All()
	names := map[string]bool{}
	for _, k := range all {
		if names[facts.Name(k)] {
			t.Errorf("two facts named %s", facts.Name(k))
		}
		names[facts.Name(k)] = true
		for _, r := range facts.Requires(k) {
			if !slices.Contains(all, r) {
				t.Errorf("%s requires %s, which All does not list", facts.Name(k), facts.Name(r))
			}
		}
	}
	var visit func(k facts.Key, path []string)
	visit = func(k facts.Key, path []string) {
		if slices.Contains(path, facts.Name(k)) {
			t.Fatalf("cycle: %s -> %s", strings.Join(path, " -> "), facts.Name(k))
		}
		for _, r := range facts.Requires(k) {
			visit(r, append(path, facts.Name(k)))
		}
	}
	for _, k := range all {
		visit(k, nil)
	}
}

// TestEveryFactReadsWhatItDeclares computes every fact, through a reader
// that declares only that fact, on evidence of every kind: a Compute that
// reads an undeclared fact panics, and empty evidence must not.
func TestEveryFactReadsWhatItDeclares(t *testing.T) {
	cpu := testprof.Build(testprof.Stack{Value: 100, Funcs: []string{"runtime.gcBgMarkWorker", "main.main"}})
	for name, ev := range map[string]*evidence.Evidence{
		"empty":    evidence.NewBuilder("empty").Evidence(),
		"cpu":      testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu}),
		"system":   testsys.Evidence(t, "e2-bad", nil),
		"jvm":      testprof.JVMRecording(t, "gcheavy-jdk17.jfr"),
		"cpu+heap": testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Heap: cpu}),
	} {
		set := facts.New(ev)
		for _, k := range facts.All() {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: fact %s: %v", name, facts.Name(k), r)
					}
				}()
				readAny(set.For("test of "+facts.Name(k), []facts.Key{k}), k)
			}()
		}
	}
}

// readAny reads a fact of any type through its typed variable.
func readAny(p *facts.Pass, k facts.Key) {
	switch f := k.(type) {
	case *facts.Fact[*evidence.Stacks]:
		facts.Get(p, f)
	case *facts.Fact[facts.Allocations]:
		facts.Get(p, f)
	case *facts.Fact[evidence.Matcher]:
		facts.Get(p, f)
	case *facts.Fact[float64]:
		facts.Get(p, f)
	case *facts.Fact[facts.ScanCost]:
		facts.Get(p, f)
	case *facts.Fact[*facts.CodeOwners]:
		facts.Get(p, f)
	case *facts.Fact[*facts.RuntimeFigures]:
		facts.Get(p, f)
	case *facts.Fact[[]facts.Destination]:
		facts.Get(p, f)
	case *facts.Fact[facts.Work]:
		facts.Get(p, f)
	case *facts.Fact[*facts.ProgramCode]:
		facts.Get(p, f)
	case *facts.Fact[*facts.Path]:
		facts.Get(p, f)
	case *facts.Fact[facts.Config]:
		facts.Get(p, f)
	default:
		panic("a fact of a type this test does not know: add it to readAny")
	}
}

func TestUndeclaredReadIsRefused(t *testing.T) {
	set := facts.New(evidence.NewBuilder("test").Evidence())
	defer func() {
		r := recover()
		var u facts.UndeclaredError
		if err, ok := r.(error); !ok || !errors.As(err, &u) || u.Reader != "rule X" || u.Fact != "cpu-stacks" {
			t.Fatalf("recovered %v, want an UndeclaredError", r)
		}
	}()
	facts.Get(set.For("rule X", []facts.Key{facts.Owners}), facts.CPUStacks)
}

// TestComputedOncePerSet: every reader of one set shares one computation.
func TestComputedOncePerSet(t *testing.T) {
	calls := 0
	counted := &facts.Fact[int]{Name: "counted", Compute: func(*facts.Pass) int { calls++; return calls }}
	set := facts.New(evidence.NewBuilder("test").Evidence())
	for range 3 {
		if v := facts.Get(set.For("reader", []facts.Key{counted}), counted); v != 1 {
			t.Fatalf("value %d", v)
		}
	}
	if calls != 1 {
		t.Fatalf("computed %d times", calls)
	}
	facts.Get(facts.New(set.Evidence()).Any("another diagnosis"), counted)
	if calls != 2 {
		t.Fatalf("a new set shared the old set's value")
	}
}
