// Package overhead measures what perfdoctor costs the service it watches,
// with verify's statistics: one service process under a constant closed-loop
// load, measured over rounds in which each mode (nothing running, `perfdoctor
// collect`, the agent armed, ...) takes its turn in a rotating order, so
// slow drift of the machine cancels; each mode is then compared with the
// first (the baseline) as a paired ratio of per-round throughput, p99
// latency and the service's CPU per request, with a 95% interval
// (load.PairedRatio, a paired t-test on log ratios). cmd/overhead runs it.
package overhead

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/verify"
)

// Mode is what runs beside the service during one measurement. Start
// begins it as the measurement starts; the returned stop is called when the
// measurement's load ends and reports whether the mode overran it.
type Mode struct {
	Name  string
	Start func(ctx context.Context) (stop func() error, err error)
}

// Options say what to measure.
type Options struct {
	Load     load.Config // Duration is set per measurement from Duration
	PID      int         // the service's process, for its CPU time
	Modes    []Mode      // Modes[0] is the baseline
	Rounds   int
	Duration time.Duration // of each measurement
	Warmup   time.Duration // load before each measurement, not counted
	OnRound  func(done, of int)
}

// Measurement is one mode's figures in one round.
type Measurement struct {
	Throughput float64 `json:"throughput_rps"`
	P99        float64 `json:"p99_ms"`
	CPU        float64 `json:"cpu_us_per_request"`
}

// Figure is a paired ratio mode/baseline with its 95% interval.
type Figure struct {
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"ci95_low"`
	High  float64 `json:"ci95_high"`
}

// Compared is one mode against the baseline.
type Compared struct {
	Mode            string  `json:"mode"`
	Throughput, P99 Figure  `json:"-"`
	CPU             *Figure `json:"-"`
}

// Result holds every round and the comparisons.
type Result struct {
	Modes       []string        `json:"modes"`
	Rounds      [][]Measurement `json:"rounds"` // [round][mode]
	Compared    []Compared      `json:"compared"`
	Baseline    Measurement     `json:"baseline_mean"`
	LoadAverage float64         `json:"load_average"`
}

// Run measures o.Modes over o.Rounds. Round r starts with mode r mod n, so
// each mode goes first, second, ... equally often.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Modes) < 2 || o.Rounds < 2 {
		return nil, errors.New("overhead: need a baseline and another mode, and at least two rounds")
	}
	res := &Result{}
	for _, m := range o.Modes {
		res.Modes = append(res.Modes, m.Name)
	}
	n := len(o.Modes)
	for r := range o.Rounds {
		row := make([]Measurement, n)
		for k := range n {
			i := (r + k) % n
			m, err := measure(ctx, o, o.Modes[i])
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, o.Modes[i].Name, err)
			}
			row[i] = m
		}
		res.Rounds = append(res.Rounds, row)
		if o.OnRound != nil {
			o.OnRound(r+1, o.Rounds)
		}
	}
	res.judge()
	return res, nil
}

func measure(ctx context.Context, o Options, m Mode) (Measurement, error) {
	cfg := o.Load
	if o.Warmup > 0 {
		cfg.Duration = o.Warmup
		if _, err := load.Run(ctx, cfg); err != nil {
			return Measurement{}, err
		}
	}
	cfg.Duration = o.Duration
	cpu0, _ := verify.ProcessCPU(o.PID)
	var stop func() error
	if m.Start != nil {
		var err error
		if stop, err = m.Start(ctx); err != nil {
			return Measurement{}, err
		}
	}
	res, err := load.Run(ctx, cfg)
	cpu1, cpuOK := verify.ProcessCPU(o.PID)
	if stop != nil {
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return Measurement{}, err
	}
	if err := res.AllFailed(); err != nil {
		return Measurement{}, err
	}
	out := Measurement{Throughput: res.Throughput, P99: float64(res.Latency.P99) / 1e6}
	if cpuOK && res.Requests > 0 {
		out.CPU = (cpu1 - cpu0) * 1e6 / float64(res.Requests)
	}
	return out, nil
}

func (r *Result) judge() {
	col := func(i int, get func(Measurement) float64) []float64 {
		var xs []float64
		for _, row := range r.Rounds {
			xs = append(xs, get(row[i]))
		}
		return xs
	}
	tput := func(m Measurement) float64 { return m.Throughput }
	p99 := func(m Measurement) float64 { return m.P99 }
	cpu := func(m Measurement) float64 { return m.CPU }
	fig := func(x load.Ratio) Figure { return Figure{x.Estimate, x.Low, x.High} }
	for _, row := range r.Rounds {
		k := float64(len(r.Rounds))
		r.Baseline.Throughput += row[0].Throughput / k
		r.Baseline.P99 += row[0].P99 / k
		r.Baseline.CPU += row[0].CPU / k
	}
	for i := 1; i < len(r.Modes); i++ {
		c := Compared{Mode: r.Modes[i],
			Throughput: fig(load.PairedRatio(col(0, tput), col(i, tput))),
			P99:        fig(load.PairedRatio(col(0, p99), col(i, p99)))}
		if x := load.PairedRatio(col(0, cpu), col(i, cpu)); x.N == len(r.Rounds) {
			f := fig(x)
			c.CPU = &f
		}
		r.Compared = append(r.Compared, c)
	}
	r.LoadAverage = load.LoadAverage()
}

// Table is the result as Markdown rows under a header naming the service.
func (r *Result) Table(service string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: baseline %.0f req/s, p99 %.2f ms, %.1f µs CPU per request; %d rounds, load average %.1f at the end.\n\n",
		service, r.Baseline.Throughput, r.Baseline.P99, r.Baseline.CPU, len(r.Rounds), r.LoadAverage)
	b.WriteString("| Mode | Throughput change [95% CI] | p99 change [95% CI] | CPU/request change [95% CI] |\n|---|---|---|---|\n")
	for _, c := range r.Compared {
		cpu := "-"
		if c.CPU != nil {
			cpu = pct(*c.CPU)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Mode, pct(c.Throughput), pct(c.P99), cpu)
	}
	return b.String()
}

// pct shows a ratio as a signed percentage change with its interval.
func pct(f Figure) string {
	return fmt.Sprintf("%+.1f%% [%+.1f, %+.1f]", 100*(f.Ratio-1), 100*(f.Low-1), 100*(f.High-1))
}
