package usage

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/envelope"
)

// NoArgs refuses positional arguments with a usage Problem; it is a
// cobra.PositionalArgs.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return envelope.Problemf(envelope.CodeInvalidInput, "%s takes no arguments, got %q", cmd.CommandPath(), args).
			WithFix(fmt.Sprintf("See `%s --help`.", cmd.CommandPath()), envelope.MaybeIncorrect)
	}
	return nil
}

// OneArg refuses any number of positional arguments but one, naming
// what that one is (a "tool name"), with fix as the Problem's fix (it may
// hold placeholders; "" points at the command's --help). It is a
// cobra.PositionalArgs.
func OneArg(what, fix string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			return nil
		}
		p := envelope.Problemf(envelope.CodeInvalidInput, "%s takes exactly one %s, got %d arguments", cmd.CommandPath(), what, len(args))
		if fix == "" {
			return p.WithFix(fmt.Sprintf("See `%s --help`.", cmd.CommandPath()), envelope.MaybeIncorrect)
		}
		return p.WithFix(fix, envelope.HasPlaceholders)
	}
}

// FlagValueProblem reports a flag value outside its allowed set.
func FlagValueProblem(flag, got string, allowed ...string) *envelope.Problem {
	return envelope.Problemf(envelope.CodeInvalidInput, "--%s: want %s, got %q", flag, strings.Join(allowed, ", "), got).
		WithFix(fmt.Sprintf("Pass --%s %s (or leave it out for the default).", flag, strings.Join(allowed, "|")), envelope.HasPlaceholders)
}

// Command is a command that takes no positional arguments, refusing them
// with NoArgs's Problem, and runs run: how most toolmesh commands are set
// up. A command that needs more (a Long help text) sets it on the result.
func Command(use, short string, run func(cmd *cobra.Command) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd) }}
}
