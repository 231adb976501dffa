package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// `toolmesh tools export` prints the live catalogue in each provider's
// shape with the name map; a dotted tool name comes back mapped where the
// provider refuses dots and unchanged where it takes them.
func TestCommandToolsExport(t *testing.T) {
	cfg := writeTools(t, `
tools:
  - name: files.search
    description: Search files
    input_schema: {type: object, properties: {pattern: {type: string}}, required: [pattern], additionalProperties: false}
    annotations: {read_only: true}
    binding:
      cli:
        cmd: echo
`)
	_, url := startDev(t, "--config", cfg)
	wantName := map[string]string{"openai": "files_search", "openai-responses": "files_search",
		"anthropic": "files_search", "gemini": "files.search", "mcp": "files.search"}
	for prov, name := range wantName {
		r := runCmd(t, "", "tools", "export", "--provider", prov, "--server", url, "--wait", "2s")
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", prov, r.code, r.stderr)
		}
		var out struct {
			Provider string
			Tools    []json.RawMessage
			Names    map[string]string
			Complete bool
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%s: %v\n%s", prov, err, r.stdout)
		}
		if out.Provider != prov || !out.Complete || out.Names[name] != "files.search" || out.Names["echo"] != "echo" {
			t.Fatalf("%s: provider %q complete %v names %v", prov, out.Provider, out.Complete, out.Names)
		}
		tools := out.Tools
		if prov == "gemini" { // the request's Tool[]: one Tool holding every declaration
			var gemini []struct {
				FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
			}
			if err := json.Unmarshal(mustJSON(out.Tools), &gemini); err != nil || len(gemini) != 1 {
				t.Fatalf("gemini tools: %v, want one Tool:\n%s", err, r.stdout)
			}
			tools = gemini[0].FunctionDeclarations
		}
		if len(tools) != len(out.Names) || !strings.Contains(r.stdout, `"`+name+`"`) {
			t.Fatalf("%s: %d tools for %d names:\n%s", prov, len(tools), len(out.Names), r.stdout)
		}
	}
	r := runCmd(t, "", "tools", "export", "--provider", "cohere", "--server", url, "--format", "json")
	var p envelope.Problem
	if r.code != 2 || json.Unmarshal([]byte(r.stderr), &p) != nil || p.Code != envelope.CodeInvalidInput {
		t.Fatalf("unknown provider: exit %d stderr %s", r.code, r.stderr)
	}
}

// A mesh tool named tool_search collides with the tool search a deferred
// export adds: `tools export --defer` leaves it out (complete:false, a
// note naming it) and says so on stderr; without --defer it is exported.
func TestCommandToolsExportSkipsTheSearchToolsNamesake(t *testing.T) {
	cfg := writeTools(t, `
tools:
  - name: tool_search
    description: A mesh tool that happens to share the tool search's name
    binding: {cli: {cmd: echo}}
`)
	_, url := startDev(t, "--config", cfg)
	for _, tc := range []struct {
		args     []string
		exported bool
	}{
		{[]string{"--provider", "anthropic", "--defer"}, false},
		{[]string{"--provider", "openai-responses", "--defer"}, false},
		{[]string{"--provider", "anthropic"}, true},
	} {
		r := runCmd(t, "", append([]string{"tools", "export", "--server", url, "--wait", "2s"}, tc.args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, r.code, r.stderr)
		}
		var out struct {
			Names    map[string]string
			Complete bool
			Notes    []struct{ Tool, Message string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, r.stdout)
		}
		_, exported := out.Names["tool_search"]
		warned := strings.Contains(r.stderr, "warning: tool tool_search not exported")
		if exported != tc.exported || warned == tc.exported || out.Complete != tc.exported || out.Names["echo"] != "echo" {
			t.Fatalf("%v: tool_search exported %v (want %v), warned %v, complete %v, names %v\nstderr: %s",
				tc.args, exported, tc.exported, warned, out.Complete, out.Names, r.stderr)
		}
	}
}
