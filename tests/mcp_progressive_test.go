package tests

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// searchCatalogMesh hosts the search fixture's tools (the bridged
// server-filesystem and server-memory tools with their own descriptions,
// and the demo tools) on one worker whose handlers echo their args.
func searchCatalogMesh(t *testing.T) *embedded.Server {
	t.Helper()
	b, err := os.ReadFile("../catalog/testdata/search_catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var specs []envelope.ToolSpec
	if err := json.Unmarshal(b, &specs); err != nil {
		t.Fatal(err)
	}
	srv := meshtest.StartServer(t, embedded.Config{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
	for _, s := range specs {
		s.OutputSchema = nil // the echo handler returns the args
		register(t, w, s, echo)
	}
	// Register announces in the background; Announce waits until the
	// registry lists every tool, as `toolmesh worker` does before "ready".
	if err := w.Announce(context.Background()); err != nil {
		t.Fatal(err)
	}
	return srv
}

// A progressive gateway lists the search tool and its pins; a search
// answers with the matching tools' definitions (the ranking
// catalog.Catalog.Search gives), and they join tools/list with list_changed and
// become callable.
func TestMCPGatewayProgressiveDiscovery(t *testing.T) {
	srv := searchCatalogMesh(t)
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	g, err := gateway.New(gateway.Config{Caller: c, Progressive: true, Pinned: []string{"echo"},
		Settle: 20 * time.Millisecond, CatalogWait: 2 * time.Second, Logger: meshtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mc := connectInProcess(t, g, "")
	if names := toolNamesOf(t, mc); !slices.Equal(names, []string{"echo", "search_tools"}) {
		t.Fatalf("tools/list = %v, want the pin and the search tool only", names)
	}
	res, err := mc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "read a file", "limit": 3}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	var found struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		Total int `json:"total"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &found); err != nil {
		t.Fatal(err)
	}
	hits, err := c.Catalog().Search(ctx, "read a file")
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Tools) != 3 || found.Tools[0].Name != "fs.read_file" || hits[0].Tool.Spec.Name != "fs.read_file" || found.Total != len(hits) {
		t.Fatalf("search_tools = %s; catalog.Catalog.Search's first %s of %d", raw, hits[0].Tool.Spec.Name, len(hits))
	}
	if found.Tools[0].Description == "" || !json.Valid(found.Tools[0].InputSchema) || len(found.Tools[0].InputSchema) < 20 {
		t.Fatalf("the hit carries no spec: %s", raw)
	}
	waitListChanged(t, mc, "after a search revealed tools")
	names := toolNamesOf(t, mc)
	for _, tl := range found.Tools {
		if !slices.Contains(names, tl.Name) {
			t.Fatalf("tools/list = %v after the search, missing %s", names, tl.Name)
		}
	}
	if len(names) != 5 {
		t.Fatalf("tools/list = %v, want the pin, the search tool and the 3 found", names)
	}
	call, err := mc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read_file", Arguments: map[string]any{"path": "/x"}})
	if err != nil || call.IsError {
		t.Fatalf("calling the found tool: %v %+v", err, call)
	}
	if _, err := mc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a search without a query must be a JSON-RPC error")
	}
}

// Pins without progressive discovery, or a malformed pin, are refused.
func TestMCPGatewayProgressiveConfig(t *testing.T) {
	for _, cfg := range []gateway.Config{
		{Pinned: []string{"echo"}},
		{Progressive: true, Pinned: []string{"[bad"}},
	} {
		cfg.Caller = &caller.Caller{}
		if _, err := gateway.New(cfg); err == nil {
			t.Fatalf("%+v accepted", cfg)
		} else {
			wantCode(t, err, envelope.CodeInvalidConfig)
		}
	}
}
