package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/fleet"
	"github.com/perfdoctor/perfdoctor/fleet/fleetreport"
	"github.com/perfdoctor/perfdoctor/history"
)

func (a *app) fleetCommand() *cobra.Command {
	var (
		opt           fleet.Options
		match, format string
		out, db       string
		tokenFile     string
		record        bool
		sf            storeFlags
		keepInstances bool
	)
	cmd := &cobra.Command{
		Use:   "fleet --prometheus URL",
		Short: "Rank the biggest CPU savings across every service Prometheus scrapes",
		Long: `Fleet reads the active targets of a Prometheus server, groups them into
services (by job, or --group-by LABEL), ranks each service's instances by the
CPU Prometheus measured (rate of process_cpu_seconds_total), and collects a
bundle from the hottest --hottest instances and a random --sample of the rest,
at most --concurrency at once, each within --target-timeout and all within
--budget. Each service's CPU profiles are merged and diagnosed as one; each
instance is also diagnosed alone, to show the ones that differ. Every finding
of every service is then ranked by the cores its fix gives back: its impact
times the CPU the service uses across all its instances.

An instance's pprof endpoint is its scrape address, unless the target label
perfdoctor_pprof (--pprof-label) or the pod annotation perfdoctor.io/pprof
gives a port, a path or a URL. docs/fleet.md has the details and the JSON.

The bundles, each service's full report (report.html, report.json), its merged
CPU profile and the fleet report (fleet.html, fleet.json) are written to -o.
With --record, each service's diagnosis goes into the history database.

With --pyroscope URL (or --otlp FILE, written by the OpenTelemetry Collector's
file exporter) instead of --prometheus, it reads every service (or one
--service) that the store holds profiles for over --from..--to:
each instance's CPU, allocation, mutex and block profiles, merged per service
by perfdoctor. An instance's cores are its CPU time over the range. Nothing is
scraped, so --hottest, --sample, --duration and the budget do not apply.`,
		Example: `  perfdoctor fleet --prometheus http://127.0.0.1:9090
  perfdoctor fleet --prometheus http://prom:9090 --match 'team="payments"' --hottest 5 -f markdown
  perfdoctor fleet --prometheus http://prom:9090 --group-by app --record --db postgres://perf@db/perf
  perfdoctor fleet --pyroscope http://pyroscope:4040 --from 1h --record`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (opt.Prometheus == "") == !sf.used() {
				return usageError{fmt.Errorf("fleet needs --prometheus URL, --pyroscope URL or --otlp FILE (one of them)")}
			}
			if _, ok := fleetreport.Formats[format]; !ok {
				return usageError{fmt.Errorf("unknown --format %q (want one of: %s)", format, fleetreport.FormatNames())}
			}
			if opt.Hottest < 0 || opt.Sample < 0 || opt.Hottest+opt.Sample == 0 {
				return usageError{fmt.Errorf("--hottest %d --sample %d: collect at least one instance per service", opt.Hottest, opt.Sample)}
			}
			m, err := fleet.ParseMatchers(match)
			if err != nil {
				return usageError{fmt.Errorf("--match: %w", err)}
			}
			opt.Match = m
			if opt.Token, err = collect.ReadToken(tokenFile); err != nil {
				return err
			}
			if out == "" {
				out = "perfdoctor-fleet-" + time.Now().Format("20060102-150405")
			}
			if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
				return fmt.Errorf("output directory %s already exists and is not empty", out)
			}
			var store *history.Store
			if record {
				// Open first: a bad --db should fail before minutes of collection.
				if store, err = history.Open(cmd.Context(), db); err != nil {
					return err
				}
				defer store.Close()
			}
			opt.OutDir, opt.Logger, opt.Tool = out, a.log, a.tool()
			var rep *fleet.Report
			if sf.used() {
				rd, r, err := sf.open()
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "perfdoctor fleet: reading %s, writing into %s\n", rd.Describe(), out)
				rep, err = fleet.DiagnoseStore(cmd.Context(), fleet.StoreOptions{Reader: rd, Range: r, Service: sf.service,
					GroupBy: sf.serviceLabel, Concurrency: opt.Concurrency, OutDir: out, KeepInstances: keepInstances, Tool: opt.Tool, Logger: a.log})
				if err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stderr, "perfdoctor fleet: discovering through %s, collecting into %s\n", fleet.RedactURL(opt.Prometheus), out)
				if rep, err = fleet.Run(cmd.Context(), opt); err != nil {
					return err
				}
			}
			if err := fleetreport.WriteFiles(rep); err != nil {
				return err
			}
			if err := fleetreport.Write(a.stdout, format, rep); err != nil {
				return err
			}
			if store != nil {
				n, err := rep.Record(cmd.Context(), store)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "recorded %d services in %s\n", n, store.Where)
			}
			if rep.Collected() == 0 {
				return fmt.Errorf("fleet: %w (reports in %s)", fleet.ErrNothingCollected, out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Prometheus, "prometheus", "", "Prometheus base URL (http://host:9090); userinfo is sent as basic auth")
	f.StringVar(&opt.GroupBy, "group-by", fleet.DefaultGroupBy, "target label naming the service")
	f.StringVar(&match, "match", "", `select targets by label matchers, as in PromQL: 'team="payments",job=~"api-.*"'`)
	f.StringVar(&opt.PprofLabel, "pprof-label", fleet.DefaultPprofLabel, "target label giving the pprof endpoint: a port, a /path or a URL (default: the scrape address)")
	f.DurationVar(&opt.CPUWindow, "cpu-window", fleet.DefaultCPUWindow, "range of the rate() over process_cpu_seconds_total")
	f.IntVar(&opt.Hottest, "hottest", fleet.DefaultHottest, "collect this many of each service's hottest instances")
	f.IntVar(&opt.Sample, "sample", fleet.DefaultSample, "and this many more drawn at random from the rest")
	f.Uint64Var(&opt.Seed, "seed", 0, "seed of the random sample, to repeat a run's choice (0: a new one, printed in the JSON)")
	f.IntVar(&opt.Concurrency, "concurrency", fleet.DefaultConcurrency, "collections running at once, across all services")
	f.DurationVarP(&opt.Duration, "duration", "d", fleet.DefaultDuration, "each instance's CPU profile window")
	f.DurationVar(&opt.TargetTimeout, "target-timeout", 0, "give up on one instance after this long (default duration + 30s)")
	f.DurationVar(&opt.Budget, "budget", fleet.DefaultBudget, "total time for all collections: instances not started by then are skipped")
	f.StringVarP(&out, "output", "o", "", "directory for bundles and reports (default perfdoctor-fleet-TIME)")
	f.StringVarP(&format, "format", "f", "text", "output format: "+fleetreport.FormatNames())
	f.StringVar(&tokenFile, "token-file", "", "file holding the bearer token the instances require (or set $"+collect.TokenEnv+")")
	f.BoolVar(&record, "record", false, "record each service's diagnosis in the history database")
	sf.add(f, false)
	f.BoolVar(&keepInstances, "keep-instances", false, "with a store: also write each instance's profiles as a bundle under -o (about 100 KiB an instance)")
	f.StringVar(&db, "db", "", "history database: a file (default "+defaultDBHelp()+") or postgres://user@host/db")
	return cmd
}

func defaultDBHelp() string {
	if p, err := history.DefaultPath(); err == nil {
		return p
	}
	return "$XDG_DATA_HOME/perfdoctor/history.db"
}
