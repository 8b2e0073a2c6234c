package gate

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/perfdoctor/perfdoctor/load"
)

// Benchmarks are the results of `go test -bench` (the text benchstat
// reads): per benchmark and unit, one figure per run (-count N).
type Benchmarks struct {
	Runs  map[string]map[string][]float64 // name -> unit -> figures
	Order []string                        // names in first-seen order
}

// judgedUnit is the figure the benchmark gate judges: time per operation.
// Bytes and allocations per operation are shown, not judged.
const judgedUnit = "ns/op"

// ParseBenchmarks reads Go benchmark output: lines "BenchmarkName-8  N
// value unit [value unit]...", qualified by the latest "pkg:" line so that
// two packages' benchmarks of one name stay apart. Other lines (PASS, ok,
// goos) are skipped; a file without one benchmark line is an error.
func ParseBenchmarks(r io.Reader) (*Benchmarks, error) {
	b := &Benchmarks{Runs: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	pkg := ""
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if p, ok := strings.CutPrefix(text, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			continue // a log line that happens to start with Benchmark
		}
		name := fields[0]
		if pkg != "" {
			name = pkg + "." + name
		}
		units := b.Runs[name]
		if units == nil {
			units = map[string][]float64{}
			b.Runs[name] = units
			b.Order = append(b.Order, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is not a number in %q", line, fields[i], text)
			}
			units[fields[i+1]] = append(units[fields[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(b.Order) == 0 {
		return nil, fmt.Errorf("no benchmark results (lines like \"BenchmarkX-8  1000  1234 ns/op\" from go test -bench)")
	}
	return b, nil
}

// JudgeBenchmarks compares each benchmark both sides ran: ns/op judged,
// other units shown. A benchmark needs at least two runs a side (go test
// -count), else there is no interval.
func JudgeBenchmarks(base, head *Benchmarks, threshold float64) (*Result, error) {
	res := &Result{Mode: "benchmarks", Threshold: threshold, Method: benchMethod, Findings: []FindingChange{}}
	for _, name := range head.Order {
		bu, hu := base.Runs[name], head.Runs[name]
		if bu == nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s ran only on head", name))
			continue
		}
		units := make([]string, 0, len(hu))
		for u := range hu {
			if bu[u] != nil {
				units = append(units, u)
			}
		}
		slices.SortFunc(units, func(x, y string) int { // ns/op first, then by name
			if (x == judgedUnit) != (y == judgedUnit) {
				if x == judgedUnit {
					return -1
				}
				return 1
			}
			return strings.Compare(x, y)
		})
		for _, u := range units {
			b, h := bu[u], hu[u]
			if u == judgedUnit && (len(b) < 2 || len(h) < 2) {
				return nil, fmt.Errorf("%s has %d run(s) on base and %d on head: run go test -bench with -count 6 or more on both", name, len(b), len(h))
			}
			r := load.UnpairedRatio(b, h)
			dir := r.Direction(threshold)
			res.Figures = append(res.Figures, Figure{Name: name + " " + u, Unit: u, Base: mean(b), Head: mean(h), Ratio: r.Estimate,
				Low: r.Low, High: r.High, N: r.N, Judged: u == judgedUnit, Worse: u == judgedUnit && dir > 0, HigherIs: "worse"})
		}
	}
	for _, name := range base.Order {
		if head.Runs[name] == nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s ran only on base", name))
		}
	}
	if !slices.ContainsFunc(res.Figures, func(f Figure) bool { return f.Judged }) {
		return nil, fmt.Errorf("no benchmark has %s on both sides", judgedUnit)
	}
	res.decide()
	return res, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
