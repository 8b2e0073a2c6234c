package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/report/web"
)

func (a *app) viewCommand() *cobra.Command {
	var addr string
	var allowRemote bool
	cmd := &cobra.Command{
		Use:   "view PATH...",
		Short: "Serve the HTML report and pprof's web UI for every profile on a local web server",
		Long: `View diagnoses PATH (a bundle, a directory or profile files, as diagnose
reads them) and serves, on a local web server, the HTML report and, for
each profile, the full pprof web UI (graph, flame graph, top, source, peek,
disassembly) under /pprof/<kind>/. It prints the URL and runs until Ctrl-C.

The server listens on 127.0.0.1 and answers only requests addressed to a
loopback name. Serving other machines needs --allow-remote: anyone who can
reach the address can then read the profiles and the source they point at.`,
		Example: `  perfdoctor view ./b1
  perfdoctor view cpu.pb.gz --http 127.0.0.1:8080`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("view needs at least one PATH (a bundle directory or profile files)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			loopback, err := web.CheckListenAddr(addr, allowRemote)
			if err != nil {
				return usageError{err}
			}
			rep, err := diagnose.Run(cmd.Context(), a.diagnoseRequest(args...))
			if err != nil {
				return err
			}
			h, err := web.NewHandler(rep, a.log, loopback)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("view: %w", err)
			}
			return web.Serve(cmd.Context(), ln, h, a.stdout, rep)
		},
	}
	cmd.Flags().StringVar(&addr, "http", "127.0.0.1:0", "address to listen on, host:port (port 0 picks a free one)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow a non-loopback --http address (exposes the profiles to the network)")
	return cmd
}
