package main

import (
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
)

// taskRules parses the --task flags: "GLOB", "GLOB:required",
// "GLOB:ask-first" or both marks, each a gateway.TaskRule. The tasks
// extension is a 2026-07-28 HTTP one, so --task needs --http.
func (f *mcpFlags) taskRules() error {
	if len(f.tasks) > 0 && f.http == "" {
		return envelope.NewProblem(envelope.CodeInvalidConfig, "--task: MCP tasks are served over HTTP only (2026-07-28); add --http")
	}
	for _, v := range f.tasks {
		parts := strings.Split(v, ":")
		r := gateway.TaskRule{Tools: parts[0]}
		for _, mark := range parts[1:] {
			switch mark {
			case "required":
				r.Required = true
			case "ask-first":
				r.AskFirst = true
			default:
				return envelope.Problemf(envelope.CodeInvalidConfig, "--task %q: unknown mark %q (want required or ask-first)", v, mark)
			}
		}
		f.taskRule = append(f.taskRule, r)
	}
	return nil
}
