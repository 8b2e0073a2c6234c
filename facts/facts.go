// Package facts is the diagnosis's shared readings of the evidence: typed
// facts (the CPU profile's stacks, whose code a frame is, how GC CPU
// splits, the runtime's figures, TIME_WAIT by destination, the work one
// request costs) each computed at most once per diagnosis and read alike
// by the rules and the reports. A fact declares the facts it reads, as a
// go/analysis Analyzer declares Requires, and so does every reader: a
// read of an undeclared fact is a defect, reported as such.
//
// Facts read evidence only; they know nothing of rules or reports.
package facts

import (
	"fmt"
	"slices"
	"sync"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// Fact is one reading of the evidence, of type T.
type Fact[T any] struct {
	Name string // stable, kebab-case: "cpu-stacks"
	Doc  string // what it is, one or two sentences
	// Requires are the facts Compute reads.
	Requires []Key
	// Compute derives the fact. It must not fail: a reading the evidence
	// cannot give is the zero value, or a T that says so.
	Compute func(*Pass) T
}

// Key is any fact, whatever its type: what Requires and Needs list.
type Key interface {
	factName() string
	factDoc() string
	requires() []Key
	eval(*Pass) any
}

func (f *Fact[T]) factName() string { return f.Name }
func (f *Fact[T]) factDoc() string  { return f.Doc }
func (f *Fact[T]) requires() []Key  { return f.Requires }
func (f *Fact[T]) eval(p *Pass) any { return f.Compute(p) }

// Set holds the facts of one evidence, each computed on first read and
// then kept: one diagnosis makes one Set and hands views of it (Pass) to
// every rule and report. It is safe for concurrent use.
type Set struct {
	ev      *evidence.Evidence
	mu      sync.Mutex
	entries map[Key]*entry
}

type entry struct {
	once sync.Once
	v    any
}

// New returns the Set of facts over ev; nothing is computed yet.
func New(ev *evidence.Evidence) *Set {
	return &Set{ev: ev, entries: map[Key]*entry{}}
}

// Evidence is what the facts are read from.
func (s *Set) Evidence() *evidence.Evidence { return s.ev }

// For returns reader who's view of the set, limited to the facts it
// declared (none when declared is empty).
func (s *Set) For(who string, declared []Key) *Pass {
	return &Pass{Evidence: s.ev, set: s, who: who, declared: declared}
}

// Any returns reader who's view of every fact: for the reports, which
// show whatever the evidence holds.
func (s *Set) Any(who string) *Pass {
	return &Pass{Evidence: s.ev, set: s, who: who, all: true}
}

// Pass is one reader's view of a Set: the evidence and the facts it
// declared.
type Pass struct {
	Evidence *evidence.Evidence
	set      *Set
	who      string
	declared []Key
	all      bool
}

// UndeclaredError is the panic of a read of a fact its reader did not
// declare; the rules engine reports it as the rule's defect.
type UndeclaredError struct{ Reader, Fact string }

func (e UndeclaredError) Error() string {
	return fmt.Sprintf("%s reads fact %s without declaring it", e.Reader, e.Fact)
}

// Get returns fact f of p's evidence, computing it on the set's first read.
func Get[T any](p *Pass, f *Fact[T]) T {
	if !p.all && !slices.Contains(p.declared, Key(f)) {
		panic(UndeclaredError{Reader: p.who, Fact: f.Name})
	}
	return p.set.get(f).(T)
}

func (s *Set) get(k Key) any {
	s.mu.Lock()
	e := s.entries[k]
	if e == nil {
		e = &entry{}
		s.entries[k] = e
	}
	s.mu.Unlock()
	// A fact's Compute may read its required facts: different entries,
	// so no lock is held while it runs.
	e.once.Do(func() {
		e.v = k.eval(&Pass{Evidence: s.ev, set: s, who: "fact " + k.factName(), declared: k.requires()})
	})
	return e.v
}

// Name is a fact's name, for messages and docs.
func Name(k Key) string { return k.factName() }

// Doc is what a fact is, for docs.
func Doc(k Key) string { return k.factDoc() }

// Requires is what a fact declares it reads.
func Requires(k Key) []Key { return k.requires() }

// Read computes fact f of ev alone, with a Set of its own: for tests and
// for readers outside a diagnosis. A diagnosis shares one Set instead.
func Read[T any](ev *evidence.Evidence, f *Fact[T]) T {
	return Get(New(ev).Any("Read"), f)
}

// All is every fact, for docs and for the tests that hold each fact to
// its declarations.
func All() []Key {
	return []Key{CPUStacks, PerfStacks, WindowAllocs, AllocStacks, KernelFrames, SystemFrames, CoresUsed,
		GCCost, Owners, Runtime, TimeWait, WorkDone, Configuration, Program, DominantPath}
}
