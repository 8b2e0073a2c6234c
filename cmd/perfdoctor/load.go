package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/internal/output"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/report/loadtext"
)

// loadFlags are the load settings shared by load, run and verify.
type loadFlags struct {
	method      string
	headers     []string
	bodyFile    string
	concurrency int
	rate        float64
	duration    time.Duration
	timeout     time.Duration
	udpMode     string
	procs       int
	caCert      string
	// A command load instead of requests: the command, the units of work
	// each run does, and what a unit is.
	loadCmd string
	units   int64
	unit    string
}

func (f *loadFlags) register(cmd *cobra.Command, defaultDuration time.Duration) {
	fl := cmd.Flags()
	fl.StringVarP(&f.method, "method", "X", "GET", "HTTP method")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, `HTTP header "Name: value" (repeatable)`)
	fl.StringVar(&f.bodyFile, "body", "", "file holding the HTTP body or the UDP payload")
	fl.IntVarP(&f.concurrency, "concurrency", "c", 32, "closed loop: workers; open loop: connections (requests in flight at most)")
	fl.Float64VarP(&f.rate, "rate", "r", 0, "open loop: requests per second, latency corrected for coordinated omission; unset = closed loop")
	fl.DurationVarP(&f.duration, "duration", "d", defaultDuration, "how long to load, at most "+load.MaxDuration.String())
	fl.DurationVar(&f.timeout, "timeout", load.DefaultTimeout, "per-request timeout")
	fl.StringVar(&f.udpMode, "udp-mode", "", "udp:// URLs: reply (wait for a datagram back, the default) or fire (send only)")
	fl.StringVar(&f.caCert, "cacert", "", "https:// URLs: also trust the CA certificates in this PEM file (a test or staging CA)")
	fl.IntVar(&f.procs, "procs", 1, "CPUs the generator may use (GOMAXPROCS); one leaves the rest to a local server and costs the least per request")
	fl.StringVar(&f.loadCmd, "load-cmd", "", "load with this command instead of requests (sh -c; {host} {port} {addr} {url} become the target's): a server's own benchmark tool doing --units units of work per run, repeated over the duration")
	fl.Int64Var(&f.units, "units", 0, "with --load-cmd: the units of work (requests, transactions, messages) each run of the command does")
	fl.StringVar(&f.unit, "unit", "", "with --load-cmd: what a unit is, for the reports (default "+load.DefaultUnit+")")
}

// configure turns the flags into a load.Config per URL and applies --procs,
// returning the undo for the caller to defer: the set-up every command that
// loads (load, run, verify, try) shares.
func (f *loadFlags) configure(cmd *cobra.Command, urls ...string) ([]load.Config, func(), error) {
	cfgs := make([]load.Config, len(urls))
	for i, u := range urls {
		c, err := f.config(cmd, u)
		if err != nil {
			return nil, nil, err
		}
		cfgs[i] = c
	}
	restore, err := f.limitProcs()
	if err != nil {
		return nil, nil, err
	}
	return cfgs, restore, nil
}

// limitProcs applies --procs for the generator and returns the undo.
func (f *loadFlags) limitProcs() (func(), error) {
	if f.procs < 1 || f.procs > runtime.NumCPU() {
		return nil, usageError{fmt.Errorf("--procs %d out of range 1..%d", f.procs, runtime.NumCPU())}
	}
	old := runtime.GOMAXPROCS(f.procs)
	return func() { runtime.GOMAXPROCS(old) }, nil
}

// commandConfig is the load.Config of --load-cmd: the request flags do not
// apply to it.
func (f *loadFlags) commandConfig(cmd *cobra.Command, url string) (load.Config, error) {
	cfg := load.Config{URL: url, Command: f.loadCmd, UnitsPerRun: f.units, Unit: f.unit, Duration: f.duration}
	if f.loadCmd == "" {
		return cfg, usageError{errors.New("--units and --unit go with --load-cmd")}
	}
	if f.units < 1 {
		return cfg, usageError{errors.New("--load-cmd needs --units N: the units of work (requests, transactions) one run of the command does")}
	}
	for _, name := range []string{"method", "header", "body", "concurrency", "rate", "timeout", "udp-mode", "cacert"} {
		if cmd.Flags().Changed(name) {
			return cfg, usageError{fmt.Errorf("--%s does not apply to --load-cmd: the command sets its own requests", name)}
		}
	}
	if f.duration <= 0 || f.duration > load.MaxDuration {
		return cfg, usageError{fmt.Errorf("--duration %s out of range (0, %s]", f.duration, load.MaxDuration)}
	}
	return cfg, nil
}

