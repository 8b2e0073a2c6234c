package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
)

func (a *app) fetchAsyncProfilerCommand() *cobra.Command {
	var from, dir string
	cmd := &cobra.Command{
		Use:   "fetch-async-profiler",
		Short: "Download async-profiler " + jvm.ProfilerVersion + " for collect --jvm, checksum checked",
		Long: `fetch-async-profiler downloads the async-profiler jar perfdoctor pins
(tools.profiler:async-profiler:` + jvm.ProfilerVersion + `) from Maven Central or a mirror, checks its
SHA-256 and unpacks its Linux libraries (x64 and arm64) into perfdoctor's
cache, where collect --jvm looks for them. collect never downloads by itself:
without this step, name the library or the jar with --async-profiler or $` + jvm.ProfilerEnv + `.`,
		Example: `  perfdoctor fetch-async-profiler
  perfdoctor fetch-async-profiler --from https://maven.example.com/repository/central`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			client := &http.Client{Timeout: 2 * time.Minute}
			lib, err := jvm.FetchProfiler(cmd.Context(), client, from, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "async-profiler %s for this machine: %s\n", jvm.ProfilerVersion, lib)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", jvm.MavenCentral, "Maven repository root to download from")
	cmd.Flags().StringVar(&dir, "dir", "", "directory to unpack into (default the cache collect --jvm reads)")
	return cmd
}
