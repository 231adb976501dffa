package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/toolsearch"
)

func newToolsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "List and describe the mesh's tools"}
	cmd.AddCommand(newToolsListCmd(g), newToolsSearchCmd(g), newToolsDescribeCmd(g), newToolsExportCmd(g), newToolsLintCmd(g))
	return cmd
}

func newToolsListCmd(g *globals) *cobra.Command {
	var asJSON bool
	var wait time.Duration
	list := usage.Command("list", "List every tool the mesh's workers host",
		func(cmd *cobra.Command) error {
			cat, err := g.catalog(cmd, wait)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, cat)
			}
			printCatalog(g, cat, wait)
			return nil
		})
	list.Flags().BoolVar(&asJSON, "json", false, "print the catalogue as JSON")
	list.Flags().DurationVar(&wait, "wait", 0, catalogWaitHelp)
	return list
}

func newToolsSearchCmd(g *globals) *cobra.Command {
	var asJSON bool
	var limit int
	search := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Rank the mesh's tools by how well their names, titles, descriptions and argument names match QUERY",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return envelope.Problemf(envelope.CodeInvalidInput, "search needs a query, such as: toolmesh tools search read a file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := g.catalog(cmd, 0)
			if err != nil {
				return err
			}
			hits := toolsearch.New(cat.Tools, toolSpec).Search(strings.Join(args, " "))
			if limit > 0 && len(hits) > limit {
				hits = hits[:limit]
			}
			if asJSON {
				return printJSON(g, hits)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCORE\tDESCRIPTION")
			for _, h := range hits {
				fmt.Fprintf(tw, "%s\t%.2f\t%s\n", h.Tool.Spec.Name, h.Score, clipLine(h.Tool.Spec.Description, 70))
			}
			_ = tw.Flush()
			for _, w := range cat.ScopeWarnings {
				fmt.Fprintf(g.stderr, "incomplete: %s\n", w)
			}
			return nil
		},
	}
	search.Flags().BoolVar(&asJSON, "json", false, "print the hits as JSON")
	search.Flags().IntVar(&limit, "limit", 10, "at most this many hits (0: all)")
	return search
}

// clipLine is s up to its first newline, cut to n runes.
func clipLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// printJSON prints v as one line of JSON on stdout.
func printJSON(g *globals, v any) error {
	b, _ := json.Marshal(v)
	fmt.Fprintf(g.stdout, "%s\n", b)
	return nil
}