// config turns the flags into a load.Config for url.
func (f *loadFlags) config(cmd *cobra.Command, url string) (load.Config, error) {
	cfg := load.Config{URL: url, Method: f.method, Concurrency: f.concurrency, Rate: f.rate,
		Duration: f.duration, Timeout: f.timeout, UDPMode: f.udpMode}
	if f.loadCmd != "" || cmd.Flags().Changed("units") || cmd.Flags().Changed("unit") {
		return f.commandConfig(cmd, url)
	}
	if cmd.Flags().Changed("rate") && f.rate <= 0 {
		return cfg, usageError{fmt.Errorf("--rate %g: the rate must be > 0 requests/s (omit it for a closed loop)", f.rate)}
	}
	if f.duration <= 0 || f.duration > load.MaxDuration {
		return cfg, usageError{fmt.Errorf("--duration %s out of range (0, %s]", f.duration, load.MaxDuration)}
	}
	var err error
	if cfg.Header, err = load.ParseHeaders(f.headers); err != nil {
		return cfg, usageError{fmt.Errorf("--header: %w", err)}
	}
	if f.bodyFile != "" {
		b, err := os.ReadFile(f.bodyFile)
		if err != nil {
			return cfg, fmt.Errorf("--body: %w", err)
		}
		cfg.Body = b
	}
	if f.caCert != "" {
		if cfg.TLS, err = load.TrustCA(f.caCert); err != nil {
			return cfg, fmt.Errorf("--cacert: %w", err)
		}
	}
	return cfg, nil
}

func (a *app) loadCommand() *cobra.Command {
	var (
		f       loadFlags
		format  string
		out     string
		findMax bool
		slo     string
		steps   int
	)
	cmd := &cobra.Command{
		Use:   "load URL | --load-cmd CMD --units N [URL]",
		Short: "Drive HTTP/1.1 or UDP load at a service and report throughput and latency",
		Long: `Load sends requests to URL (http://, https:// or udp://host:port) and reports
throughput, latency percentiles (HdrHistogram, p50 to p99.99 and max), errors by
kind and a per-second timeline.

Closed loop (the default): --concurrency workers each send their next request
when the previous one is answered; this finds maximum throughput.

Open loop (--rate R): requests are due at R per second whatever the server
does; a request that had to wait for a free connection counts its latency from
its due time, so a server that stalls shows the queue it built (coordinated
omission is corrected). The plain service time, late sends and sends that
never started are reported too.

--find-max steps the open-loop rate up and reports the highest rate that meets
--slo (e.g. 'p99<200ms'), with the table of steps.

--load-cmd runs a server's own benchmark tool instead, for protocols other than
HTTP and UDP (redis-benchmark, pgbench, a client of your own): the command does
--units units of work per run and is repeated back to back for the duration;
throughput is the units of the complete runs over the time they took. {host},
{port}, {addr} and {url} in it are replaced by those of URL (tcp://host:port).
Latency is the command's own business: its output is not read.

Ctrl-C stops the run and still reports what was measured.`,
		Example: `  perfdoctor load http://127.0.0.1:8080/ -c 32 -d 10s
  perfdoctor load http://127.0.0.1:8080/api -X POST --body req.json -H 'Content-Type: application/json' --rate 2000
  perfdoctor load udp://127.0.0.1:9000 --body packet.bin --rate 10000 --udp-mode fire
  perfdoctor load http://127.0.0.1:8080/ --find-max --slo 'p99<200ms'
  perfdoctor load --load-cmd 'redis-benchmark -p {port} -t get -n 100000 -q' --units 100000 tcp://127.0.0.1:6379`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want text or json", format)}
			}
			target := firstArg(args)
			if target == "" && f.loadCmd == "" {
				return usageError{errors.New("load needs a URL, or --load-cmd CMD --units N")}
			}
			if err := output.Check(out); err != nil { // before the run, not after
				return err
			}
			cfgs, restore, err := f.configure(cmd, target)
			if err != nil {
				return err
			}
			defer restore()
			cfg := cfgs[0]
			cfg.Progress = progress.New(os.Stderr)
			if findMax && f.loadCmd != "" {
				return usageError{errors.New("--find-max steps a request rate; a --load-cmd sets its own pace")}
			}
			if findMax {
				return a.findMax(cmd, cfg, slo, steps, format, out)
			}
			if cmd.Flags().Changed("slo") {
				return usageError{errors.New("--slo needs --find-max")}
			}
			res, err := load.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := writeResult(a.display(out), format, res); err != nil {
				return err
			}
			if err := a.saveJSON(out, res); err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(a.stderr, "perfdoctor: warning: %s\n", w)
			}
			return loadOutcome(res)
		},
	}
	f.register(cmd, 10*time.Second)
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	cmd.Flags().StringVarP(&out, "output", "o", "", "also save the results as JSON to this file (- for stdout, the results shown then going to stderr)")
	cmd.Flags().BoolVar(&findMax, "find-max", false, "step the rate up to find the highest one meeting --slo")
	cmd.Flags().StringVar(&slo, "slo", "p99<200ms", "latency objective for --find-max: pNN<DURATION, optionally ',errors<1%'")
	cmd.Flags().IntVar(&steps, "steps", 12, "--find-max: at most this many steps")
	return cmd
}

