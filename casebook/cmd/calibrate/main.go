// Command calibrate measures how well perfdoctor's gain estimates predict
// what the casebook's fixes gain (see package calibrate), and writes the
// calibration table into casebook/README.md between its markers:
//
//	go run ./casebook/cmd/calibrate                     # every case, ~12 minutes
//	go run ./casebook/cmd/calibrate -cases c4,d1 -readme '' -o /tmp/c4d1.json
//	go run ./casebook/cmd/calibrate -from casebook/calibrate/testdata/calibration.json
//
// Run it from the module root on a machine with nothing else to do if you
// can: verify's rounds alternate, but a busy machine widens every interval.
// The raw results go to -o (JSON), by default next to the package's tests,
// which check that the README's table is the one they give.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/calibrate"
	"github.com/perfdoctor/perfdoctor/casebook/serve"
	"github.com/perfdoctor/perfdoctor/internal/output"
)

// recorded is where the results the README's table shows are kept.
const recorded = "casebook/calibrate/testdata/calibration.json"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "calibrate:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cases  = flag.String("cases", "", "comma-separated cases (default: every registered case)")
		window = flag.Duration("window", 5*time.Second, "collection window on the bad variant")
		rounds = flag.Int("rounds", 4, "verify rounds (each measures bad and fixed once, alternating which goes first)")
		dur    = flag.Duration("d", 1500*time.Millisecond, "load per variant per round")
		warmup = flag.Duration("warmup", 500*time.Millisecond, "load before each measurement, not counted")
		out    = flag.String("o", "", "save the raw results here as JSON (default when measuring: "+recorded+", which the README's table must match)")
		from   = flag.String("from", "", "read results from this JSON file instead of measuring")
		readme = flag.String("readme", "casebook/README.md", "file whose calibration markers receive the table (empty: print only)")
		keep   = flag.String("keep", "", "keep the bad variants' bundles in this directory (DIR/CASE-bad); with -from, diagnose them again with the current rules instead of reading the saved findings")
	)
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", flag.Arg(0))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	var results []*calibrate.Result
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &results); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		if *keep != "" {
			if err := rediagnose(results, *keep); err != nil {
				return err
			}
		}
	} else {
		names := serve.Cases()
		if *cases != "" {
			names = strings.Split(*cases, ",")
			for _, n := range names {
				if !slices.Contains(serve.Cases(), n) {
					return fmt.Errorf("-cases: %q is not a casebook case (%s)", n, strings.Join(serve.Cases(), ", "))
				}
			}
		}
		if *rounds < 2 {
			return fmt.Errorf("-rounds %d: need at least 2 for an interval", *rounds)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		bins, err := build(ctx)
		if err != nil {
			return err
		}
		defer os.RemoveAll(filepath.Dir(bins[0]))
		o := calibrate.Options{Casebook: bins[0], Perfdoctor: bins[1], Window: *window,
			Rounds: *rounds, Duration: *dur, Warmup: *warmup, WorkDir: *keep}
		start := time.Now()
		for i, n := range names {
			r := calibrate.Measure(ctx, n, o)
			results = append(results, r)
			log.Info("case", "n", fmt.Sprintf("%d/%d", i+1, len(names)), "case", n, "summary", calibrate.Line(r), "elapsed", time.Since(start).Round(time.Second))
			if ctx.Err() != nil {
				break
			}
		}
		if *out == "" {
			*out = recorded
		}
	}
	if *out != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := output.WriteFile(*out, output.Shared, append(b, '\n')); err != nil {
			return err
		}
	}
	table := calibrate.Table(results)
	fmt.Print(table)
	if *readme == "" {
		return nil
	}
	return calibrate.Splice(*readme, table)
}

// rediagnose replaces each result's findings with a new diagnosis of its
// kept bundle: a rule change scored against the same measurements.
func rediagnose(results []*calibrate.Result, dir string) error {
	ctx := context.Background()
	bins, err := build(ctx)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(bins[0]))
	for _, r := range results {
		if r.Err != "" {
			continue
		}
		fs, err := calibrate.Diagnose(ctx, bins[1], filepath.Join(dir, r.Case+"-bad"))
		if err != nil {
			return fmt.Errorf("%s: %w", r.Case, err)
		}
		r.Findings = fs
		if c, ok := serve.Lookup(r.Case); ok {
			r.Class, r.AlsoFixed = c.Class, c.AlsoTop3
		}
	}
	return nil
}

// build compiles the casebook and perfdoctor binaries into a temporary
// directory.
func build(ctx context.Context) ([]string, error) {
	dir, err := os.MkdirTemp("", "perfdoctor-calibrate-bin")
	if err != nil {
		return nil, err
	}
	var bins []string
	for _, pkg := range []string{"./casebook/cmd/casebook", "./cmd/perfdoctor"} {
		bin := filepath.Join(dir, filepath.Base(pkg))
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("go build %s (run from the module root): %w\n%s", pkg, err, out)
		}
		bins = append(bins, bin)
	}
	return bins, nil
}
