// Command perfdoctor is an automated performance engineer for backend
// services: it loads a service, observes it (profiles, /proc, runtime
// statistics), diagnoses the bottleneck with a rule catalog, and prescribes
// the fix. This file only wires the packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/perfdoctor/perfdoctor/internal/version"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/diagnose"
)

// Exit codes, documented in the README so CI can gate on them.
const (
	exitOK       = 0
	exitError    = 1 // the command could not do its job
	exitUsage    = 2 // bad flags or arguments
	exitFindings = 3 // diagnose --fail-on: a finding at or above the given severity
	// exitRegression: verify found a significant regression, or gate found
	// the head build worse than the base by more than its threshold with
	// 95% confidence.
	exitRegression = 4
)

// usageError marks errors in how perfdoctor was called.
type usageError struct{ error }

// findingsError carries the exit code for --fail-on without printing more.
type findingsError struct{ msg string }

func (e findingsError) Error() string { return e.msg }

type app struct {
	stdout, stderr io.Writer
	log            *slog.Logger
	verbose        bool
}

// tool names the producer in reports and bundles.
func (a *app) tool() string { return version.Tool() }

// diagnoseOptions are the diagnosis defaults: the whole catalog, this
// build named as the report's producer.
func (a *app) diagnoseRequest(paths ...string) diagnose.Request {
	return diagnose.Request{Paths: paths, Tool: a.tool()}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var fe findingsError
	if errors.As(err, &fe) {
		fmt.Fprintf(stderr, "perfdoctor: %s\n", fe.msg)
		return exitFindings
	}
	var re regressionError
	if errors.As(err, &re) {
		fmt.Fprintf(stderr, "perfdoctor: %s\n", re.msg)
		return exitRegression
	}
	fmt.Fprintf(stderr, "perfdoctor: %s\n", oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "perfdoctor",
		Short: "An automated performance engineer for backend services",
		Long: `perfdoctor loads a service, observes it (pprof profiles, runtime statistics,
/proc), diagnoses the bottleneck with a catalog of rules, and prescribes the fix
with its expected gain.

Start with:  perfdoctor demo`,
		Version:       version.String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			level := slog.LevelWarn
			if a.verbose {
				level = slog.LevelDebug
			}
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
		},
	}
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log what perfdoctor does to stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		a.collectCommand(),
		a.diagnoseCommand(),
		a.exportCommand(),
		a.rulesCommand(),
		a.explainCommand(),
		a.demoCommand(),
		a.demoServiceCommand(),
		a.diffCommand(), a.viewCommand(),
		a.sysCommand(),
		a.loadCommand(), a.runCommand(), a.verifyCommand(),
		a.fleetCommand(), a.historyCommand(),
		a.fetchAsyncProfilerCommand(),

		a.tryCommand(), a.pgoCommand(), a.mcpCommand(), a.gateCommand(),
	)
	return root
}

// exactArgs is cobra.ExactArgs with errors marked as usage errors.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// oneLine keeps an error message to a single line.
func oneLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
