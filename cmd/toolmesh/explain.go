package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/docs/problems"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
)

func newExplainCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "explain CODE|TYPE-URI",
		Short: "Print the reference page of a problem: what it means, and what an agent and a human should do",
		Long: `Print the reference page of a problem code (invalid_input), its slug (invalid-input) or
its type URI (https://toolmesh.dev/problems/invalid-input/v1, under any base). The pages
are built into the binary; they are the same pages the type URIs dereference to.`,
		Args: usage.OneArg("problem code or type URI", "Run `toolmesh explain timeout`, or pass a Problem's type URI."),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return codeNames(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := lookupProblem(args[0])
			if err != nil {
				return err
			}
			page, ok := problems.Page(info.Slug)
			if !ok {
				return envelope.Problemf(envelope.CodeInternal, "code %s has no reference page built in", info.Code)
			}
			fmt.Fprint(g.stdout, page)
			return nil
		},
	}
}

// lookupProblem finds the registry entry of a code, slug or type URI.
func lookupProblem(arg string) (codes.Info, error) {
	key := arg
	if u, err := url.Parse(arg); err == nil && u.Scheme != "" {
		segs := strings.Split(strings.Trim(u.Path, "/"), "/")
		key = ""
		if len(segs) >= 2 {
			key = segs[len(segs)-2]
			if info, ok := codes.Lookup(codeOfSlug(key)); !ok || info.Version != segs[len(segs)-1] {
				key = ""
			}
		}
	}
	if info, ok := codes.Lookup(codeOfSlug(key)); ok {
		return info, nil
	}
	return codes.Info{}, envelope.Problemf(envelope.CodeInvalidInput, "%q is not a problem code or type URI of this toolmesh; a tool's own domain code is explained by the tool (its Problem type is tool-failed)", arg).
		WithFix("Run `toolmesh explain` with one of: "+strings.Join(codeNames(), ", ")+".", envelope.MaybeIncorrect)
}

// codeOfSlug accepts a code (invalid_input) or its slug (invalid-input).
func codeOfSlug(s string) envelope.Code { return envelope.Code(strings.ReplaceAll(s, "-", "_")) }

func codeNames() []string {
	var out []string
	for _, c := range codes.All() {
		out = append(out, string(c))
	}
	return out
}
