package main

import (
	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/internal/mcpserver"
)

func (a *app) mcpCommand() *cobra.Command {
	var roots, targets []string
	cmd := &cobra.Command{
		Use:   "mcp --allow DIR [--allow DIR...]",
		Short: "Serve perfdoctor's tools to a coding agent over the Model Context Protocol (stdio)",
		Long: `Mcp serves perfdoctor to an AI coding agent as a Model Context Protocol server
on stdin and stdout: diagnose, collect, run, top, callers, callees, source,
diff, verify and explain, each with a JSON schema and an answer bounded to a
few KB of JSON (a cursor pages the rest). The agent's client starts it; see
docs/mcp.md for the configuration of common agents.

Every path a tool reads or writes must lie in a folder given with --allow
(the current directory when none is given); bundles collected go into the
first. Live targets (collect, run, verify) must be on loopback unless
--allow-target names them.`,
		Example: `  perfdoctor mcp --allow ~/bundles --allow ~/src/myservice
  perfdoctor mcp --allow . --allow-target 10.0.0.5:6060`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(roots) == 0 {
				roots = []string{"."}
			}
			return mcpserver.Run(cmd.Context(), mcpserver.Options{Roots: roots, Targets: targets, Tool: a.tool(), Logger: a.log})
		},
	}
	cmd.Flags().StringArrayVar(&roots, "allow", nil, "a folder tools may read and write (repeatable; default the current directory)")
	cmd.Flags().StringArrayVar(&targets, "allow-target", nil, "a HOST:PORT (or HOST) beyond loopback that collect, run and verify may reach (repeatable)")
	return cmd
}
