package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
)

// newToolsExportCmd is `toolmesh tools export --provider P`: the live
// catalogue lowered into one provider's tool declarations, with the name
// map that turns the model's calls back into mesh tools.
func newToolsExportCmd(g *globals) *cobra.Command {
	var prov, model string
	var wait time.Duration
	var deferred bool
	cmd := usage.Command("export --provider openai|openai-responses|anthropic|gemini|mcp", "Print the mesh's tools in a model provider's (or MCP's) shape, with the name map",
		func(cmd *cobra.Command) error {
			p, err := parseProvider(prov)
			if err != nil {
				return envelope.NewProblem(envelope.CodeInvalidInput, "--provider: "+err.Error()).
					WithFix("Pass --provider openai, openai-responses, anthropic, gemini or mcp", envelope.HasPlaceholders)
			}
			cat, err := g.catalog(cmd, wait)
			if err != nil {
				return err
			}
			specs := make([]envelope.ToolSpec, 0, len(cat.Tools))
			for _, t := range cat.Tools {
				specs = append(specs, t.Spec)
			}
			ts, err := provider.Export(specs, provider.ExportOptions{Provider: p, Model: model, Defer: deferred})
			if err != nil {
				return envelope.NewProblem(envelope.CodeInvalidInput, err.Error())
			}
			if !cat.Complete {
				ts.Complete = false
				for _, w := range cat.ScopeWarnings {
					ts.Notes = append(ts.Notes, provider.Note{Message: "catalogue incomplete: " + w})
				}
			}
			b, err := json.MarshalIndent(ts, "", "  ")
			if err != nil {
				return envelope.AsProblem(err, envelope.CodeInternal)
			}
			fmt.Fprintf(g.stdout, "%s\n", b)
			warnGaps(g, ts)
			if cat.Workers == 0 {
				fmt.Fprintf(g.stderr, "no worker answered within %s\n", wait)
			}
			return nil
		})
	cmd.Flags().StringVar(&prov, "provider", "", "openai, openai-responses, anthropic, gemini or mcp (required)")
	cmd.Flags().StringVar(&model, "model", "", "model name, to pick the capability row (e.g. gpt-3.5-turbo gets JSON mode for response formats)")
	cmd.Flags().BoolVar(&deferred, "defer", false, "mark every tool for deferred loading with a client-run tool search (openai-responses: namespaces from dotted names; anthropic: defer_loading); caller.Dispatch answers the searches")
	cmd.Flags().DurationVar(&wait, "wait", 0, catalogWaitHelp)
	return cmd
}

// warnGaps says on stderr which tools the export left out (each is also a
// note in the output), so a tool missing from a model's view is never a
// surprise: an invalid spec, or a tool named like the deferred export's
// tool search.
func warnGaps(g *globals, ts *provider.Toolset) {
	for _, n := range ts.Notes {
		if n.Tool != "" && strings.HasPrefix(n.Message, "not exported") {
			fmt.Fprintf(g.stderr, "warning: tool %s %s\n", n.Tool, n.Message)
		}
	}
}

// parseProvider reads a provider name as the command line spells it.
func parseProvider(s string) (provider.Provider, error) {
	all := []provider.Provider{provider.OpenAI, provider.OpenAIResponses, provider.Anthropic, provider.Gemini, provider.MCP}
	names := make([]string, 0, len(all))
	for _, p := range all {
		if string(p) == s {
			return p, nil
		}
		names = append(names, string(p))
	}
	return "", fmt.Errorf("unknown provider %q (want %s)", s, strings.Join(names, ", "))
}
