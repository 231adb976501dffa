package main

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/caller"
)

// addCompletions teaches shell completion the values it can know: tool
// names from the mesh for `call` and `tools describe`, and the fixed values of --format and
// --log-level. Completion never fails loudly: no mesh means no names.
func addCompletions(g *globals, root *cobra.Command) {
	fixed := func(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = root.RegisterFlagCompletionFunc("format", fixed(string(FormatJSON), string(FormatPretty)))
	_ = root.RegisterFlagCompletionFunc("log-level", fixed("debug", "info", "warn", "error"))
	for _, path := range [][]string{{"call"}, {"tools", "describe"}} {
		if c, _, err := root.Find(path); err == nil && c.Name() == path[len(path)-1] {
			c.ValidArgsFunction = g.completeToolNames
		}
	}
}

// completeToolNames lists the tools the mesh offers (with their
// descriptions, for shells that show them) that start with toComplete.
func (g *globals) completeToolNames(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := g.dial(ctx, "complete")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	defer nc.Close()
	c, err := caller.New(nc, caller.Config{Prefix: g.prefix})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	defer c.Close()
	cat, err := c.Catalog().List(ctx, 0)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var out []string
	for _, t := range cat.Tools {
		if !strings.HasPrefix(t.Spec.Name, toComplete) {
			continue
		}
		entry := t.Spec.Name
		if d := firstLine(t.Spec.Description); d != "" {
			entry += "\t" + d
		}
		out = append(out, entry)
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
