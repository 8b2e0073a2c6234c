// Package synth makes large, realistic-looking profiles for the report's
// tests and benchmarks: a call graph of a few thousand functions over
// application, standard-library and runtime packages, walked at random into
// as many distinct stacks as asked, with skewed weights so a few paths
// dominate as in real services. The same seed gives the same profile.
package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Options shape a profile.
type Options struct {
	Stacks int    // distinct stacks wanted
	Funcs  int    // functions in the call graph (default 3000)
	Seed   uint64 // random seed
	// GCShare and DialShare are the fractions of the samples spent in
	// garbage collection and in dialing connections, so that perfdoctor's
	// gc-pressure and connection-churn rules have something to find.
	GCShare, DialShare float64
}

type graph struct {
	names   []string
	callees [][]int
	roots   []int
}

func newGraph(r *rand.Rand, n int) *graph {
	g := &graph{}
	pkgs := []string{
		"github.com/acme/shop/api", "github.com/acme/shop/store", "github.com/acme/shop/cart",
		"github.com/acme/shop/internal/pricing", "github.com/acme/shop/internal/cache", "main",
		"encoding/json", "net/http", "strings", "bytes", "sort", "fmt", "crypto/sha256", "compress/gzip",
		"github.com/jackc/pgx/v5/pgconn", "google.golang.org/protobuf/proto", "runtime", "sync",
	}
	verbs := []string{"Get", "Put", "Load", "Save", "Encode", "Decode", "Parse", "Render", "Lookup", "Merge",
		"Handle", "Serve", "Validate", "Compute", "Hash", "Scan", "Write", "Read", "Sort", "Build"}
	nouns := []string{"Order", "Item", "User", "Cart", "Price", "Token", "Row", "Page", "Batch", "Entry", "Key", "Index"}
	for i := range n {
		p := pkgs[r.IntN(len(pkgs))]
		name := fmt.Sprintf("%s.%s%s%d", p, verbs[r.IntN(len(verbs))], nouns[r.IntN(len(nouns))], i)
		if r.IntN(3) == 0 {
			name = fmt.Sprintf("%s.(*%s).%s%d", p, nouns[r.IntN(len(nouns))], verbs[r.IntN(len(verbs))], i)
		}
		g.names = append(g.names, name)
	}
	// Each function calls a few functions of higher index, so walks end.
	g.callees = make([][]int, n)
	for i := range n {
		if i >= n-n/10 {
			continue // leaves
		}
		k := 2 + r.IntN(6)
		for range k {
			span := n - i - 1
			j := i + 1 + int(float64(span)*r.Float64()*r.Float64()*0.3)
			g.callees[i] = append(g.callees[i], min(j, n-1))
		}
	}
	for i := range 8 {
		g.roots = append(g.roots, i)
	}
	return g
}

