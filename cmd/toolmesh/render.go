package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
)

// OutputFormat selects how the command renders a Problem on stderr.
type OutputFormat string

// The two renderings of one Problem.
const (
	FormatPretty OutputFormat = "pretty"
	FormatJSON   OutputFormat = "json"
)

// SelectFormat implements the dual renderer's rule: an explicit flag value
// wins; otherwise pretty when stderr is a terminal and JSON when it is not.
// An unknown flag value is an error.
func SelectFormat(flag string, stderrIsTTY bool) (OutputFormat, error) {
	switch OutputFormat(flag) {
	case FormatJSON, FormatPretty:
		return OutputFormat(flag), nil
	case "":
		if stderrIsTTY {
			return FormatPretty, nil
		}
		return FormatJSON, nil
	}
	return "", fmt.Errorf("--format: want json or pretty, got %q", flag)
}

// renderProblem returns p in format f: the pretty lines, or one compact
// application/problem+json line.
func renderProblem(p *envelope.Problem, f OutputFormat) []byte {
	if f == FormatPretty {
		return append([]byte(prettyProblem(p)), prettyStderrTail(p)...)
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Only an extension that cannot be encoded gets here: drop them rather than lose the problem.
		q := *p
		q.Extensions = nil
		b, _ = json.Marshal(&q)
	}
	return append(b, '\n')
}

// prettyProblem renders the human form: one "Error: <detail>" line, then
// the suggested fix on a second line when there is one.
func prettyProblem(p *envelope.Problem) string {
	var b strings.Builder
	b.WriteString("Error: ")
	b.WriteString(p.Error())
	if p.SuggestedFix != nil && p.SuggestedFix.Description != "" {
		b.WriteString("\n  fix: ")
		b.WriteString(p.SuggestedFix.Description)
	}
	b.WriteByte('\n')
	return b.String()
}

// prettyStderrTail shows a failed program's stderr tail (the extension
// stderr_tail, which the Problem's fix tells the reader to check), each
// line indented under a heading; nothing when there is none.
func prettyStderrTail(p *envelope.Problem) []byte {
	tail, _ := p.Extensions["stderr_tail"].(string)
	tail = strings.TrimRight(tail, "\n")
	if strings.TrimSpace(tail) == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("  stderr (tail):\n")
	for _, line := range strings.Split(tail, "\n") {
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
