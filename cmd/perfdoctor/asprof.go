package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
)

func (a *app) fetchAsyncProfilerCommand() *cobra.Command {
	var opt jvm.FetchOptions
	cmd := &cobra.Command{
		Use:   "fetch-async-profiler",
		Short: "Fetch async-profiler " + jvm.ProfilerVersion + " for collect --jvm through Maven, checksum checked",
		Long: `fetch-async-profiler gets the async-profiler jar perfdoctor pins
(` + jvm.ProfilerArtifact + `) through Maven's own client (mvn), which
resolves it through the repositories, mirrors and proxies of your
settings.xml and checks the repository's checksums. --from takes the jar
instead: a file, the jar's URL, or a Maven repository's root URL. Either
way the jar's SHA-256 is checked against the pinned one before its Linux
libraries (x64 and arm64) are unpacked into perfdoctor's cache, where
collect --jvm looks for them. collect never downloads by itself: without
this step, name the library or the jar with --async-profiler or $` + jvm.ProfilerEnv + `.`,
		Example: `  perfdoctor fetch-async-profiler
  perfdoctor fetch-async-profiler --maven-settings ./ci-settings.xml
  perfdoctor fetch-async-profiler --from ./async-profiler-` + jvm.ProfilerVersion + `.jar
  perfdoctor fetch-async-profiler --from https://repo.example.com/maven2`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt.Client = &http.Client{Timeout: 2 * time.Minute}
			opt.Logger = a.log
			lib, err := jvm.FetchProfiler(cmd.Context(), opt)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "async-profiler %s for this machine: %s\n", jvm.ProfilerVersion, lib)
			return nil
		},
	}
	cmd.Flags().StringVar(&opt.From, "from", "", "the jar: a file, its URL, or a Maven repository's root URL (default: through mvn and your settings.xml)")
	cmd.Flags().StringVar(&opt.MavenSettings, "maven-settings", "", "settings.xml for mvn (default Maven's own, ~/.m2/settings.xml)")
	cmd.Flags().StringVar(&opt.Maven, "mvn", "", "the mvn executable (default mvn in PATH)")
	cmd.Flags().StringVar(&opt.Dir, "dir", "", "directory to unpack into (default the cache collect --jvm reads)")
	return cmd
}