// printCatalog prints the catalogue as a table, and what it lacks on stderr.
func printCatalog(g *globals, cat catalog.Listing, wait time.Duration) {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTITLE\tINSTANCES\tSTREAMING\tANNOTATIONS")
	for _, t := range cat.Tools {
		instances := strconv.Itoa(t.Instances)
		if len(t.Conflicts) > 0 {
			instances += fmt.Sprintf(" (CONFLICT: %d specs)", len(t.Conflicts)+1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", t.Spec.Name, t.Spec.Title, instances, t.Spec.Streaming, annotationText(t.Spec.Annotations))
	}
	_ = tw.Flush()
	for _, t := range cat.Tools {
		for _, v := range t.Conflicts {
			fmt.Fprintf(g.stderr, "conflict: tool %s: workers %s give another spec than the one listed (description %q); `toolmesh tools list --json` shows both\n",
				t.Spec.Name, strings.Join(v.Workers, ", "), v.Spec.Description)
		}
	}
	if cat.Workers == 0 {
		fmt.Fprintf(g.stderr, "no worker found (wait %s)\n", wait)
	}
	for _, w := range cat.ScopeWarnings {
		fmt.Fprintf(g.stderr, "incomplete: %s\n", w)
	}
}

func newToolsDescribeCmd(g *globals) *cobra.Command {
	var asJSON bool
	describe := &cobra.Command{
		Use:   "describe TOOL",
		Short: "Show a tool's full spec, schemas included",
		Args:  usage.OneArg("tool name", ""),
		RunE: g.withCaller("tools", func(cmd *cobra.Command, c *caller.Caller, args []string) error {
			spec, err := c.Catalog().Describe(cmd.Context(), args[0])
			if err != nil && !isConflict(err) {
				return envelope.AsProblem(err, envelope.CodeInternal)
			}
			// A conflict still has a spec to show, the one most workers
			// give; the Problem naming every spec follows on stderr and
			// sets the exit code, so a script cannot miss it.
			if asJSON {
				if perr := printJSON(g, spec); perr != nil {
					return perr
				}
			} else {
				printSpec(g, spec)
			}
			if err != nil {
				return envelope.AsProblem(err, envelope.CodeInternal)
			}
			return nil
		}),
	}
	describe.Flags().BoolVar(&asJSON, "json", false, "print the spec as JSON")
	return describe
}

// isConflict reports whether err is Describe's tool_conflict, which comes
// with the majority spec rather than instead of one.
func isConflict(err error) bool {
	var p *envelope.Problem
	return errors.As(err, &p) && p.Code == envelope.CodeToolConflict
}

// printSpec prints a spec for people, schemas indented.
func printSpec(g *globals, spec envelope.ToolSpec) {
	fmt.Fprintf(g.stdout, "name:        %s\n", spec.Name)
	for _, kv := range [][2]string{{"title", spec.Title}, {"version", spec.Version}, {"description", spec.Description}} {
		if kv[1] != "" {
			fmt.Fprintf(g.stdout, "%-12s %s\n", kv[0]+":", kv[1])
		}
	}
	fmt.Fprintf(g.stdout, "streaming:   %v\nannotations: %s\n", spec.Streaming, annotationText(spec.Annotations))
	fmt.Fprintf(g.stdout, "sandbox:     %s\n", sandboxText(spec.Sandbox))
	for _, s := range []struct {
		name string
		raw  json.RawMessage
	}{{"input_schema", spec.InputSchema}, {"output_schema", spec.OutputSchema}} {
		if len(s.raw) > 0 {
			b, _ := json.MarshalIndent(s.raw, "  ", "  ")
			fmt.Fprintf(g.stdout, "%s:\n  %s\n", s.name, b)
		}
	}
}

func annotationText(a *envelope.Annotations) string {
	var parts []string
	if a.IsReadOnly() {
		parts = append(parts, "read-only")
	} else if a.IsDestructive() {
		parts = append(parts, "destructive")
	}
	if a.IsIdempotent() {
		parts = append(parts, "idempotent")
	}
	if !a.IsOpenWorld() {
		parts = append(parts, "closed-world")
	}
	return strings.Join(parts, ",")
}

// newCaller dials and makes a caller; done closes both.
func (g *globals) newCaller(cmd *cobra.Command, name string) (*caller.Caller, func(), error) {
	nc, err := g.dial(cmd.Context(), name)
	if err != nil {
		return nil, nil, err
	}
	c, err := caller.New(nc, caller.Config{Prefix: g.prefix, Logger: g.log})
	if err != nil {
		nc.Close()
		// A Problem keeps its code (a refused inbox is forbidden).
		return nil, nil, envelope.AsProblem(err, envelope.CodeConnectionLost)
	}
	return c, func() { _ = c.Close(); nc.Close() }, nil
}

// catalogWaitHelp describes the --wait flag of the commands that list the
// catalogue (catalog.Catalog.List's wait).
const catalogWaitHelp = "bound on reading the catalogue (0: 3s): the worker registry is read in one pass, ending as soon as it is done; without JetStream, answers are gathered for the whole wait"

// catalog dials, gathers the mesh's catalogue for at most wait, and hangs
// up: what `tools list` and `tools export` both show.
func (g *globals) catalog(cmd *cobra.Command, wait time.Duration) (catalog.Listing, error) {
	c, done, err := g.newCaller(cmd, "tools")
	if err != nil {
		return catalog.Listing{}, err
	}
	defer done()
	cat, err := c.Catalog().List(cmd.Context(), wait)
	if err != nil {
		return catalog.Listing{}, envelope.AsProblem(err, envelope.CodeInternal)
	}
	return cat, nil
}

// withCaller adapts run to a cobra RunE that dials the mesh as name and
// makes a caller first, closing both when run returns.
func (g *globals) withCaller(name string, run func(cmd *cobra.Command, c *caller.Caller, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, done, err := g.newCaller(cmd, name)
		if err != nil {
			return err
		}
		defer done()
		return run(cmd, c, args)
	}
}

// toolSpec is a catalogue tool's spec, as package toolsearch reads it.
func toolSpec(t *catalog.Tool) *envelope.ToolSpec { return &t.Spec }
