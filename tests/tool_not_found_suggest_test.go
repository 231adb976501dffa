package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
)

// `toolmesh call` of a mistyped name ends tool_not_found and says which
// tool was likely meant, in the detail and as the suggested fix.
func TestCommandCallSuggestsNearestTool(t *testing.T) {
	_, url := startDev(t)
	r := runCmd(t, "", "call", "ecoh", "--server", url, "--args", `{"message":"hi"}`)
	info, _ := codes.Lookup(envelope.CodeToolNotFound)
	var p envelope.Problem
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &p); err != nil || r.code != info.ExitCode {
		t.Fatalf("call ecoh: exit %d, stderr %q", r.code, r.stderr)
	}
	if p.Code != envelope.CodeToolNotFound || !strings.Contains(p.Detail, `did you mean "echo"?`) ||
		p.SuggestedFix == nil || !strings.Contains(p.SuggestedFix.Description, "echo") {
		t.Fatalf("call ecoh: %+v (fix %+v), want tool_not_found suggesting echo", p, p.SuggestedFix)
	}
	if pretty := runCmd(t, "", "call", "ecoh", "--server", url, "--format", "pretty"); !strings.Contains(pretty.stderr, "echo") {
		t.Fatalf("pretty: %q", pretty.stderr)
	}
}
