package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/envelope"
)

// The registry's default fix for invalid_input points at the violations a
// schema check attaches. A usage error of the command has none, so it must
// never keep that fix: these helpers give each usage failure its own.

// toolNameFix is the fix of a malformed tool name.
const toolNameFix = "Tool names are dot-separated segments of letters, digits, _ and - (e.g. fs.read); list the mesh's tools with `toolmesh tools list`."

// checkToolName refuses a malformed tool name before any connection is made.
func checkToolName(name string) error {
	if err := envelope.ValidateToolName(name); err != nil {
		return envelope.NewProblem(envelope.CodeInvalidInput, err.Error()).WithFix(toolNameFix, envelope.MaybeIncorrect)
	}
	return nil
}

// fitFix replaces the schema-violations fix on a usage Problem that has no
// violations (a safety net for failures without a fix of their own).
func fitFix(p *envelope.Problem, cmd *cobra.Command) *envelope.Problem {
	if p.Code != envelope.CodeInvalidInput || p.SuggestedFix == nil {
		return p
	}
	if _, has := p.Extensions["violations"]; has || !strings.Contains(p.SuggestedFix.Description, "violations") {
		return p
	}
	path := "toolmesh"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	return p.WithFix(fmt.Sprintf("See `%s --help` for the usage.", path), envelope.MaybeIncorrect)
}