// loadOutcome turns a run where nothing succeeded into an error, so an
// unreachable target fails the command rather than printing zeros.
func loadOutcome(res *load.Result) error {
	if err := res.AllFailed(); err != nil {
		return err
	}
	if res.Interrupted {
		return errInterrupted
	}
	return nil
}

// errInterrupted ends a command cut short by Ctrl-C after it has reported.
var errInterrupted = errors.New("interrupted: the results above cover the time until the interrupt")

func writeResult(w io.Writer, format string, res *load.Result) error {
	if format == "json" {
		return writeJSON(w, res)
	}
	loadtext.WriteResult(w, res)
	return nil
}

func (a *app) findMax(cmd *cobra.Command, cfg load.Config, slo string, steps int, format, out string) error {
	obj, err := load.ParseObjective(slo)
	if err != nil {
		return usageError{err}
	}
	if steps < 1 || steps > 50 {
		return usageError{fmt.Errorf("--steps %d out of range 1..50", steps)}
	}
	start := cfg.Rate
	if start == 0 {
		start = 100
	}
	fmt.Fprintf(a.stderr, "find-max: objective %s, %s per step, starting at %g req/s\n", obj, cfg.Duration, start)
	c, err := load.FindMax(cmd.Context(), cfg, obj, start, steps)
	if err != nil {
		return err
	}
	if format == "json" {
		if err := writeJSON(a.display(out), c); err != nil {
			return err
		}
	} else {
		loadtext.WriteCapacity(a.display(out), c)
	}
	if err := a.saveJSON(out, c); err != nil {
		return err
	}
	if cmd.Context().Err() != nil {
		return errInterrupted
	}
	if c.Best == 0 {
		return fmt.Errorf("no rate met %s (lowest tried %g req/s)", obj, c.LowestRate())
	}
	return nil
}

// display is where a command that also saves to out shows its results:
// stdout, unless out is stdout (-o -), which then holds the saved JSON alone.
func (a *app) display(out string) io.Writer {
	if out == output.Stdout {
		return a.stderr
	}
	return a.stdout
}

// saveJSON saves v as JSON to out, if named. Results hold the target's URL
// as typed, credentials and all, so a new file is private.
func (a *app) saveJSON(out string, v any) error {
	if out == "" {
		return nil
	}
	return output.Write(out, a.stdout, output.Private, func(w io.Writer) error { return writeJSON(w, v) })
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
