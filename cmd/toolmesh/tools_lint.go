package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/worker/cli"
)

func newToolsLintCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "lint TOOLS.yaml",
		Short: "Check a tools file without running it: load errors, unconfined tools, caller values in option positions",
		Args:  usage.OneArg("tools file", ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			warnings, err := lintFile(args[0])
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintf(g.stdout, "warning: %s\n", w)
			}
			fmt.Fprintf(g.stdout, "%s: %d warnings\n", args[0], len(warnings))
			return nil
		},
	}
}

// lintFile loads a tools file as a worker would (CLI tools and MCP
// servers) and returns its warnings; a load error is the error.
func lintFile(path string) ([]string, error) {
	f, err := cli.LoadFile(path)
	if err != nil {
		return nil, err
	}
	entries, err := bridge.LoadFile(path)
	if err != nil {
		return nil, err
	}
	warnings := cli.Lint(f)
	for _, e := range entries {
		if e.Sandbox == nil && e.Server.Command != "" {
			warnings = append(warnings, fmt.Sprintf("mcp namespace %s: no sandbox: the server runs with the worker's own rights; give it a sandbox block", e.Namespace))
		}
	}
	return warnings, nil
}

// sandboxText is a spec's sandbox summary in one line.
func sandboxText(s *envelope.SandboxSummary) string {
	switch {
	case s == nil:
		return "not stated (a Go handler, or a worker that does not say)"
	case !s.Confined:
		return "none: the program runs with the worker's own rights"
	}
	parts := []string{fmt.Sprintf("confined; reads %d paths, writes %d; network %s", s.ReadPaths, s.WritePaths, s.Network)}
	l := s.Limits
	for _, kv := range []struct {
		name string
		v    int
	}{{"cpu_seconds", l.CPUSeconds}, {"memory_mb", l.MemoryMB}, {"files", l.Files}, {"processes", l.Processes}} {
		if kv.v > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", kv.name, kv.v))
		}
	}
	if len(parts) == 1 {
		parts = append(parts, "no resource limits")
	}
	return strings.Join(parts, "; ")
}
