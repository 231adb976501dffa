package gateway

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
)

func TestFilter(t *testing.T) {
	f, err := newFilter([]string{"fs.*", " git.status "}, []string{"fs.delete"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want bool
	}{
		{"fs.read", true}, {"fs.delete", false}, {"git.status", true}, {"git.push", false}, {"echo", false},
	}
	for _, c := range cases {
		if got := f.allows(c.name); got != c.want {
			t.Errorf("allows(%q) = %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := newFilter([]string{"fs.[" /* bad glob */}, nil); err == nil {
		t.Fatal("a malformed pattern must be refused")
	}
	ns, _ := newFilter([]string{"fs.*", "git.*"}, []string{"fs.delete"})
	ns.namespace = "fs."
	for name, want := range map[string]bool{"fs.read": true, "fs.delete": false, "git.status": false, "fs": false, "fsx.read": false} {
		if got := ns.allows(name); got != want {
			t.Errorf("namespace fs: allows(%q) = %v, want %v", name, got, want)
		}
	}
	open, _ := newFilter(nil, []string{"x"})
	if !open.allows("anything") || open.allows("x") {
		t.Fatal("an empty allow list serves everything not denied")
	}
}

func TestProblemLine(t *testing.T) {
	cases := []struct {
		p    *envelope.Problem
		want []string
	}{
		{envelope.NewProblem(envelope.CodeInvalidInput, "bad\npath"), []string{"invalid_input: bad path", "Fix:", "do not retry"}},
		{envelope.NewProblem(envelope.CodeWorkerLost, "gone"), []string{"worker_lost: gone", "Retry after 1s."}},
	}
	for _, c := range cases {
		line := problemLine(c.p)
		for _, w := range c.want {
			if !strings.Contains(line, w) || strings.Contains(line, "\n") {
				t.Errorf("problemLine = %q, want it to contain %q on one line", line, w)
			}
		}
	}
}

func TestOriginAllowed(t *testing.T) {
	cases := []struct {
		origin string
		want   bool
	}{
		{"", true}, {"http://localhost:5173", true}, {"http://127.0.0.1", true}, {"http://[::1]:8080", true},
		{"https://app.example.com", true}, {"https://evil.example", false}, {"null", false}, {"file://x", false},
	}
	for _, c := range cases {
		if got := originAllowed(c.origin, []string{"https://app.example.com/"}); got != c.want {
			t.Errorf("originAllowed(%q) = %v, want %v", c.origin, got, c.want)
		}
	}
}

// TestListedPageServesTheServersOwnList: a bridged server's tools are
// listed in the server's order and as the server defined them (execution
// kept, an unset hint left unset, the served name in place of the
// server's), before the namespace's other tools; a tool whose
// workers disagree is listed as the SDK writes it.
func TestListedPageServesTheServersOwnList(t *testing.T) {
	g := &Gateway{served: map[string]servedTool{}}
	g.filter.namespace = "fs."
	def := func(name string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","inputSchema":{"type":"object"},"annotations":{"destructiveHint":false},"execution":{"taskSupport":"forbidden"}}`)
	}
	bridged := func(name string, pos int, conflict bool) catalog.Tool {
		ct := catalog.Tool{Spec: envelope.ToolSpec{Name: "fs." + name, MCP: &envelope.MCPTool{Definition: def(name), Position: pos}}}
		if conflict {
			ct.Conflicts = []catalog.Variant{{Workers: []string{"w2"}}}
		}
		return ct
	}
	tools := map[string]catalog.Tool{
		"write": bridged("write", 0, false), "read": bridged("read", 1, false), "move": bridged("move", 2, true),
		"a_local": {Spec: envelope.ToolSpec{Name: "fs.a_local"}},
	}
	lr := &mcp.ListToolsResult{}
	for name, ct := range tools {
		g.served[name] = servedTool{mesh: ct.Spec.Name, list: g.listingOf(name, ct)}
		lr.Tools = append(lr.Tools, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{}})
	}
	b, err := json.Marshal(g.listedPage(lr, true))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range got.Tools {
		names = append(names, tool["name"].(string))
	}
	if want := []string{"write", "read", "move", "a_local"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list order = %v, want %v (%s)", names, want, b)
	}
	w := got.Tools[0]
	ann, _ := w["annotations"].(map[string]any)
	if w["execution"] == nil || ann == nil || ann["readOnlyHint"] != nil || ann["destructiveHint"] != false {
		t.Errorf("write listed as %v, want the server's definition: execution kept, readOnlyHint unset", w)
	}
	if m := got.Tools[2]; m["execution"] != nil {
		t.Errorf("a conflicting tool listed as %v, want the SDK's encoding", m)
	}
}