// CPU returns a CPU profile (samples/count, cpu/nanoseconds at 100 Hz)
// with o.Stacks distinct stacks.
func CPU(o Options) *profile.Profile {
	if o.Funcs <= 0 {
		o.Funcs = 3000
	}
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	g := newGraph(r, o.Funcs)
	b := newBuilder()
	b.p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	b.p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	b.p.Period = 10_000_000
	b.p.DurationNanos = int64(30 * time.Second)
	base := []string{"runtime.goexit", "net/http.(*conn).serve", "net/http.serverHandler.ServeHTTP", "net/http.(*ServeMux).ServeHTTP"}
	gc := [][]string{
		{"runtime.goexit", "runtime.gcBgMarkWorker", "runtime.systemstack", "runtime.gcBgMarkWorker.func2", "runtime.gcDrain", "runtime.scanObject"},
		{"runtime.goexit", "runtime.gcBgMarkWorker", "runtime.systemstack", "runtime.gcBgMarkWorker.func2", "runtime.gcDrain", "runtime.markroot", "runtime.scanstack"},
		{"runtime.goexit", "runtime.bgsweep", "runtime.sweepone", "runtime.(*sweepLocked).sweep"},
	}
	dial := []string{"main.send", "net.DialUDP", "net.(*netFD).connect"}
	seen := map[string]bool{}
	var total int64
	for len(seen) < o.Stacks {
		var stack []string
		u := r.Float64()
		switch {
		case u < o.GCShare:
			stack = append(stack, gc[r.IntN(len(gc))]...)
			stack = append(stack, fmt.Sprintf("runtime.scanObjectPart%d", r.IntN(max(o.Stacks, 1))))
		case u < o.GCShare+o.DialShare:
			stack = append(append(stack, base...), dial...)
			stack = append(stack, fmt.Sprintf("internal/poll.(*FD).connect%d", r.IntN(max(o.Stacks, 1))))
		default:
			stack = append(stack, base...)
			f := g.roots[r.IntN(len(g.roots))]
			for depth := 0; depth < 40; depth++ {
				stack = append(stack, g.names[f])
				cs := g.callees[f]
				if len(cs) == 0 || r.IntN(12) == 0 {
					break
				}
				// Skewed choice: the first callee is the hot path.
				if r.IntN(3) == 0 {
					f = cs[0]
				} else {
					f = cs[r.IntN(len(cs))]
				}
			}
			if r.IntN(2) == 0 {
				stack = append(stack, "runtime.mallocgc", "runtime.nextFreeFast")
			}
		}
		key := strings.Join(stack, ";")
		if seen[key] {
			continue
		}
		seen[key] = true
		n := int64(1 + r.ExpFloat64()*3)
		total += n
		b.sample(stack, n, n*10_000_000)
	}
	return b.p
}

// Allocs returns an allocs profile (alloc_space default) with n stacks.
func Allocs(n int, seed uint64) *profile.Profile {
	r := rand.New(rand.NewPCG(seed, seed+1))
	g := newGraph(r, 500)
	b := newBuilder()
	b.p.SampleType = []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
		{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}}
	b.p.DefaultSampleType = "alloc_space"
	b.p.PeriodType = &profile.ValueType{Type: "space", Unit: "bytes"}
	b.p.Period = 512 * 1024
	seen := map[string]bool{}
	for len(seen) < n {
		stack := []string{"runtime.goexit", "net/http.(*conn).serve"}
		f := g.roots[r.IntN(len(g.roots))]
		for depth := 0; depth < 20; depth++ {
			stack = append(stack, g.names[f])
			cs := g.callees[f]
			if len(cs) == 0 || r.IntN(6) == 0 {
				break
			}
			f = cs[r.IntN(len(cs))]
		}
		stack = append(stack, "runtime.mallocgc")
		key := strings.Join(stack, ";")
		if seen[key] {
			continue
		}
		seen[key] = true
		objs := int64(1 + r.ExpFloat64()*100)
		b.sample(stack, objs, objs*int64(16<<r.IntN(6)), objs/4, objs*32)
	}
	return b.p
}

type builder struct {
	p    *profile.Profile
	locs map[string]*profile.Location
}

func newBuilder() *builder {
	return &builder{p: &profile.Profile{TimeNanos: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()}, locs: map[string]*profile.Location{}}
}

// sample adds one stack, given root first, with its values.
func (b *builder) sample(rootFirst []string, values ...int64) {
	locs := make([]*profile.Location, len(rootFirst))
	for i, name := range rootFirst {
		loc := b.locs[name]
		if loc == nil {
			fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name,
				Filename: fileFor(name)}
			b.p.Function = append(b.p.Function, fn)
			loc = &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn, Line: int64(10 + len(b.p.Location)%900)}}}
			b.p.Location = append(b.p.Location, loc)
			b.locs[name] = loc
		}
		locs[len(rootFirst)-1-i] = loc // profiles list the leaf first
	}
	b.p.Sample = append(b.p.Sample, &profile.Sample{Location: locs, Value: values})
}

func fileFor(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	pkg := fn
	if dot >= 0 {
		pkg = fn[:slash+1+dot]
	}
	if strings.Contains(strings.Split(pkg, "/")[0], ".") || pkg == "main" {
		return "/src/" + pkg + "/" + pkg[strings.LastIndexByte(pkg, '/')+1:] + ".go"
	}
	return "/usr/local/go/src/" + pkg + "/" + pkg[strings.LastIndexByte(pkg, '/')+1:] + ".go"
}
