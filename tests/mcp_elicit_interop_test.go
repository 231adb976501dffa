package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// elicitSummary is what elicit.mjs prints.
type elicitSummary struct {
	Asked []struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	} `json:"asked"`
	Result struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Thrown string `json:"thrown"`
}

// runElicitClient runs elicit.mjs (copied next to the installed SDK).
func runElicitClient(t *testing.T, dir string, args ...string) elicitSummary {
	t.Helper()
	src, err := os.ReadFile("testdata/mcp-interop/elicit.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "elicit.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return runNodeScript[elicitSummary](t, dir, "elicit.mjs", args...)
}

// TestMCPInteropElicitation, through the gateway: the official TypeScript
// client's elicitation handler answers `toolmesh dev`'s remove tool, which asks before it
// "deletes", through `toolmesh mcp` over stdio and HTTP; the answer
// reaches the handler. A client that does not declare elicitation gets
// the input_required Problem as an isError result.
func TestMCPInteropElicitation(t *testing.T) {
	dir := interopDir(t) // one npm install for both halves
	t.Run("gateway", func(t *testing.T) { elicitThroughGateway(t, dir) })
	t.Run("bridged", func(t *testing.T) { elicitBridged(t, dir) })
}

func elicitThroughGateway(t *testing.T, dir string) {
	_, url := startDev(t)
	p := startProc(t, "mcp", "--server", url, "--http", "127.0.0.1:0")
	endpoint := p.waitLine(t, regexp.MustCompile(`serving MCP on (http://\S+)`))[1]
	transports := map[string][]string{"stdio": {"stdio", toolmeshBin(t), url}, "http": {"http", endpoint}}
	for name, transport := range transports {
		t.Run(name, func(t *testing.T) {
			call := func(capability string) elicitSummary {
				return runElicitClient(t, dir, append([]string{capability, "remove", `{"path":"/tmp/ts"}`, `{"confirm":true}`}, transport...)...)
			}
			s := call("elicit")
			if s.Thrown != "" || s.Result.IsError || string(s.Result.StructuredContent) != `{"removed":"/tmp/ts"}` {
				t.Fatalf("with elicitation: %+v", s)
			}
			if len(s.Asked) != 1 || !strings.HasPrefix(s.Asked[0].Message, "Delete /tmp/ts?") || s.Asked[0].RequestedSchema["type"] != "object" {
				t.Fatalf("the client was asked %+v", s.Asked)
			}
			s = call("none")
			all := string(s.Result.StructuredContent)
			for _, c := range s.Result.Content {
				all += c.Text
			}
			if !s.Result.IsError || !strings.Contains(all, `"code":"input_required"`) || !strings.Contains(all, "Delete /tmp/ts?") {
				t.Fatalf("without elicitation: %+v, want an input_required isError result", s)
			}
		})
	}
}

// elicitBridged: server-everything, bridged onto the
// mesh, elicits in trigger-elicitation-request. A mesh caller (`toolmesh
// call --answer`) answers it; and end to end, the official TypeScript
// client's elicitation handler answers it through toolmesh mcp → mesh →
// bridge → server-everything and back.
func elicitBridged(t *testing.T, dir string) {
	_, url := startDev(t)
	bridgeEverything(t, dir, url, ", client_capabilities: [elicitation]")
	const tool = "everything.trigger-elicitation-request"
	var r result
	waitFor(t, tool+" on the mesh", func() bool {
		r = runCmd(t, "", "call", tool, "--server", url, "--answer", `{"name":"Ann Mesh","check":true}`)
		return r.code == 0
	})
	if !strings.Contains(r.stdout, "Name: Ann Mesh") || !strings.Contains(r.stdout, "Agreed to terms: true") {
		t.Fatalf("a mesh caller's answer did not reach server-everything: %+v", r)
	}
	r = runCmd(t, "", "call", tool, "--server", url, "--answer", "decline")
	if r.code != 0 || !strings.Contains(r.stdout, "declined") {
		t.Fatalf("a mesh caller's decline: %+v", r)
	}
	p := startProc(t, "mcp", "--server", url, "--http", "127.0.0.1:0")
	endpoint := p.waitLine(t, regexp.MustCompile(`serving MCP on (http://\S+)`))[1]
	for name, transport := range map[string][]string{"stdio": {"stdio", toolmeshBin(t), url}, "http": {"http", endpoint}} {
		t.Run(name, func(t *testing.T) {
			s := runElicitClient(t, dir, append([]string{"elicit", tool, `{}`, `{"name":"Ann TypeScript","check":false}`}, transport...)...)
			var text string
			for _, c := range s.Result.Content {
				text += c.Text
			}
			if s.Thrown != "" || s.Result.IsError || !strings.Contains(text+string(s.Result.StructuredContent), "Name: Ann TypeScript") {
				t.Fatalf("end to end: %+v", s)
			}
			if len(s.Asked) != 1 || s.Asked[0].Message != "Please provide inputs for the following fields:" || s.Asked[0].RequestedSchema["properties"] == nil {
				t.Fatalf("the TypeScript client was asked %+v", s.Asked)
			}
		})
	}
}
