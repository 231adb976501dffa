package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"elicit.mjs"}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node elicit.mjs %v: %v\n%s", args, err, stderr.String())
	}
	var s elicitSummary
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("elicit.mjs output %q: %v", out, err)
	}
	return s
}

// TestMCPInteropElicitation: the official TypeScript client's elicitation
// handler answers `toolmesh dev`'s remove tool, which asks before it
// "deletes", through `toolmesh mcp` over stdio and HTTP; the answer
// reaches the handler. A client that does not declare elicitation gets
// the input_required Problem as an isError result.
func TestMCPInteropElicitation(t *testing.T) {
	dir := interopDir(t)
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
